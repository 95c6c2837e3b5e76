package evidence

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

func mustVerify(t *testing.T, data []byte, pinned ed25519.PublicKey) *CertificateResult {
	t.Helper()
	res, err := VerifyCertificate(data, pinned)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return res
}

// sealedUnverified seals session id, which fails the findings check, and
// checks that the export refuses it; it returns what the verifier makes of
// a certificate built anyway, which must be refused too.
func sealedUnverified(t *testing.T, l *ledger.Ledger, id uuid.UUID) *CertificateResult {
	t.Helper()
	ctx := context.Background()
	if _, err := l.Seal(ctx, id, "agent"); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildCertificate(ctx, l, id); !errors.Is(err, ErrUnverified) {
		t.Fatalf("BuildCertificate: %v; want ErrUnverified", err)
	}
	data, _, err := buildCertificate(ctx, l, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return mustVerify(t, data, testIssuerPub(t))
}

func TestCertificateVerifiesOffline(t *testing.T) {
	_, id, data := fixtureCertificate(t)
	res := mustVerify(t, data, testIssuerPub(t))
	if !res.Valid {
		t.Fatalf("valid certificate rejected: %+v", res.Pillars)
	}
	if res.SessionID != id.String() || !res.Sealed || res.Status != "completed" || !res.IssuerPinned || res.Findings != 4 {
		t.Fatalf("summary: %+v", res)
	}
	for i, p := range res.Pillars {
		if p.Name != PillarNames[i] || !p.OK {
			t.Fatalf("pillar %d: %+v", i, p)
		}
	}
	// Unpinned: valid but the result says it is only self-consistent.
	res = mustVerify(t, data, nil)
	if !res.Valid || res.IssuerPinned || !strings.Contains(res.Pillar(PillarIssuer).Note, "NOT PINNED") {
		t.Fatalf("unpinned: %+v", res.Pillar(PillarIssuer))
	}
	// Re-indenting keeps it valid: the signature covers the canonical body.
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "   "); err != nil {
		t.Fatal(err)
	}
	if res := mustVerify(t, buf.Bytes(), testIssuerPub(t)); !res.Valid {
		t.Fatalf("indented certificate rejected: %+v", res.Pillars)
	}
}

func TestCertificateOfRunningSession(t *testing.T) {
	l := newTestLedger(t)
	f := newSession(t, l)
	f.run("read_file", map[string]any{"path": "a.txt"}, "", "hello")
	data, err := BuildCertificate(context.Background(), l, f.id)
	if err != nil {
		t.Fatal(err)
	}
	res := mustVerify(t, data, testIssuerPub(t))
	if !res.Valid || res.Sealed || !strings.Contains(res.Pillar(PillarChain).Note, "not sealed") {
		t.Fatalf("running session: %+v", res)
	}
	// A certificate of an unknown session is not found.
	if _, err := BuildCertificate(context.Background(), l, [16]byte{1}); !IsNotFound(err) {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := BuildCertificate(context.Background(), l, ledger.InstanceSessionID); !errors.Is(err, ErrInstanceChain) {
		t.Fatalf("instance chain: %v", err)
	}
}

// edit parses a certificate, lets mutate change the body and re-signs it
// with the real issuer key, so only the pillar under test can fail.
func edit(t *testing.T, data []byte, mutate func(c *Certificate)) []byte {
	t.Helper()
	c, _, _, err := ParseCertificate(data)
	if err != nil {
		t.Fatal(err)
	}
	mutate(c)
	out, err := signCertificate(c, testIssuerKey(t))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventOfType returns the index of the first event of typ.
func eventOfType(c *Certificate, typ string) int {
	for i, e := range c.Events {
		if e.Type == typ {
			return i
		}
	}
	return -1
}

func TestCertificateTampering(t *testing.T) {
	_, _, data := fixtureCertificate(t)
	other, _, _ := ed25519.GenerateKey(nil)
	cases := []struct {
		name   string
		doc    func() []byte
		pinned ed25519.PublicKey
		pillar string
		want   string
	}{
		{"changed payload byte", func() []byte {
			return edit(t, data, func(c *Certificate) {
				i := eventOfType(c, ledger.TypeObservation)
				c.Events[i].Payload = strings.Replace(c.Events[i].Payload, "hunter2", "hunter3", 1)
			})
		}, nil, PillarChain, "recomputed from the stored bytes"},
		{"changed payload byte, not re-signed", func() []byte {
			return bytes.Replace(data, []byte("hunter2"), []byte("hunter3"), 1)
		}, nil, PillarIssuer, "does not verify"},
		{"dropped event", func() []byte {
			return edit(t, data, func(c *Certificate) {
				c.Events = append(c.Events[:5:5], c.Events[6:]...)
				c.Session.EventCount--
			})
		}, nil, PillarChain, "missing, duplicated or out of order"},
		{"dropped last event (the seal)", func() []byte {
			return edit(t, data, func(c *Certificate) {
				c.Events = c.Events[:len(c.Events)-1]
				c.Session.EventCount--
			})
		}, nil, PillarChain, "no session_sealed event"},
		{"reordered events", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Events[3], c.Events[4] = c.Events[4], c.Events[3] })
		}, nil, PillarChain, "out of order"},
		{"wrong issuer key", func() []byte { return data }, other, PillarIssuer, "not issued by the key you trust"},
		{"missing signature", func() []byte {
			c, body, _, _ := ParseCertificate(data)
			_ = c
			return []byte(`{"certificate":` + string(body) + `,"signature":null}`)
		}, nil, PillarIssuer, "not signed"},
		{"signature member absent", func() []byte {
			_, body, _, _ := ParseCertificate(data)
			return []byte(`{"certificate":` + string(body) + `}`)
		}, nil, PillarIssuer, "not signed"},
		{"missing event signature", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Events[2].Signature = nil })
		}, nil, PillarSignatures, "does not verify"},
		{"event signed by another key", func() []byte {
			return edit(t, data, func(c *Certificate) {
				h := c.Events[2].Hash
				_, priv, _ := ed25519.GenerateKey(nil)
				c.Events[2].Signature = ed25519.Sign(priv, h[:])
			})
		}, nil, PillarSignatures, "does not verify"},
		{"rotation key replaced", func() []byte {
			return edit(t, data, func(c *Certificate) {
				pub, _, _ := ed25519.GenerateKey(nil)
				c.Keys[1].PublicKey = HexBytes(pub)
			})
		}, nil, PillarSignatures, "disagrees with the chain"},
		{"forged checkpoint root", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Checkpoint.RootHash[0] ^= 1 })
		}, nil, PillarInclusion, "disagrees with the stored row"},
		{"forged checkpoint note", func() []byte {
			return edit(t, data, func(c *Certificate) {
				c.Checkpoint.Note = strings.Replace(c.Checkpoint.Note, "\n\n", "\n\n\n", 1)
			})
		}, nil, PillarInclusion, "checkpoint"},
		{"bad inclusion proof", func() []byte {
			return edit(t, data, func(c *Certificate) { c.InclusionProof.Nodes[0].Hash[5] ^= 0x40 })
		}, nil, PillarInclusion, "an event or a proof hash was changed"},
		{"inclusion proof node missing", func() []byte {
			return edit(t, data, func(c *Certificate) { c.InclusionProof.Nodes = c.InclusionProof.Nodes[1:] })
		}, nil, PillarInclusion, "proof node 0 is at level"},
		{"inclusion proof node added", func() []byte {
			return edit(t, data, func(c *Certificate) {
				c.InclusionProof.Nodes = append(c.InclusionProof.Nodes, c.InclusionProof.Nodes[0])
			})
		}, nil, PillarInclusion, "does not use"},
		{"event moved to another log index", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Events[7].LogIndex = c.Events[6].LogIndex })
		}, nil, PillarInclusion, "is not after the previous event's log index"},
		{"checkpoint smaller than the events", func() []byte {
			return edit(t, data, func(c *Certificate) { c.InclusionProof.TreeSize = 3 })
		}, nil, PillarInclusion, "the inclusion proof is for tree size 3"},
		{"high finding without evidence", func() []byte {
			return edit(t, data, func(c *Certificate) {
				c.Findings[1].EvidenceSequence, c.Findings[1].EvidenceQuotes = []int64{}, []string{}
			})
		}, nil, PillarBinding, "high and critical findings need evidence_sequence"},
		{"quote not in the cited observation", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Findings[0].EvidenceQuotes[0] = "admin_password: hunter3" })
		}, nil, PillarBinding, "which is not in observation"},
		{"finding cites a non-observation", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Findings[0].EvidenceSequence[0] = 2 })
		}, nil, PillarBinding, "not an observation"},
		{"finding added", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Findings = append(c.Findings, c.Findings[3]) })
		}, nil, PillarBinding, "differ from"},
		{"policy hash changed", func() []byte {
			return edit(t, data, func(c *Certificate) { p := sum("other policy"); c.PolicyHash = &p })
		}, nil, PillarBinding, "policy_hash"},
		{"goal changed", func() []byte {
			return edit(t, data, func(c *Certificate) {
				c.Session.Goal = "Something else"
				c.Session.GoalHash = ledger.GoalHash("Something else")
			})
		}, nil, PillarBinding, "goal"},
		{"seal removed from header", func() []byte {
			return edit(t, data, func(c *Certificate) { c.Session.SealedAt = nil })
		}, nil, PillarChain, "row is not sealed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pinned := tc.pinned
			if pinned == nil {
				pinned = testIssuerPub(t)
			}
			res, err := VerifyCertificate(tc.doc(), pinned)
			if err != nil {
				t.Fatalf("a tampered but well-formed certificate must give a result: %v", err)
			}
			if res.Valid {
				t.Fatal("tampered certificate verified")
			}
			p := res.Pillar(tc.pillar)
			if p.OK || !strings.Contains(p.Problem, tc.want) {
				t.Fatalf("pillar %s: %+v; want failure containing %q (all: %+v)", tc.pillar, p, tc.want, res.Pillars)
			}
		})
	}
}

// TestCertificateChainFindings writes findings the schema check would
// deny straight into a chain: the certificate is properly signed, and
// pillar 5 still fails.
func TestCertificateChainFindings(t *testing.T) {
	cases := []struct {
		name string
		f    map[string]any
		want string
	}{
		{"high without evidence", finding("high", "t", "e", "r", nil, nil), "need evidence_sequence"},
		{"quote not in observation", finding("critical", "t", "e", "r", []int64{-1}, []string{"not in there"}), "which is not in observation"},
		{"cites a verdict", finding("medium", "t", "e", "r", []int64{2}, nil), "not an observation"},
		{"more quotes than sequences", finding("low", "t", "e", "r", nil, []string{"x"}), "more quotes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			f := newSession(t, l)
			obs := f.run("read_file", map[string]any{"path": "a.txt"}, "", "PermitRootLogin yes")
			if seqs, ok := tc.f["evidence_sequence"].([]int64); ok && len(seqs) == 1 && seqs[0] == -1 {
				seqs[0] = obs
			}
			f.complete(tc.f)
			l.EndSession(context.Background(), f.id, ledger.StatusCompleted)
			if _, err := l.Seal(context.Background(), f.id, "test"); err != nil {
				t.Fatal(err)
			}
			// The export refuses such a session (it fails the findings check);
			// the verifier must refuse the certificate too, were one made.
			if _, err := BuildCertificate(context.Background(), l, f.id); !errors.Is(err, ErrUnverified) {
				t.Fatalf("BuildCertificate: %v; want ErrUnverified", err)
			}
			data, _, err := buildCertificate(context.Background(), l, f.id, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			res := mustVerify(t, data, testIssuerPub(t))
			p := res.Pillar(PillarBinding)
			if res.Valid || p.OK || !strings.Contains(p.Problem, tc.want) {
				t.Fatalf("got %+v; want pillar 5 failing with %q", p, tc.want)
			}
			for _, other := range PillarNames[:4] {
				if !res.Pillar(other).OK {
					t.Fatalf("pillar %s failed too: %+v", other, res.Pillar(other))
				}
			}
		})
	}
}

func TestCertificateMalformed(t *testing.T) {
	_, _, data := fixtureCertificate(t)
	cases := map[string][]byte{
		"empty":            nil,
		"not JSON":         []byte("hello"),
		"array":            []byte("[]"),
		"trailing data":    append(bytes.TrimSpace(bytes.Clone(data)), []byte(" {}")...),
		"duplicate member": []byte(`{"certificate":{"format":"ironvise-elc/v1"},"certificate":{"format":"x"},"signature":null}`),
		"unknown member":   bytes.Replace(data, []byte(`{"certificate":`), []byte(`{"extra":1,"certificate":`), 1),
		"other version":    bytes.Replace(data, []byte(`"format":"ironvise-elc/v2"`), []byte(`"format":"ironvise-elc/v9"`), 1),
		// v1 had no origin labels, v2 labels every event: a mix is refused.
		"v1 with labels":    bytes.Replace(data, []byte(`"format":"ironvise-elc/v2"`), []byte(`"format":"ironvise-elc/v1"`), 1),
		"v2 without labels": bytes.ReplaceAll(data, []byte(`,"origin":"ironvise"`), nil),
		"no certificate":    []byte(`{"signature":null}`),
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			// Unpinned, so the strict decoding is what refuses it; with
			// the pin most of these already fail the signature, which is
			// checked before anything is decoded.
			res, err := VerifyCertificate(doc, nil)
			if !errors.Is(err, ErrMalformedCertificate) || res == nil || res.Valid || len(res.Pillars) != 5 {
				t.Fatalf("got %v %+v", err, res)
			}
			if res, _ := VerifyCertificate(doc, testIssuerPub(t)); res == nil || res.Valid || len(res.Pillars) != 5 || res.Pillars[0].OK {
				t.Fatalf("pinned: got %+v; want invalid, the issuer signature failing", res)
			}
		})
	}
}

// TestCertificateGolden freezes the on-disk formats: each committed
// certificate verifies, and re-encoding its parsed body with the issuer
// key gives the same bytes. session.elc is a v1 certificate, written before
// events carried their origin: it is never rewritten, and must keep
// verifying (its observations are judged by their legacy binding).
// session-v2.elc is this build's format; -update rewrites only it.
func TestCertificateGolden(t *testing.T) {
	for _, tc := range []struct{ file, format string }{
		{"session.elc", CertificateFormatV1},
		{"session-v2.elc", CertificateFormatVersion},
	} {
		t.Run(tc.format, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			if *update && tc.format == CertificateFormatVersion {
				_, _, data := fixtureCertificate(t)
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join("testdata", "issuer.pub"), []byte(hexString(testIssuerPub(t))+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := mustVerify(t, data, testIssuerPub(t))
			if !res.Valid || res.Findings != 4 {
				t.Fatalf("golden certificate no longer verifies: %+v", res)
			}
			c, _, _, err := ParseCertificate(data)
			if err != nil {
				t.Fatal(err)
			}
			if c.Format != tc.format {
				t.Fatalf("format %s; want %s", c.Format, tc.format)
			}
			again, err := signCertificate(c, testIssuerKey(t))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Fatal("re-encoding the golden certificate changed its bytes: the format changed (bump CertificateFormatVersion, then go test -update)")
			}
			if c.IssuedAt != "2026-01-02T03:04:05.000000Z" {
				t.Fatalf("issued_at %s", c.IssuedAt)
			}
		})
	}
}

func TestCertificateBuildIsReproducibleForSealedSessions(t *testing.T) {
	l, id, data := fixtureCertificate(t)
	again, _, err := buildCertificate(context.Background(), l, id, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, again) {
		t.Fatal("two certificates of one sealed session differ")
	}
}
