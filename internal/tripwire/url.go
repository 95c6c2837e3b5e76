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

// ResolveTimeout bounds check-time resolution (checks.md §6.3 step 7).
const ResolveTimeout = 2 * time.Second

// URLView is an http_get URL parsed and normalised (checks.md §6.3).
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

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// unmap returns the IPv4 address inside an IPv4-mapped or NAT64
// (64:ff9b::/96) address, which is where such a packet really goes.
func unmap(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	return a
}

// blockedRange returns the blocked range containing a, if any.
func blockedRange(a netip.Addr) (netip.Prefix, bool) {
	a = unmap(a)
	for _, p := range blockedRanges() {
		if p.Contains(a) {
			return p, true
		}
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// InRanges reports whether a lies in one of ranges, IPv4-mapped and NAT64
// addresses taken as the IPv4 address inside them.
func InRanges(a netip.Addr, ranges []netip.Prefix) bool {
	a = unmap(a)
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

// urlView applies checks.md §6.3 steps 1–7 to one URL. It resolves the
// host only when steps 1–6 pass.
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
		// check against allowed_domains and nothing to resolve.
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
		if InRanges(a, t.cfg.AllowedIPRanges) {
			continue
		}
		if p, blocked := blockedRange(a); blocked {
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
// naming the hop and the inner code (checks.md §6.3 step 8). It returns the
// address set the executor may dial.
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
