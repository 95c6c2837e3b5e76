package webhook

import (
	"github.com/ironvise/ironvise/internal/config"
)

// FromConfig returns the Options of the environment's webhook section:
// WEBHOOK_URL as a static target receiving the kinds of
// docs/design/ledger.md#siem-egress (guard denials and tripwire rejections
// unless excluded), the bearer token, HMAC secret, rate limit and
// private-target switch, which also apply to API-registered webhooks. The
// caller adds Source, Logger and Version.
func FromConfig(c config.Webhook) Options {
	o := Options{
		BearerToken: Secret(c.BearerToken.Reveal()), HMACSecret: Secret(c.HMACSecret.Reveal()),
		RateLimit: float64(c.RateLimitPerSecond), AllowPrivate: c.AllowPrivateTargets,
	}
	if c.URL != "" {
		var kinds []string
		if c.IncludeGuard {
			kinds = append(kinds, KindGuardDenial)
		}
		if c.IncludeTripwire {
			kinds = append(kinds, KindTripwireRejection)
		}
		kinds = append(kinds, KindSandboxAborted, KindSessionAborted, KindCheckpoint)
		o.Targets = []Target{{URL: c.URL, Format: c.SIEMFormat, Kinds: kinds}}
	}
	return o
}
