package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"path"
	"regexp"
	"strings"

	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// pathGlob is a path glob of docs/design/checks.md#policy-precedence compiled
// to an anchored RE2 regexp over a normalised path (see normPath).
type pathGlob struct {
	src string
	re  *regexp.Regexp
	// base marks a relative glob of one component ("*.pem"): it matches
	// any path whose last component matches, so re is compiled for that
	// component alone and nothing has to scan the directories.
	base bool
}

// compilePathGlob compiles a path glob: `*` is any run of non-`/`
// characters, `?` one non-`/` character, `[...]` a character class
// (`[!...]` or `[^...]` negates), `{a,b}` literal alternatives, and a `**`
// component zero or more whole components. A glob without a leading `/`
// matches as `**/<glob>`. There is no escape character: `[*]` matches a
// literal `*`.
func compilePathGlob(src string, fold, windows bool) (*pathGlob, error) {
	g := src
	if g == "" {
		return nil, errors.New("empty glob")
	}
	if strings.ContainsRune(g, '\\') {
		// path.Match treats "\" as an escape and Windows as a separator;
		// accepting either would make the same rule mean two things.
		return nil, fmt.Errorf("glob %q: backslashes are not allowed (use / as the separator and [*] for a literal *)", src)
	}
	if windows && hasDrive(g) {
		g = "/" + g
	}
	if fold {
		g = asciiLower(g)
	}
	abs := strings.HasPrefix(g, "/")
	g = strings.TrimPrefix(g, "/")
	if !abs && g != "**" && !strings.Contains(g, "/") {
		if strings.Contains(g, "**") {
			return nil, fmt.Errorf("glob %q: ** must be a whole path component", src)
		}
		if g == "." || g == ".." {
			return nil, fmt.Errorf("glob %q: %q components never match a resolved path", src, g)
		}
		var b strings.Builder
		b.WriteString("^")
		if err := globComponent(&b, g); err != nil {
			return nil, fmt.Errorf("glob %q: %w", src, err)
		}
		b.WriteString("$")
		re, err := regexp.Compile(b.String())
		if err != nil {
			return nil, fmt.Errorf("glob %q: %w", src, err)
		}
		return &pathGlob{src: src, re: re, base: true}, nil
	}
	var b strings.Builder
	b.WriteString("^")
	if !abs {
		b.WriteString(`(?:/[^/]+)*`)
	}
	if g != "" {
		for _, c := range strings.Split(g, "/") {
			switch {
			case c == "":
				return nil, fmt.Errorf("glob %q: empty path component", src)
			case c == "." || c == "..":
				return nil, fmt.Errorf("glob %q: %q components never match a resolved path", src, c)
			case c == "**":
				b.WriteString(`(?:/[^/]+)*`)
				continue
			case strings.Contains(c, "**"):
				return nil, fmt.Errorf("glob %q: ** must be a whole path component", src)
			}
			b.WriteString("/")
			if err := globComponent(&b, c); err != nil {
				return nil, fmt.Errorf("glob %q: %w", src, err)
			}
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("glob %q: %w", src, err)
	}
	return &pathGlob{src: src, re: re}, nil
}

// globComponent appends the regexp of one path component.
func globComponent(b *strings.Builder, c string) error {
	rs := []rune(c)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			j := i + 1
			neg := j < len(rs) && (rs[j] == '!' || rs[j] == '^')
			if neg {
				j++
			}
			start := j
			if j < len(rs) && rs[j] == ']' {
				j++ // a leading ] is a literal member
			}
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j >= len(rs) {
				return errors.New("unterminated [ character class")
			}
			members := rs[start:j]
			b.WriteString("[")
			if neg {
				b.WriteString("^/")
			}
			for _, m := range members {
				switch m {
				case '\\', '[', ']', '^':
					b.WriteRune('\\')
				}
				b.WriteRune(m)
			}
			b.WriteString("]")
			i = j
		case '{':
			j := i + 1
			for j < len(rs) && rs[j] != '}' {
				if rs[j] == '{' {
					return errors.New("nested { alternatives are not supported")
				}
				j++
			}
			if j >= len(rs) {
				return errors.New("unterminated { alternatives")
			}
			alts := strings.Split(string(rs[i+1:j]), ",")
			b.WriteString("(?:")
			for k, a := range alts {
				if k > 0 {
					b.WriteString("|")
				}
				b.WriteString(regexp.QuoteMeta(a))
			}
			b.WriteString(")")
			i = j
		case '}':
			return errors.New("unmatched }")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return nil
}

// match reports whether a normalised path matches.
func (g *pathGlob) match(p string) bool {
	if g.base {
		// The root ("") has no last component.
		return p != "" && g.re.MatchString(p[strings.LastIndexByte(p, '/')+1:])
	}
	return g.re.MatchString(p)
}

// hasDrive reports a Windows drive prefix such as C: or c:/.
func hasDrive(s string) bool {
	return len(s) >= 2 && s[1] == ':' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// normPath brings an absolute path to the form globs and prefixes are
// compiled against: "/" separators, a Windows drive as a first component
// ("/c:/x"), ASCII case folded where the file system folds it, and the root
// as "" so that every component is written "/name".
func normPath(p string, fold, windows bool) string {
	if windows {
		p = strings.ReplaceAll(p, `\`, "/")
		if hasDrive(p) {
			p = "/" + p
		}
	}
	if fold {
		p = asciiLower(p)
	}
	if p == "/" {
		return ""
	}
	return strings.TrimSuffix(p, "/")
}

// compilePrefix validates an absolute prefix and normalises it.
func compilePrefix(src string, fold, windows bool) (string, error) {
	p := src
	if windows {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	if !strings.HasPrefix(p, "/") && !(windows && hasDrive(p)) {
		return "", fmt.Errorf("prefix %q is not an absolute path", src)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("prefix %q: \"..\" components are not allowed", src)
		}
	}
	if windows && hasDrive(p) {
		p = p[:2] + path.Clean("/"+p[2:])
	} else {
		p = path.Clean(p)
	}
	return normPath(p, fold, windows), nil
}

// prefixMatch compares whole components: /etc/shadow covers /etc/shadow
// and /etc/shadow/x, never /etc/shadow-.
func prefixMatch(prefix, p string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// pathCandidates returns the normalised lexical and resolved paths of a
// path item (docs/design/checks.md#policy-precedence: a rule matches if
// either matches), as an array so the hot path does not allocate. A dynamic
// or scratch target has none.
func (p *Policy) pathCandidates(pv *tripwire.PathView) (out [2]string, n int) {
	for _, s := range [2]string{pv.Lexical, pv.Resolved} {
		if s == "" {
			continue
		}
		if s = normPath(s, p.fold, p.windows); n == 0 || out[0] != s {
			out[n] = s
			n++
		}
	}
	return out, n
}

// normalizeHost brings a rule's host to the form the tripwire gives a URL's
// host, with the tripwire's own function so that the two always compare
// alike; an IP literal in its canonical form.
func normalizeHost(h string) (string, error) {
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.String(), nil
	}
	if strings.ContainsAny(h, "/:@*?# \t\r\n[]") {
		return "", fmt.Errorf("host %q is not a host name (no scheme, port, path or wildcard: subdomains always match)", h)
	}
	if strings.TrimSuffix(h, ".") == "" {
		return "", fmt.Errorf("host %q is empty", h)
	}
	n, err := tripwire.NormalizeHost(h)
	if err != nil {
		return "", fmt.Errorf("host %q: %w", h, err)
	}
	return n, nil
}

// hostMatch compares at a label boundary: example.com covers example.com and
// api.example.com, never evil-example.com or example.com.evil.io. An IP
// literal only matches itself (1.2.3.4 is not a "subdomain" of 3.4).
func hostMatch(rule, host string, hostIsIP bool) bool {
	if host == rule {
		return true
	}
	return !hostIsIP && strings.HasSuffix(host, "."+rule)
}

// compileCIDR parses a CIDR, rejecting host bits so that 10.0.0.1/8 is not
// silently read as 10.0.0.0/8.
func compileCIDR(s string) (netip.Prefix, error) {
	pf, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR: %w", s, err)
	}
	if m := pf.Masked(); m != pf {
		return netip.Prefix{}, fmt.Errorf("%q has host bits set (did you mean %s?)", s, m)
	}
	if pf.Addr().Is4In6() {
		// An IPv4-mapped prefix would never match: addresses are unmapped
		// before the test.
		return netip.Prefix{}, fmt.Errorf("%q is an IPv4-mapped prefix; write the IPv4 form", s)
	}
	return pf, nil
}

// cidrResult is the outcome of the cidr test of
// docs/design/checks.md#policy-precedence.
type cidrResult int

const (
	cidrNo      cidrResult = iota
	cidrYes                // the IP literal or a resolved address is in range
	cidrUnknown            // resolution failed: the address set is unknown
)

// cidrTest reports whether the URL's host is an IP literal in one of the
// ranges, or any check-time resolved address is. A URL that failed the
// tripwire's static steps was never resolved: it has no addresses, which is
// not a failure. A resolution that failed is cidrUnknown, which callers
// treat as a match wherever that is the stricter outcome (fail closed).
func cidrTest(ranges []netip.Prefix, u *tripwire.URLView) cidrResult {
	if u == nil {
		return cidrNo
	}
	// The tripwire's own test, so an address counts as inside a range
	// exactly when the tripwire would dial it there.
	if u.IP.IsValid() && tripwire.InRanges(u.IP, ranges) {
		return cidrYes
	}
	for _, a := range u.Addrs {
		if tripwire.InRanges(a, ranges) {
			return cidrYes
		}
	}
	if u.ResolveErr != nil {
		return cidrUnknown
	}
	return cidrNo
}

// nameGlob is a basename glob (path.Match syntax plus {a,b}) prepared at
// load: a glob without metacharacters is a plain comparison, the others
// are brace-expanded once.
type nameGlob struct {
	lit   string
	isLit bool
	alts  []string
}

// compileNameGlob validates a program or executables glob. With fold, the
// glob is lowercased the way the shell analysis lowercases program names.
func compileNameGlob(g string, fold bool) (nameGlob, error) {
	if err := shell.ValidGlob(g); err != nil {
		return nameGlob{}, err
	}
	if strings.Contains(g, "/") {
		return nameGlob{}, fmt.Errorf("glob %q contains /: programs are matched by basename", g)
	}
	if fold {
		g = strings.ToLower(g)
	}
	if !strings.ContainsAny(g, `*?[\{`) {
		return nameGlob{lit: g, isLit: true}, nil
	}
	return nameGlob{alts: shell.ExpandBraces(g)}, nil
}

// match reports whether a program name (already folded where the
// platform folds) matches.
func (g *nameGlob) match(name string) bool {
	if g.isLit {
		return name == g.lit
	}
	for _, a := range g.alts {
		if ok, err := path.Match(a, name); err == nil && ok {
			return true
		}
	}
	return false
}

// programName returns the name rules compare: the program, lowercased
// where the platform folds case.
func programName(c *shell.Command, fold bool) string {
	if fold {
		return strings.ToLower(c.Program)
	}
	return c.Program
}

// programMatch reports whether a command's program matches basename globs.
// A program computed at run time has no name to compare, so only "*"
// matches it; a program that is known but runs dynamic code (eval,
// sh -c "$x") is matched by its name as well as by "*".
func programMatch(globs []nameGlob, anyProg bool, c *shell.Command, name string) bool {
	if c.Dynamic && anyProg {
		return true
	}
	if name == "" {
		return false
	}
	for i := range globs {
		if globs[i].match(name) {
			return true
		}
	}
	return false
}
