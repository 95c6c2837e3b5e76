package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Webhook targets must be public (docs/design/ledger.md#siem-egress,
// docs/design/api.md#tokens-webhooks-policies): a webhook URL is operator
// input that IronVise will POST to, so without this rule it is a server-side
// request forgery primitive against the cloud metadata service, the database
// or anything else on the private network. The rule is applied when a target
// is configured and again on every connection, to the address actually
// dialled, so a name that resolves to a private address later (DNS rebinding)
// is still refused.

// ErrPrivateTarget reports a webhook target on a loopback, private,
// link-local or otherwise non-public address.
var ErrPrivateTarget = errors.New("ironvise/webhook: target is not a public address (set WEBHOOK_ALLOW_PRIVATE_TARGETS=true for on-premises receivers)")

// nonPublic are ranges refused besides what netip classifies as loopback,
// private, link-local, multicast or unspecified.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: embeds any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("2001::/32"),       // Teredo: embeds an IPv4 address
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
}

// PublicAddr reports whether a is a public unicast address. IPv4-mapped
// IPv6 addresses are judged by the IPv4 address they carry.
func PublicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// localName reports host names that are local by definition.
func localName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost") || strings.HasSuffix(h, ".local") || strings.HasSuffix(h, ".internal")
}

// checkURL applies the rules that need no lookup: absolute http or https
// URL with a host and no userinfo; unless private targets are allowed, no
// local host name and no non-public IP literal.
func checkURL(raw string, allowPrivate bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, errors.New("webhook: not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("webhook: URL scheme must be http or https")
	case u.Hostname() == "":
		return nil, errors.New("webhook: URL has no host")
	case u.User != nil:
		// Credentials in the URL would be sent to, and logged by, every
		// hop; tokens go in bearer_token.
		return nil, errors.New("webhook: URL must not carry user:password@ (use a bearer token)")
	}
	if allowPrivate {
		return u, nil
	}
	if localName(u.Hostname()) {
		return nil, fmt.Errorf("%w: host %q is local", ErrPrivateTarget, u.Hostname())
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !PublicAddr(a) {
		return nil, fmt.Errorf("%w: %s", ErrPrivateTarget, a)
	}
	return u, nil
}

// ValidateURL applies the create-time rules of
// docs/design/api.md#tokens-webhooks-policies to a webhook URL: checkURL's
// rules, and when the name resolves now, every address must be public (a
// failed lookup is accepted: delivery re-checks). The resolver is
// net.DefaultResolver when nil.
func ValidateURL(ctx context.Context, raw string, allowPrivate bool, resolver *net.Resolver) error {
	u, err := checkURL(raw, allowPrivate)
	if err != nil || allowPrivate {
		return err
	}
	if _, err := netip.ParseAddr(u.Hostname()); err == nil {
		return nil
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if !PublicAddr(a) {
			return fmt.Errorf("%w: %s resolves to %s", ErrPrivateTarget, u.Hostname(), a)
		}
	}
	return nil
}

// newClient returns the HTTP client of deliveries: no proxy (a proxy
// would dial for us, past the address check), no redirects (a redirect
// could point anywhere), and unless private targets are allowed, a dialer
// that refuses non-public addresses at connect time.
func newClient(timeout time.Duration, allowPrivate bool, resolver *net.Resolver) *http.Client {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Resolver: resolver}
	if !allowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			// Control sees the resolved address about to be dialled: this
			// is the check DNS rebinding cannot get around.
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot parse dialled address %q", ErrPrivateTarget, address)
			}
			if !PublicAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrPrivateTarget, ap.Addr())
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
