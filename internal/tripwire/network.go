package tripwire

import (
	"fmt"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/verdict"
)

// EgressRules decides network destinations as the egress proxy does: a
// host name by the allowed domain list, an IP address by the opted-in
// ranges. *egress.Rules implements it; the interface exists because
// package egress imports this one, so the composition root passes the
// rules in (Options.Egress).
type EgressRules interface {
	CheckHost(host string) verdict.Verdict
	CheckIP(ip netip.Addr) verdict.Verdict
}

// nilIfTypedNil turns a nil pointer in the interface (a *egress.Rules
// left nil for mode none) into no rules, rather than a method call on
// nil.
func nilIfTypedNil(r EgressRules) EgressRules {
	if r == nil {
		return nil
	}
	if v := reflect.ValueOf(r); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return r
}

// netTarget is one destination a command names: a URL, or the host of a
// git scp-like address (git@github.com:o/r.git).
type netTarget struct {
	// raw is the word as written, for messages.
	raw string
	// url is set for a URL; host for an scp-like address.
	url  string
	host string
}

// checkNetwork judges the destinations a command names, in proxy mode
// only (docs/checks.md#commands-in-proxy-mode). A destination the
// proxy would refuse is refused with the proxy's code and message, so
// the agent learns before the command runs what the proxy would answer
// at connect time. A destination computed at run time (`curl "$u"`) is
// left to the proxy, the point where egress is enforced.
func (t *Tripwire) checkNetwork(c *shell.Command) (verdict.Verdict, bool) {
	if t.egress == nil || c.Dynamic || c.Program == "" {
		return verdict.Verdict{}, false
	}
	for _, tg := range networkTargets(c, t.foldCase) {
		if v, denied := t.judgeTarget(tg); denied {
			return v, true
		}
	}
	return verdict.Verdict{}, false
}

// judgeTarget applies the egress rules to one destination.
func (t *Tripwire) judgeTarget(tg netTarget) (verdict.Verdict, bool) {
	deny := func(code verdict.Code, format string, args ...any) (verdict.Verdict, bool) {
		return verdict.Denial(verdict.CheckTripwire, code, fmt.Sprintf(format, args...)), true
	}
	host := tg.host
	if tg.url != "" {
		// Security: where parsers disagree on the host, a reader and the
		// client could see different destinations. A backslash ends the
		// host for WHATWG parsers (https://allowed.test\@evil.test) and
		// not for others; a percent-encoded host is decoded by some
		// clients and sent as written by others.
		auth := authority(tg.url)
		if strings.ContainsAny(auth, `\`) {
			return deny(verdict.URLInvalid, "%s: a backslash in the host part: clients disagree on which host it names; write the URL with / only", quote(tg.raw))
		}
		if strings.Contains(hostOf(auth), "%") {
			return deny(verdict.URLInvalid, "%s: a percent-encoded host: clients disagree on which host it names; write the host name plainly", quote(tg.raw))
		}
		u, err := url.Parse(tg.url)
		if err != nil {
			return deny(verdict.URLInvalid, "%s: cannot tell which host it names: %v", quote(tg.raw), err)
		}
		if strings.EqualFold(u.Scheme, "file") || u.Host == "" {
			return verdict.Verdict{}, false // no network destination
		}
		host = u.Hostname()
	}
	if host == "" {
		return verdict.Verdict{}, false
	}
	var v verdict.Verdict
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		v = t.egress.CheckIP(ip)
	} else if ip, ok := legacyIPv4(host); ok {
		// curl and browsers read 2130706433 and 0x7f.1 as 127.0.0.1 and
		// ask the proxy for that address.
		v = t.egress.CheckIP(ip)
	} else {
		v = t.egress.CheckHost(host)
	}
	if !v.Denied() {
		return verdict.Verdict{}, false
	}
	return verdict.Denial(verdict.CheckTripwire, v.Code, v.Message), true
}

// authority returns the part of a URL between "scheme://" and the path,
// query or fragment (a backslash does not end it here).
func authority(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// hostOf drops the userinfo of an authority.
func hostOf(auth string) string {
	if i := strings.LastIndexByte(auth, '@'); i >= 0 {
		return auth[i+1:]
	}
	return auth
}

// legacyIPv4 parses the numeric IPv4 forms inet_aton accepts (one to four
// parts, each decimal, octal with a leading 0 or hex with 0x): 2130706433,
// 0x7f.1, 0177.0.0.1, 127.1.
func legacyIPv4(host string) (netip.Addr, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || !isLegacyIP(host) {
		return netip.Addr{}, false
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case strings.HasPrefix(p, "0x"):
			p, base = p[2:], 16
			if p == "" {
				p = "0"
			}
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = n
	}
	// The last part fills the bytes the others leave.
	last := len(vals) - 1
	for _, v := range vals[:last] {
		if v > 255 {
			return netip.Addr{}, false
		}
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	n := vals[last]
	for i, v := range vals[:last] {
		n |= v << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// networkTargets lists the destinations of the programs whose network
// use is common in agent work: curl, wget, git, pip (also as python -m
// pip) and npm. Only words with a static host are returned.
func networkTargets(c *shell.Command, fold bool) []netTarget {
	prog := c.Program
	if fold {
		prog = strings.ToLower(prog)
	}
	var out []netTarget
	addURL := func(w shell.Word, defScheme string) {
		if tg, ok := urlTarget(w, defScheme); ok {
			out = append(out, tg)
		}
	}
	switch {
	case prog == "curl":
		// curl expands {a,b} in a URL into one URL each, unless -g.
		glob := !c.Parsed.Has("-g", "--globoff")
		// --doh-url and --ipfs-gateway are destinations too: curl asks
		// them for names and for IPFS content.
		for _, w := range append(c.Parsed.Operands, c.Parsed.Values("--url", "--doh-url", "--ipfs-gateway")...) {
			if !glob || !w.Static || !strings.Contains(w.Value, "{") {
				addURL(w, "http")
				continue
			}
			for _, u := range shell.ExpandBraces(w.Value) {
				addURL(shell.Word{Static: true, Value: u, Match: u}, "http")
			}
		}
	case prog == "wget":
		for _, w := range c.Parsed.Operands {
			addURL(w, "http")
		}
	case prog == "git":
		out = gitTargets(c)
	case prog == "npm":
		for _, o := range c.Parsed.Opts {
			// --registry and a scope's --@scope:registry.
			if o.HasValue && (o.Name == "--registry" || strings.HasSuffix(o.Name, ":registry")) {
				addURL(o.Value, "")
			}
		}
		for _, w := range c.Parsed.Operands {
			if tg, ok := embeddedURL(w); ok {
				out = append(out, tg)
			}
		}
	case strings.HasPrefix(prog, "pip"):
		out = pipTargets(c.Parsed)
	case strings.HasPrefix(prog, "python"):
		if args, ok := pythonModuleArgs(c, "pip", "pip3"); ok {
			out = pipTargets(shell.ParseArgs(args, shell.SpecFor("pip")))
		}
	}
	return out
}

// pipTargets lists the index URLs and the URL requirements of a pip
// command line.
func pipTargets(p shell.Parsed) []netTarget {
	var out []netTarget
	for _, w := range p.Values("-i", "--index-url", "--extra-index-url", "-f", "--find-links") {
		// --find-links may name a local directory.
		if tg, ok := urlTarget(w, ""); ok {
			out = append(out, tg)
		}
	}
	for _, w := range p.Operands {
		if tg, ok := embeddedURL(w); ok {
			out = append(out, tg)
		}
	}
	return out
}

// pythonModuleArgs returns the arguments python passes to the module
// run with -m when it is one of mods: everything after -m's value,
// since python stops reading its own options there.
func pythonModuleArgs(c *shell.Command, mods ...string) ([]shell.Word, bool) {
	for _, o := range c.Parsed.Opts {
		if o.Name != "-m" || !o.HasValue || !o.Value.Static {
			continue
		}
		found := false
		for _, m := range mods {
			if o.Value.Value == m {
				found = true
			}
		}
		if !found {
			return nil, false
		}
		if o.Arg >= len(c.Args) {
			return nil, false
		}
		next := o.Arg + 1
		if w := c.Args[o.Arg]; !w.Static || !strings.HasSuffix(w.Value, o.Value.Value) || len(w.Value) <= 2 {
			next++ // -m pip, -Im pip: the value is the next word
		}
		if next > len(c.Args) {
			return nil, false
		}
		return c.Args[next:], true
	}
	return nil, false
}

// gitNetSubcommands are the git subcommands that contact a remote, and
// whether their first operand is the repository (fetch, pull and push
// take refspecs after it, whose colons are not scp-like addresses).
var gitNetSubcommands = map[string]bool{
	"clone": false, "ls-remote": false, "fetch": true, "pull": true, "push": true,
	"archive": false, "remote": false, "submodule": false,
}

// gitValueOptions are the options of the remote subcommands that take
// their value as the next word, so that value is not read as the
// repository (git fetch --depth 1 origin).
var gitValueOptions = map[string]bool{
	"--depth": true, "--deepen": true, "--shallow-since": true, "--shallow-exclude": true, "-o": true, "--origin": true,
	"--push-option": true, "--server-option": true, "-u": true, "--upload-pack": true, "--receive-pack": true, "--exec": true,
	"-j": true, "--jobs": true, "-b": true, "--branch": true, "--reference": true, "--reference-if-able": true,
	"--separate-git-dir": true, "--template": true, "--negotiation-tip": true, "--refmap": true, "--filter": true,
	"--recurse-submodules-default": true, "--bundle-uri": true, "--ref-format": true,
}

// gitTargets lists the remotes a git command line names: URLs and
// scp-like addresses of clone, fetch, pull, push and ls-remote, URLs of
// remote add/set-url and submodule add, and the URLs of -c settings that
// send git elsewhere (url.<base>.insteadOf, remote.<name>.url).
func gitTargets(c *shell.Command) []netTarget {
	var out []netTarget
	config := func(w shell.Word) {
		if !w.Static {
			return
		}
		key, val, ok := strings.Cut(w.Value, "=")
		if !ok {
			return
		}
		lk := strings.ToLower(key)
		switch {
		case strings.HasPrefix(lk, "url.") && (strings.HasSuffix(lk, ".insteadof") || strings.HasSuffix(lk, ".pushinsteadof")):
			// url.<base>.insteadOf=<prefix> rewrites <prefix> to <base>:
			// <base> is where git really goes.
			dot := strings.LastIndexByte(key, '.')
			if dot <= len("url.") {
				return // url.insteadOf: no base
			}
			base := key[len("url."):dot]
			if tg, ok := gitRemote(base, shell.Word{Static: true, Value: base, Match: base}); ok {
				out = append(out, tg)
			}
		case (strings.HasPrefix(lk, "remote.") || strings.HasPrefix(lk, "submodule.")) &&
			(strings.HasSuffix(lk, ".url") || strings.HasSuffix(lk, ".pushurl")):
			if tg, ok := gitRemote(val, shell.Word{Static: true, Value: val, Match: val}); ok {
				out = append(out, tg)
			}
		}
	}
	for _, w := range c.Parsed.Values("-c") {
		config(w)
	}
	ops := c.Parsed.Operands
	if len(ops) == 0 || !ops[0].Static {
		return out
	}
	repoFirst, ok := gitNetSubcommands[ops[0].Value]
	if !ok {
		return out
	}
	seenRepo := false
	for i := 1; i < len(ops); i++ {
		w := ops[i]
		if w.Static && strings.HasPrefix(w.Value, "-") {
			switch {
			case gitValueOptions[w.Value]:
				i++ // its value is not the repository
			case w.Value == "-c" || w.Value == "--config":
				if i+1 < len(ops) {
					config(ops[i+1])
					i++
				}
			case strings.HasPrefix(w.Value, "--config="):
				config(shell.Word{Static: true, Value: w.Value[len("--config="):]})
			case strings.HasPrefix(w.Value, "-c") && len(w.Value) > 2:
				config(shell.Word{Static: true, Value: w.Value[2:]})
			}
			continue
		}
		if repoFirst && seenRepo {
			break // refspecs
		}
		if tg, ok := gitRemote(w.Match, w); ok {
			out = append(out, tg)
			seenRepo = true
			continue
		}
		if repoFirst && w.Static && !strings.ContainsAny(w.Value, ":/") {
			// A remote name (origin): its URL is in the repository's
			// configuration, which the proxy checks at connect time.
			seenRepo = true
		}
	}
	return out
}

// gitRemote reads s as a git remote: a URL with a network scheme, or an
// scp-like address [user@]host:path (a colon before any slash).
func gitRemote(s string, w shell.Word) (netTarget, bool) {
	if strings.Contains(s, "::") {
		// <transport>::<address>: a remote helper, which the command
		// analysis follows (ext:: runs a command).
		return netTarget{}, false
	}
	if strings.Contains(s, "://") {
		return urlTarget(w, "")
	}
	if !w.Static {
		return netTarget{}, false
	}
	colon := strings.IndexByte(s, ':')
	if colon <= 1 || strings.IndexByte(s[:colon], '/') >= 0 {
		// No colon, a one-letter drive (C:), or a local path with a
		// colon after a slash.
		return netTarget{}, false
	}
	host := s[:colon]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if host == "" {
		return netTarget{}, false
	}
	return netTarget{raw: s, host: host}, true
}

// embeddedURL finds a URL inside a requirement word: a bare URL,
// git+https://…, or "name @ https://…" (PEP 508).
func embeddedURL(w shell.Word) (netTarget, bool) {
	text := w.Match
	i := strings.Index(text, "://")
	if i < 0 {
		return netTarget{}, false
	}
	start := i
	for start > 0 && isSchemeByte(text[start-1]) {
		start--
	}
	u := text[start:]
	// A VCS requirement: git+https://host/… goes to host over https.
	if j := strings.IndexByte(u[:i-start], '+'); j >= 0 {
		u = u[j+1:]
	}
	return urlTarget(shell.Word{Static: w.Static, Value: u, Match: u}, "")
}

func isSchemeByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '-' || b == '.'
}

// urlTarget reads a word as a URL whose host is known statically. A word
// without "scheme://" gets defScheme (curl and wget read example.com/x as
// http://example.com/x); with defScheme empty it is not a URL. A word
// with expansions counts when its scheme and host are literal text
// (https://example.com/$path); otherwise the proxy decides.
func urlTarget(w shell.Word, defScheme string) (netTarget, bool) {
	s := w.Value
	if !w.Static {
		s = w.Match
	}
	if s == "" || strings.HasPrefix(s, "-") {
		return netTarget{}, false
	}
	if !hasScheme(s) {
		if defScheme == "" {
			return netTarget{}, false
		}
		s = defScheme + "://" + s
	}
	if !w.Static {
		// The text up to the end of the host must hold no expansion.
		scheme, _, _ := strings.Cut(s, "://")
		if strings.ContainsAny(scheme+"://"+authority(s), "$`*?") {
			return netTarget{}, false
		}
		if i := strings.IndexAny(s[len(scheme)+3:], "/?#"); i < 0 {
			return netTarget{}, false // the host may go on in the expansion
		}
	}
	return netTarget{raw: w.Match, url: s}, true
}

// hasScheme reports a URL that starts with scheme:// (RFC 3986 scheme
// characters).
func hasScheme(s string) bool {
	i := strings.Index(s, "://")
	if i <= 0 {
		return false
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for j := 1; j < i; j++ {
		if !isSchemeByte(s[j]) {
			return false
		}
	}
	return true
}
