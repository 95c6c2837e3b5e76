package config

import (
	"net/netip"
	"net/url"
	"strings"
)

// Webhook configures SIEM egress (docs/design/ledger.md#siem-egress,
// docs/design/cli.md).
type Webhook struct {
	// URL is WEBHOOK_URL: the environment's delivery target, "" for none
	// (webhooks registered through the API still receive their kinds).
	URL string
	// IncludeGuard and IncludeTripwire are WEBHOOK_INCLUDE_GUARD and
	// WEBHOOK_INCLUDE_TRIPWIRE (default true): whether WEBHOOK_URL receives
	// guard denials and tripwire rejections.
	IncludeGuard    bool
	IncludeTripwire bool
	// BearerToken is WEBHOOK_BEARER_TOKEN, sent as Authorization: Bearer;
	// an API webhook's own token overrides it.
	BearerToken Secret
	// HMACSecret is WEBHOOK_HMAC_SECRET: when set, every delivery carries
	// X-EctoLedger-Signature over "timestamp.body".
	HMACSecret Secret
	// RateLimitPerSecond is WEBHOOK_RATE_LIMIT_PER_SECOND (default 10):
	// deliveries per second per URL.
	RateLimitPerSecond int
	// SIEMFormat is SIEM_FORMAT: json (default), cef or leef.
	SIEMFormat string
	// AllowPrivateTargets is WEBHOOK_ALLOW_PRIVATE_TARGETS (default
	// false): allow targets on loopback, private and link-local addresses.
	AllowPrivateTargets bool
}

// DefaultWebhookRateLimit is WEBHOOK_RATE_LIMIT_PER_SECOND's default.
const DefaultWebhookRateLimit = 10

func loadWebhook(r *reader) Webhook {
	w := Webhook{
		IncludeGuard:    r.switchVar("WEBHOOK_INCLUDE_GUARD", true, wordsTrueFalseAnyCase),
		IncludeTripwire: r.switchVar("WEBHOOK_INCLUDE_TRIPWIRE", true, wordsTrueFalseAnyCase),
		SIEMFormat:      r.enum("SIEM_FORMAT", "json", "json", "cef", "leef"),
		// Checked before the URL: whether a private target is an error
		// depends on it.
		AllowPrivateTargets: r.switchVar("WEBHOOK_ALLOW_PRIVATE_TARGETS", false, wordsTrueFalseAnyCase),
	}
	w.RateLimitPerSecond, _ = r.intRange("WEBHOOK_RATE_LIMIT_PER_SECOND", DefaultWebhookRateLimit, 1, 10000)
	// Tokens are taken verbatim (trimming would change what the receiver
	// compares against), but a value that is only whitespace is unset.
	if v, ok := r.look("WEBHOOK_BEARER_TOKEN"); ok && strings.TrimSpace(v) != "" {
		if strings.ContainsAny(v, "\r\n") {
			r.fail("WEBHOOK_BEARER_TOKEN", "", "contains a line break", "a token without CR or LF")
		} else {
			w.BearerToken = NewSecret(v)
		}
	}
	if v, ok := r.look("WEBHOOK_HMAC_SECRET"); ok && strings.TrimSpace(v) != "" {
		w.HMACSecret = NewSecret(v)
	}
	if u, ok := r.get("WEBHOOK_URL"); ok {
		if problem := checkWebhookURL(u, w.AllowPrivateTargets); problem != "" {
			// The URL may carry a secret in its query, so it is not echoed.
			r.fail("WEBHOOK_URL", "", problem, "an absolute http:// or https:// URL of a public host without user:password@ (WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows loopback and private addresses)")
		} else {
			w.URL = u
		}
	}
	return w
}

// checkWebhookURL applies the static part of the target rules
// (docs/design/api.md#tokens-webhooks-policies): the delivery side re-checks
// every resolved address.
func checkWebhookURL(s string, allowPrivate bool) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "scheme must be http or https"
	case u.Host == "" || u.Hostname() == "":
		return "has no host"
	case u.User != nil:
		return "must not carry user:password@"
	}
	if allowPrivate {
		return ""
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".local") || strings.HasSuffix(host, ".internal") {
		return "names a local host"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if !ip.IsGlobalUnicast() || ip.IsPrivate() || cgnat.Contains(ip) {
			return "is a loopback, private, link-local or otherwise non-public address"
		}
	}
	return ""
}

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")
