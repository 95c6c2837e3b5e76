package evidence

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/ironvise/ironvise/internal/ledger"
)

// ParseIssuerKey reads an issuer public key in any form `ironvise
// issuer-key` prints: 64 hex digits, a did:key, the checkpoint verifier
// key ("ironvise/<id>+<hash>+<base64>") or the base64 of the 32 key bytes.
func ParseIssuerKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "did:key:") {
		return ParseDIDKey(s)
	}
	if len(s) == 2*ed25519.PublicKeySize {
		if b, err := hex.DecodeString(s); err == nil {
			return ed25519.PublicKey(b), nil
		}
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
		return ed25519.PublicKey(b), nil
	}
	// Note verifier key: name+hash+base64(0x01 ‖ key), the hash 8 hex
	// digits; the base64 may itself contain '+'.
	if parts := strings.SplitN(s, "+", 3); len(parts) == 3 && len(parts[1]) == 8 {
		b, err := base64.StdEncoding.DecodeString(parts[2])
		if err == nil && len(b) == 1+ed25519.PublicKeySize && b[0] == 1 {
			pub := ed25519.PublicKey(b[1:])
			if want, err := ledger.CheckpointVerifierKey(parts[0], pub); err == nil && want == s {
				return pub, nil
			}
		}
		return nil, errors.New("evidence: issuer key: not a valid checkpoint verifier key")
	}
	return nil, fmt.Errorf("evidence: issuer key %q: want 64 hex digits, a did:key, a checkpoint verifier key or base64 of 32 bytes (ironvise issuer-key prints them)", truncateKey(s))
}

func truncateKey(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// WriteText prints the result for a person: one line per pillar, then the
// verdict. It is what verify-certificate and verify-cert print.
func (r *CertificateResult) WriteText(w io.Writer) error {
	var b bytes.Buffer
	state := "not sealed"
	if r.Sealed {
		state = "sealed"
	}
	if r.SessionID != "" {
		fmt.Fprintf(&b, "certificate of session %s (%s, %s), %d events, issued %s\n", r.SessionID, r.Status, state, r.EventCount, r.IssuedAt)
		fmt.Fprintf(&b, "goal: %s\n", oneLine(r.Goal))
	}
	for i, p := range r.Pillars {
		title := PillarTitle(p.Name)
		switch {
		case !p.OK && p.Sequence != nil:
			fmt.Fprintf(&b, "  %d. %-44s FAIL at seq %d: %s\n", i+1, title, *p.Sequence, p.Problem)
		case !p.OK:
			fmt.Fprintf(&b, "  %d. %-44s FAIL: %s\n", i+1, title, p.Problem)
		case p.Note != "":
			fmt.Fprintf(&b, "  %d. %-44s ok (%s)\n", i+1, title, p.Note)
		default:
			fmt.Fprintf(&b, "  %d. %-44s ok\n", i+1, title)
		}
	}
	if p := r.Consistency; p != nil {
		switch {
		case !p.OK:
			fmt.Fprintf(&b, "  +  %-44s FAIL: %s\n", PillarTitle(p.Name), p.Problem)
		default:
			fmt.Fprintf(&b, "  +  %-44s ok (%s)\n", PillarTitle(p.Name), p.Note)
		}
	}
	if n := len(r.ClientEvents); n > 0 {
		// Labelled, so no reader takes a client's words for IronVise's
		// record.
		fmt.Fprintf(&b, "%d event(s) appended by a client through the API (recorded as said, never evidence):\n", n)
		for _, c := range r.ClientEvents {
			label := "client"
			if c.Inferred {
				label = "client, inferred: written before origins were recorded"
			}
			fmt.Fprintf(&b, "  seq %d %s (%s)", c.Sequence, c.Type, label)
			if c.Note != "" {
				fmt.Fprintf(&b, ": %s", c.Note)
			}
			b.WriteByte('\n')
		}
	}
	if r.CertificateKeyID != "" || r.PinnedKeyID != "" {
		pinned := r.PinnedKeyID
		if !r.IssuerPinned {
			pinned = "none (NOT pinned)"
		}
		fmt.Fprintf(&b, "issuer key: certificate names %s, pinned %s\n", orNone(r.CertificateKeyID), pinned)
	}
	if f, failed := r.FirstFailure(); failed {
		fmt.Fprintf(&b, "certificate INVALID: %s failed\n", PillarTitle(f.Name))
	} else {
		pin := "issuer key pinned"
		if !r.IssuerPinned {
			pin = "issuer key NOT pinned: pass --issuer-key or --issuer-key-file to check who issued it"
		}
		also := ""
		if r.Consistency != nil {
			also = " and the log is consistent with your checkpoint"
		}
		fmt.Fprintf(&b, "certificate valid: all %s pillars hold%s (issuer %s, %s)\n", pillarCount(len(r.Pillars)), also, r.IssuerKeyID, pin)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// oneLine shortens text for a one-line display; control characters
// (a hostile goal could carry terminal escape sequences) are replaced.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	if len(s) > 120 {
		cut := 120
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(not read)"
	}
	return s
}

// pillarCount names how many pillars a valid result holds.
func pillarCount(n int) string {
	if n == 6 {
		return "six"
	}
	return "five"
}
