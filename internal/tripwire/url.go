package tripwire

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/idna"

	"github.com/ironvise/ironvise/internal/verdict"
)

// Resolver resolves host names at check time. *net.Resolver implements it;
// tests use a fixed table so no test needs DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ResolveTimeout bounds check-time resolution
// (docs/design/checks.md#tripwire-urls step 7).
const ResolveTimeout = 2 * time.Second

// URLView is an http_get URL parsed and normalised
// (docs/design/checks.md#tripwire-urls).
type URLView struct {
	Raw string
	URL *url.URL
	// Host is lowercased, without one trailing dot, IDNA-encoded.
	Host string
	// IP is set when the host is an IP literal in canonical form.
	IP netip.Addr
	// Resolved reports that resolution ran (only for URLs that passed
	// steps 1–6: a denied URL is never looked up, so a refused host does
	// not leak to DNS). Addrs are the unmapped addresses; ResolveErr is set
	// when resolution failed.
	Resolved   bool
	Addrs      []netip.Addr
	ResolveErr error
	// Problem is set when the URL fails steps 1–7.
	Problem *Problem
}

// legacyIPLabel matches a label of a legacy numeric IPv4 form (0x7f.1,
// 2130706433, 0177.0.0.1), which resolvers and browsers accept but
// netip rejects. Compiled on first use, like blockedRanges, so that
// starting the binary does not pay for it.
var legacyIPLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(0x[0-9a-f]*|[0-9]+)$`) })

// blockedRanges are never dialled unless allowed_ip_ranges says so: the
// host itself, private networks, link-local (cloud metadata), and ranges
// that are not globally routable.
var blockedRanges = sync.OnceValue(func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4", "255.255.255.255/32",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
})

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
)

// unmap returns the IPv4 address inside an IPv4-mapped or NAT64
// (64:ff9b::/96) address, which is where such a packet really goes. It is
// the form recorded and dialled; the checks look at every address a
// packet could be translated to (see Embedded).
func unmap(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	return a
}

// rfc6052 lists where RFC 6052 puts the IPv4 address for each NAT64
// prefix length: the byte offsets of its four octets (byte 8 is the
// reserved "u" octet and is skipped).
var rfc6052 = map[int][4]int{
	32: {4, 5, 6, 7}, 40: {5, 6, 7, 9}, 48: {6, 7, 9, 10}, 56: {7, 9, 10, 11}, 64: {9, 10, 11, 12}, 96: {12, 13, 14, 15},
}

// Embedded returns the IPv4 addresses an IPv6 address carries, by every
// embedding a network could translate it through, so that a host that
// resolves to one cannot reach a blocked IPv4 address: IPv4-mapped
// (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d), SIIT IPv4-translated
// (::ffff:0:a.b.c.d), NAT64 with the well-known prefix (64:ff9b::/96) and
// the local-use prefix (64:ff9b:1::/48, RFC 8215; at each RFC 6052 prefix
// length it allows: /48, /56, /64, /96), 6to4 (2002::/16), Teredo
// (2001::/32: the server, and the client address stored inverted) and
// ISATAP interface identifiers (…:0:5efe:a.b.c.d). An IPv4 address is
// returned as itself.
func Embedded(a netip.Addr) []netip.Addr {
	a = a.Unmap()
	if a.Is4() || !a.IsValid() {
		return []netip.Addr{a}
	}
	b := a.As16()
	v4 := func(o [4]int, xor byte) netip.Addr {
		return netip.AddrFrom4([4]byte{b[o[0]] ^ xor, b[o[1]] ^ xor, b[o[2]] ^ xor, b[o[3]] ^ xor})
	}
	last := [4]int{12, 13, 14, 15}
	var out []netip.Addr
	zero := func(from, to int) bool {
		for i := from; i < to; i++ {
			if b[i] != 0 {
				return false
			}
		}
		return true
	}
	switch {
	case zero(0, 12): // ::a.b.c.d, also :: and ::1 (0.0.0.0/8, blocked)
		out = append(out, v4(last, 0))
	case zero(0, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0: // ::ffff:0:a.b.c.d
		out = append(out, v4(last, 0))
	case nat64.Contains(a):
		out = append(out, v4(last, 0))
	case nat64Local.Contains(a):
		// The operator picks the prefix length inside the /48. A layout
		// is possible when the "u" octet and the suffix after the IPv4
		// address are zero (RFC 6052 §2.2); each possible one is checked.
		for _, n := range []int{48, 56, 64, 96} {
			o := rfc6052[n]
			if b[8] == 0 && zero(o[3]+1, 16) {
				out = append(out, v4(o, 0))
			}
		}
	case sixToFour.Contains(a):
		out = append(out, v4([4]int{2, 3, 4, 5}, 0))
	case teredo.Contains(a):
		out = append(out, v4([4]int{4, 5, 6, 7}, 0), v4(last, 0xff))
	}
	if (b[8] == 0 || b[8] == 2) && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		out = append(out, v4(last, 0)) // ISATAP
	}
	return append(out, a)
}

// blockedRange returns the blocked range containing a or an address it
// carries (see Embedded), skipping those in allowed; inner is that
// address.
func blockedRange(a netip.Addr, allowed []netip.Prefix) (inner netip.Addr, p netip.Prefix, blocked bool) {
	for _, e := range Embedded(a) {
		if inPrefixes(e, allowed) {
			continue
		}
		for _, p := range blockedRanges() {
			if p.Contains(e) {
				return e, p, true
			}
		}
		if e.IsLoopback() || e.IsPrivate() || e.IsLinkLocalUnicast() || e.IsMulticast() || e.IsUnspecified() {
			return e, netip.PrefixFrom(e, e.BitLen()), true
		}
	}
	return netip.Addr{}, netip.Prefix{}, false
}

// InRanges reports whether a, or an IPv4 address it carries (see
// Embedded), lies in one of ranges. It is the one test of "address in
// range" that the tripwire and the policy's cidr rules share.
func InRanges(a netip.Addr, ranges []netip.Prefix) bool {
	for _, e := range Embedded(a) {
		if inPrefixes(e, ranges) {
			return true
		}
	}
	return false
}

func inPrefixes(a netip.Addr, ranges []netip.Prefix) bool {
	for _, p := range ranges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// NormalizeHost lowercases, drops one trailing dot and applies IDNA
// lookup rules, so "EXAMPLE.com." and "éxample.com" compare as DNS does.
// It is the form of URLView.Host.
func NormalizeHost(h string) (string, error) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("invalid host name: %v", err)
	}
	return a, nil
}

// urlView applies docs/design/checks.md#tripwire-urls steps 1–7 to one URL.
// It resolves the host only when steps 1–6 pass.
func (t *Tripwire) urlView(ctx context.Context, raw string) *URLView {
	v := &URLView{Raw: raw}
	fail := func(code verdict.Code, format string, args ...any) *URLView {
		v.Problem = &Problem{code, fmt.Sprintf(format, args...)}
		return v
	}
	u, err := url.Parse(raw)
	if err != nil || len(raw) > 2048 || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		why := "not an absolute URL with a host"
		if len(raw) > 2048 {
			why = fmt.Sprintf("longer than 2048 bytes (%d)", len(raw))
		} else if err != nil {
			why = err.Error()
		}
		return fail(verdict.URLInvalid, "%s: %s", quote(raw), why)
	}
	v.URL = u
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && !(scheme == "http" && !t.cfg.RequireHTTPS) {
		want := "https"
		if !t.cfg.RequireHTTPS {
			want = "http or https"
		}
		return fail(verdict.URLScheme, "%s: scheme %q is not allowed (want %s)", quote(raw), u.Scheme, want)
	}
	// user:pass@host hides the real host from a reader
	// (https://allowed.com@evil.com goes to evil.com).
	if u.User != nil {
		return fail(verdict.URLUserinfo, "%s: userinfo in the URL is not allowed", quote(raw))
	}
	hostname := u.Hostname()
	if strings.Contains(hostname, "%") {
		return fail(verdict.URLInvalid, "%s: IPv6 zones are not allowed", quote(raw))
	}
	if ip, err := netip.ParseAddr(hostname); err == nil {
		v.Host, v.IP = ip.String(), ip
		if !InRanges(ip, t.cfg.AllowedIPRanges) {
			return fail(verdict.URLIPLiteral, "%s: IP literal %s is not in allowed_ip_ranges", quote(raw), ip)
		}
		// An allowed literal is its own address set: there is no name to
		// check against allowed_domains and nothing to resolve. An address
		// it carries that is blocked and not itself allowed still refuses
		// it (2002:a9fe:a9fe:: under an allowed 2002::/16 is the metadata
		// service).
		if inner, p, blocked := blockedRange(ip, t.cfg.AllowedIPRanges); blocked {
			return fail(verdict.URLIPLiteral, "%s: IP literal %s carries %s, in %s", quote(raw), ip, inner, p)
		}
		v.Resolved, v.Addrs = true, []netip.Addr{unmap(ip)}
		return v
	}
	host, err := NormalizeHost(hostname)
	if err != nil {
		return fail(verdict.URLInvalid, "%s: %v", quote(raw), err)
	}
	v.Host = host
	if isLegacyIP(host) {
		return fail(verdict.URLIPLiteral, "%s: numeric host %q is a legacy IP literal form", quote(raw), host)
	}
	if !t.domainAllowed(host) {
		return fail(verdict.URLDomainNotAllowed, "host %s is not in allowed_domains", host)
	}
	rctx, cancel := context.WithTimeout(ctx, ResolveTimeout)
	defer cancel()
	v.Resolved = true
	addrs, err := t.resolver.LookupNetIP(rctx, "ip", host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no addresses")
	}
	if err != nil {
		v.ResolveErr = err
		return fail(verdict.URLUnresolvable, "host %s: %v", host, err)
	}
	for _, a := range addrs {
		a = unmap(a)
		v.Addrs = append(v.Addrs, a)
		// Security: every address a packet to a could be translated to
		// is checked, so 64:ff9b:1::a9fe:a9fe or 2002:a9fe:a9fe:: cannot
		// reach the metadata service behind a NAT64 or 6to4 gateway.
		if inner, p, blocked := blockedRange(a, t.cfg.AllowedIPRanges); blocked {
			if inner != a {
				return fail(verdict.URLResolvedIPBlocked, "%s resolves to %s, which carries %s, in %s", host, a, inner, p)
			}
			return fail(verdict.URLResolvedIPBlocked, "%s resolves to %s in %s", host, a, p)
		}
	}
	return v
}

func isLegacyIP(host string) bool {
	for _, l := range strings.Split(host, ".") {
		if !legacyIPLabel().MatchString(l) {
			return false
		}
	}
	return true
}

// domainAllowed compares at a label boundary: example.com allows
// api.example.com but not evil-example.com or example.com.evil.io.
func (t *Tripwire) domainAllowed(host string) bool {
	for _, d := range t.cfg.AllowedDomains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// CheckURL runs steps 1–7 on a URL at execute time: for a redirect hop,
// hop is its 1-based index and a failure becomes url_redirect_blocked
// naming the hop and the inner code (docs/design/checks.md#tripwire-urls step
// 8). It returns the address set the executor may dial.
func (t *Tripwire) CheckURL(ctx context.Context, raw string, hop int) ([]netip.Addr, verdict.Verdict) {
	v := t.urlView(ctx, raw)
	if v.Problem != nil {
		vd := verdict.Denial(verdict.CheckTripwire, v.Problem.Code, v.Problem.Message)
		if hop > 0 {
			vd = verdict.Denial(verdict.CheckTripwire, verdict.URLRedirectBlocked, fmt.Sprintf("redirect hop %d: %s: %s", hop, v.Problem.Code, v.Problem.Message))
		}
		vd.Phase = verdict.PhaseExecute
		return nil, vd
	}
	vd := verdict.Pass(verdict.CheckTripwire)
	vd.Phase = verdict.PhaseExecute
	return v.Addrs, vd
}

// DialAllowed re-checks the remote address of a connection just before it
// is made (for net.Dialer.Control): it must be in the check-time address
// set, so a DNS answer that changes between check and dial (rebinding)
// cannot move the request to another host.
func DialAllowed(remote netip.Addr, allowed []netip.Addr) bool {
	remote = unmap(remote)
	for _, a := range allowed {
		if unmap(a) == remote {
			return true
		}
	}
	return false
}
