package evidence

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/ledger"
)

// The issuer key file is what `ironvise issuer-key` prints and what
// `issuer-key --output FILE` writes: one labelled line per form of the same
// key. Every verifier reads it with --issuer-key-file, so the output
// redirected to a file is a key file as it stands. A file holding one form
// alone (the hex that `issuer-key --json | jq -r .public_key` writes) or the
// --json object reads too. Blank lines and lines starting with '#' are
// skipped, so an operator may annotate the file.
const (
	labelHex      = "public key (hex)"
	labelKeyID    = "key id"
	labelDID      = "did:key"
	labelVerifier = "checkpoint verifier key"
)

// IssuerKeyText is the issuer key file of pub, whose checkpoint verifier
// key is verifierKey: the hex, the key id, the did:key and the verifier
// key, one labelled line each.
func IssuerKeyText(pub ed25519.PublicKey, verifierKey string) []byte {
	var b bytes.Buffer
	for _, l := range [][2]string{
		{labelHex, hex.EncodeToString(pub)}, {labelKeyID, ledger.KeyID(pub)},
		{labelDID, ledger.DIDKey(pub)}, {labelVerifier, verifierKey},
	} {
		fmt.Fprintf(&b, "%-25s%s\n", l[0], l[1])
	}
	return b.Bytes()
}

// IssuerKeyJSON is the --json form of `ironvise issuer-key`; it reads as a
// key file too.
type IssuerKeyJSON struct {
	PublicKey             string `json:"public_key"`
	KeyID                 string `json:"key_id"`
	DID                   string `json:"did"`
	Origin                string `json:"origin"`
	CheckpointVerifierKey string `json:"checkpoint_verifier_key"`
}

// ParseIssuerKeyText reads an issuer key file's contents (see
// IssuerKeyText): labelled lines, lines holding one form of the key
// alone, or the --json object. Every key the text holds must be the same
// key and every key id must be its id; anything else — an unknown label, a
// second key, text that is no key — is an error, so a file that was
// tampered with or mixed up never pins a key by accident.
func ParseIssuerKeyText(text string) (ed25519.PublicKey, error) {
	if !utf8.ValidString(text) {
		return nil, errors.New("evidence: issuer key: not UTF-8 text")
	}
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") {
		return parseIssuerKeyJSON(t)
	}
	var c keyCollector
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		value := fields[len(fields)-1]
		label := strings.TrimSpace(strings.TrimSuffix(line, value))
		if err := c.add(label, value); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	return c.key()
}

// parseIssuerKeyJSON reads the --json form; unknown fields are refused.
func parseIssuerKeyJSON(text string) (ed25519.PublicKey, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var j IssuerKeyJSON
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("evidence: issuer key JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("evidence: issuer key JSON: text after the object")
	}
	var c keyCollector
	for _, f := range [][2]string{{labelHex, j.PublicKey}, {labelKeyID, j.KeyID}, {labelDID, j.DID}, {labelVerifier, j.CheckpointVerifierKey}} {
		if f[1] == "" {
			continue
		}
		if err := c.add(f[0], f[1]); err != nil {
			return nil, fmt.Errorf("evidence: issuer key JSON: %w", err)
		}
	}
	return c.key()
}

// keyCollector gathers the forms of one key and checks that they agree.
type keyCollector struct {
	pub ed25519.PublicKey
	ids []string
}

// add takes one labelled (or, with label "", unlabelled) value.
func (c *keyCollector) add(label, value string) error {
	switch label {
	case labelKeyID:
		c.ids = append(c.ids, value)
		return nil
	case "", labelHex, labelDID, labelVerifier:
	default:
		return fmt.Errorf("evidence: issuer key: unknown label %q (want %q, %q, %q or %q, as 'ironvise issuer-key' prints them)",
			truncateKey(label), labelHex, labelKeyID, labelDID, labelVerifier)
	}
	k, err := ParseIssuerKey(value)
	if err != nil {
		return err
	}
	if c.pub != nil && !c.pub.Equal(k) {
		return fmt.Errorf("evidence: issuer key: %s is a different key than the one before it (key id %s, not %s): the file mixes two issuers", truncateKey(value), ledger.KeyID(k), ledger.KeyID(c.pub))
	}
	c.pub = k
	return nil
}

// key is the collected key once every key id matched it.
func (c *keyCollector) key() (ed25519.PublicKey, error) {
	if c.pub == nil {
		return nil, errors.New("evidence: issuer key: no key found (want the output of 'ironvise issuer-key', or one of its forms alone)")
	}
	for _, id := range c.ids {
		if id != ledger.KeyID(c.pub) {
			return nil, fmt.Errorf("evidence: issuer key: key id %s is not the id of the key (%s)", truncateKey(id), ledger.KeyID(c.pub))
		}
	}
	return c.pub, nil
}
