// Package webhook is IronVise's SIEM egress
// (docs/design/ledger.md#siem-egress, docs/design/api.md#webhook-delivery):
// it forwards guard denials, tripwire rejections, sandbox aborts and session
// aborts (and, for API-registered webhooks that ask, policy denials and
// observations) to HTTP receivers as JSON, ArcSight CEF or IBM LEEF 2.0.
//
// # Usage
//
//	opts := webhook.FromConfig(cfg.Webhook)   // WEBHOOK_URL and the shared settings
//	opts.Source = l                           // add the ledger's registered webhooks
//	opts.Version, opts.Logger = version, log
//	d, err := webhook.New(opts)
//	defer d.Close(ctx)                        // delivers what is queued until ctx ends
//	env.Notifier = d                          // the agent loop calls d.Notify(event)
//	st := d.Stats()                           // queued, delivered, failed, dropped, retries, depth
//
// # Delivery
//
// Notify never blocks: it puts the committed ledger event on a bounded
// intake queue, or drops and counts it. One goroutine classifies events
// ([Classify]), redacts their payloads (redact.Payload, as the event stream)
// and renders each format once; one worker per URL then POSTs in order,
// at most RateLimit attempts per second, retrying timeouts, connection
// failures, 5xx, 408 and 429 with jittered exponential backoff. Each
// request carries Authorization: Bearer (a webhook's own token overrides
// WEBHOOK_BEARER_TOKEN) and, with WEBHOOK_HMAC_SECRET, an
// X-EctoLedger-Timestamp header and X-EctoLedger-Signature: sha256=<hex>
// over "timestamp.body" ([Sign]). Bodies carry the event's id, session id,
// sequence and content hash so a SIEM entry can be traced to the ledger.
//
// # Targets
//
// Targets must be public addresses unless WEBHOOK_ALLOW_PRIVATE_TARGETS is
// set: local names and non-public IP literals are refused when configured
// ([ValidateURL] for the API's create-time check), every address is
// checked again at connect time, no proxy is used and redirects are never
// followed.
//
// # Limitations
//
// Delivery is at most once per attempt budget and in memory only: events
// queued when the process stops, or dropped because a queue was full, are
// not re-sent (the ledger keeps them; Stats counts them). The CEF and LEEF
// free-text field is cut at 1023 bytes. The JSON payload is the redacted
// event payload, so it no longer matches the event's content hash.
package webhook
