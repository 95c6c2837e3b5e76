// Package redact is the one redactor for text that leaves a command:
// observations, ledger event payloads, the live log, the event stream,
// webhooks and reports (ARCHITECTURE.md, internal/redact).
//
// It removes credentials and nothing else. What the model must not read for
// other reasons (injection attempts) is the output scanner's business
// (internal/scan); the scanner calls this package first, so every scan
// redacts credentials whatever the sensitivity or policy.
//
// # Rules
//
// The rule set is the default configuration of gitleaks, a maintained
// secret scanner, built in as data (gitleaks.toml, MIT License, notice in
// gitleaks.LICENSE; compiled into the binary as gitleaks_rules.go), plus passes of IronVise's own for what a text stream
// shows and a repository scan does not expect:
//
//   - private-key: PEM private-key blocks, also when the END line is missing
//     (a cut observation, head -5 of a key file) or the block sits in a JSON
//     string with \n escapes;
//   - jwt: JSON Web Tokens whose first segment decodes to a JOSE header;
//   - url-password: the password of scheme://user:password@host;
//   - key-value-secret: KEY=value, KEY: value and "key": "value" pairs whose
//     key names a secret (password, secret, token, api_key, …), when the value
//     is not a placeholder or a reference and has some entropy.
//
// A rule of the gitleaks file runs only where one of its keywords occurs,
// and only over the lines around that occurrence; rules that need a file
// path are skipped (an observation has none), as are gitleaks' own
// private-key and jwt rules, which the passes above replace.
//
// # Placeholders and tags
//
// Each secret is replaced by a placeholder that names the rule and, when the
// Redactor has a salt, a tag:
//
//	[REDACTED:aws-access-token:hmac-sha256=5f1c0a9e2b7d3c41]
//
// The tag is the first 16 hex digits of HMAC-SHA256(salt, secret), where the
// secret is exactly the text the placeholder replaced. Sessions use their id
// as the salt ([ForSession]), so an auditor who holds the original file can
// confirm that a finding quoting the placeholder is about that secret,
// without the ledger storing it:
//
//	printf %s 'AKIA…' | openssl dgst -sha256 -mac HMAC -macopt key:<session id> | cut -c1-16
//
// or [Confirm] in Go. The same secret gets different tags in different
// sessions, so tags cannot be matched across sessions.
//
// # Known secret values
//
// [Values] replaces secrets whose values the process holds (the model API
// keys) with "[redacted]": one of MinSubstringSecret (8) bytes or more
// wherever it occurs, a shorter one only as a whole token, so a one-letter
// test key does not blank out every "k" of a message. The reasoning is in
// docs/threat-model.md#redaction-of-known-secret-values.
//
// # Usage
//
//	r := redact.ForSession(sessionID.String())
//	clean := r.String(text)               // text with placeholders
//	payload, changed, err := r.JSON(raw)  // every string of a JSON document
//
// # Updating the gitleaks rules
//
//	go mod download -json github.com/zricethezav/gitleaks/v8@<version>
//
// then copy config/gitleaks.toml from that module below the header of
// gitleaks.toml here, update the version in the header, regenerate the Go
// form the binary is built from:
//
//	go test ./internal/redact -run TestGeneratedRulesMatchTOML -update-rules
//
// and run the tests of this package: they compile every rule, fail on a
// field this package does not understand, and check gitleaks_rules.go
// against gitleaks.toml.
//
// # Limitations
//
//   - A tag is a commitment, not encryption: anyone who holds the ledger and
//     guesses a secret can test the guess. High-entropy keys cannot be
//     guessed; a weak database password can. Treat a ledger that recorded a
//     weak password as you would the password, and rotate it.
//   - Rules are patterns. A credential without a known shape, not assigned
//     to a key that names a secret, passes (a bare 12-character password in
//     free text).
//   - A secret split across two observations, or cut by the 64 KiB stream
//     cap, may leave a fragment (the PEM pass redacts a cut block whole).
//   - gitleaks allowlists are applied: a key ending in EXAMPLE, the
//     documented AWS sample key, is not redacted.
package redact
