package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestWebhookDefaults(t *testing.T) {
	c := mustLoad(t, "HOME", "/h")
	w := c.Webhook
	if w.URL != "" || !w.IncludeGuard || !w.IncludeTripwire || w.BearerToken.Set() || w.HMACSecret.Set() ||
		w.RateLimitPerSecond != 10 || w.SIEMFormat != "json" || w.AllowPrivateTargets {
		t.Fatalf("defaults: %+v", w)
	}
}

func TestWebhookOverrides(t *testing.T) {
	c, err := Load(MapLookup(map[string]string{
		"HOME": "/h", "WEBHOOK_URL": "https://siem.example.com/hook?x=1", "WEBHOOK_INCLUDE_GUARD": "FALSE",
		"WEBHOOK_INCLUDE_TRIPWIRE": "false", "WEBHOOK_BEARER_TOKEN": " tok en ", "WEBHOOK_HMAC_SECRET": "s3cret",
		"WEBHOOK_RATE_LIMIT_PER_SECOND": "250", "SIEM_FORMAT": "LEEF",
	}))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Webhook
	if w.URL != "https://siem.example.com/hook?x=1" || w.IncludeGuard || w.IncludeTripwire || w.RateLimitPerSecond != 250 || w.SIEMFormat != "leef" {
		t.Fatalf("overrides: %+v", w)
	}
	// Secrets are verbatim (the receiver compares them byte for byte) and
	// never print.
	if w.BearerToken.Reveal() != " tok en " || w.HMACSecret.Reveal() != "s3cret" {
		t.Fatalf("secrets changed: %q %q", w.BearerToken.Reveal(), w.HMACSecret.Reveal())
	}
	if s := fmt.Sprintf("%v %+v %#v", w, w, w); strings.Contains(s, "s3cret") || strings.Contains(s, "tok en") {
		t.Fatalf("a webhook secret printed: %s", s)
	}
	c, err = Load(MapLookup(map[string]string{"HOME": "/h", "WEBHOOK_URL": "http://127.0.0.1:9/x", "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"}))
	if err != nil || c.Webhook.URL != "http://127.0.0.1:9/x" || !c.Webhook.AllowPrivateTargets {
		t.Fatalf("private target allowed explicitly: %v %+v", err, c)
	}
}

func TestWebhookRejectsMalformed(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"WEBHOOK_INCLUDE_GUARD", "yes", `WEBHOOK_INCLUDE_GUARD="yes": unknown value (accepted: true, false, or unset)`},
		{"WEBHOOK_INCLUDE_TRIPWIRE", "1", `WEBHOOK_INCLUDE_TRIPWIRE="1"`},
		{"WEBHOOK_ALLOW_PRIVATE_TARGETS", "on", `WEBHOOK_ALLOW_PRIVATE_TARGETS="on"`},
		{"WEBHOOK_RATE_LIMIT_PER_SECOND", "0", `WEBHOOK_RATE_LIMIT_PER_SECOND="0": not an integer in range (accepted: 1 to 10000)`},
		{"WEBHOOK_RATE_LIMIT_PER_SECOND", "ten", `WEBHOOK_RATE_LIMIT_PER_SECOND="ten"`},
		{"SIEM_FORMAT", "syslog", `SIEM_FORMAT="syslog": unknown value (accepted: json, cef, leef)`},
		{"WEBHOOK_URL", "ftp://siem.example.com/", "WEBHOOK_URL: scheme must be http or https"},
		{"WEBHOOK_URL", "siem.example.com/hook", "WEBHOOK_URL: scheme must be http or https"},
		{"WEBHOOK_URL", "https://user:pw@siem.example.com/", "WEBHOOK_URL: must not carry user:password@"},
		{"WEBHOOK_URL", "https:///hook", "WEBHOOK_URL: has no host"},
		{"WEBHOOK_URL", "http://localhost:8080/", "WEBHOOK_URL: names a local host"},
		{"WEBHOOK_URL", "http://siem.corp.internal/", "WEBHOOK_URL: names a local host"},
		{"WEBHOOK_URL", "http://127.0.0.1/", "non-public address"},
		{"WEBHOOK_URL", "http://10.1.2.3/", "non-public address"},
		{"WEBHOOK_URL", "http://169.254.169.254/latest/meta-data", "non-public address"},
		{"WEBHOOK_URL", "http://100.64.0.1/", "non-public address"},
		{"WEBHOOK_URL", "http://[::1]/", "non-public address"},
		{"WEBHOOK_URL", "http://[::ffff:192.168.1.1]/", "non-public address"},
		{"WEBHOOK_URL", "http://[fd00::1]/", "non-public address"},
		{"WEBHOOK_URL", "http://0.0.0.0/", "non-public address"},
		{"WEBHOOK_BEARER_TOKEN", "a\r\nX-Injected: 1", "WEBHOOK_BEARER_TOKEN: contains a line break"},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			err := wantRejected(t, tc.name, tc.value, tc.want)
			if tc.name == "WEBHOOK_URL" && strings.Contains(err.Error(), tc.value) {
				t.Fatalf("the URL (which may hold a secret) was echoed: %v", err)
			}
		})
	}
}
