package evidence

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// completedSession writes a completed, unsealed session.
func completedSession(t *testing.T, l *ledger.Ledger) uuid.UUID {
	t.Helper()
	f := newSession(t, l)
	obs := f.run("read_file", map[string]any{"path": "sshd_config"}, "", "PermitRootLogin yes\n")
	f.complete(finding("high", "Root login", "sshd", "disable it", []int64{obs}, []string{"PermitRootLogin yes"}))
	if err := l.EndSession(context.Background(), f.id, ledger.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	return f.id
}

func TestVCRoundTrip(t *testing.T) {
	l := newTestLedger(t)
	ctx := context.Background()
	id := completedSession(t, l)
	s, _ := l.Session(ctx, id)
	ev, err := AppendVC(ctx, l, id)
	if err != nil {
		t.Fatal(err)
	}
	var p vcPayload
	if err := json.Unmarshal(ev.Payload, &p); err != nil || ev.Type != ledger.TypeVerifiableCredential {
		t.Fatalf("event: %s %s", ev.Type, ev.Payload)
	}
	c, err := VerifyVC(p.VCJWT, l.IssuerPublicKey())
	if err != nil {
		t.Fatal(err)
	}
	sub := c.VC.Subject
	tip, _ := l.Events(ctx, id, ev.Seq-1, 1)
	if c.Issuer != ledger.DIDKey(l.IssuerPublicKey()) || c.Subject != id.String() || sub.GoalHash != s.GoalHash ||
		sub.PolicyHash == nil || *sub.PolicyHash != s.PolicyHash || sub.TipHash != tip[0].Hash.String() || sub.TipSequence != ev.Seq-1 ||
		sub.Status != "completed" || sub.Checkpoint.TreeSize <= tip[0].LogIndex || sub.Checkpoint.Origin != l.Origin() {
		t.Fatalf("claims: %+v", c)
	}
	// The named checkpoint exists, is signed and covers the tip.
	cp, err := l.CheckpointBySize(ctx, sub.Checkpoint.TreeSize)
	if err != nil || cp.Root.String() != sub.Checkpoint.RootHash {
		t.Fatalf("checkpoint %+v: %v", sub.Checkpoint, err)
	}
	// The ledger still verifies with the credential in it, and sealing
	// afterwards works.
	if _, err := l.Seal(ctx, id, "test"); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.VerifySession(ctx, id); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	// The API objects.
	v, err := SessionVC(ctx, l, id)
	if err != nil || v.VCJWT != p.VCJWT || !v.Proof || v.EventCount != int(ev.Seq)+2 || string(v.VCPayload) == "null" {
		t.Fatalf("SessionVC: %+v %v", v, err)
	}
	vv, err := VerifySessionVC(ctx, l, id)
	if err != nil || !vv.Valid {
		t.Fatalf("VerifySessionVC: %+v %v", vv, err)
	}
	js, _ := json.Marshal(vv)
	if !strings.HasPrefix(string(js), `{"valid":true,"signature_verified":true,"vc_jwt":"ey`) {
		t.Fatalf("VcVerify shape: %s", js)
	}
	js, _ = json.Marshal(VCVerification{Reason: "bad signature"})
	if string(js) != `{"valid":false,"reason":"bad signature"}` {
		t.Fatalf("invalid shape: %s", js)
	}
	// No credential: ErrNoCredential.
	other := newSession(t, l)
	if _, err := SessionVC(ctx, l, other.id); !errors.Is(err, ErrNoCredential) {
		t.Fatalf("no credential: %v", err)
	}
}

// resign re-signs claims with key (a forger with their own key).
func resign(t *testing.T, jwt string, key ed25519.PrivateKey, mutate func(c map[string]any)) string {
	t.Helper()
	parts := strings.Split(jwt, ".")
	pb, _ := unb64(parts[1])
	var c map[string]any
	json.Unmarshal(pb, &c)
	mutate(c)
	nb, _ := json.Marshal(c)
	input := parts[0] + "." + b64(nb)
	return input + "." + b64(ed25519.Sign(key, []byte(input)))
}

func TestVCRejects(t *testing.T) {
	l := newTestLedger(t)
	id := completedSession(t, l)
	now := time.Now()
	jwt, err := issueVC(context.Background(), l, id, now)
	if err != nil {
		t.Fatal(err)
	}
	pin := l.IssuerPublicKey()
	parts := strings.Split(jwt, ".")
	_, forger, _ := ed25519.GenerateKey(nil)
	forgerPub := forger.Public().(ed25519.PublicKey)
	tamper := func(mutate func(c map[string]any)) string {
		pb, _ := unb64(parts[1])
		var c map[string]any
		json.Unmarshal(pb, &c)
		mutate(c)
		nb, _ := json.Marshal(c)
		return parts[0] + "." + b64(nb) + "." + parts[2]
	}
	cases := []struct {
		name   string
		jwt    string
		pinned ed25519.PublicKey
		want   string
	}{
		{"tampered tip hash", tamper(func(c map[string]any) {
			c["vc"].(map[string]any)["credentialSubject"].(map[string]any)["tip_hash"] = strings.Repeat("0", 64)
		}), pin, "bad signature"},
		{"tampered subject", tamper(func(c map[string]any) { c["sub"] = uuid.NewString() }), pin, "bad signature"},
		{"wrong pinned key", jwt, forgerPub, "pinned issuer key"},
		{"forged by another key under its own did", func() string {
			did := ledger.DIDKey(forgerPub)
			h := b64([]byte(`{"alg":"EdDSA","kid":"` + did + "#" + strings.TrimPrefix(did, "did:key:") + `","typ":"JWT"}`))
			f := resign(t, jwt, forger, func(c map[string]any) {
				c["iss"] = did
				c["vc"].(map[string]any)["issuer"] = did
			})
			fp := strings.Split(f, ".")
			input := h + "." + fp[1]
			forged := input + "." + b64(ed25519.Sign(forger, []byte(input)))
			if _, err := verifyVC(forged, nil, now); err != nil {
				t.Fatalf("the forgery is self-consistent, so only pinning can reject it: %v", err)
			}
			return forged
		}(), pin, "pinned issuer key"},
		{"forged by another key claiming the issuer's did", resign(t, jwt, forger, func(map[string]any) {}), nil, "bad signature"},
		{"alg none", b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + ".", pin, "not signed"},
		{"alg HS256", b64([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + parts[1] + "." + parts[2], pin, `algorithm "HS256"`},
		{"truncated", parts[0] + "." + parts[1], pin, "compact JWS"},
		{"padding in base64", jwt + "=", pin, "base64url"},
		{"duplicate claim", parts[0] + "." + b64([]byte(`{"iss":"a","iss":"b"}`)) + "." + parts[2], pin, "duplicate"},
		{"unknown header field", b64([]byte(`{"alg":"EdDSA","jku":"https://evil.example/keys"}`)) + "." + parts[1] + "." + parts[2], pin, "unknown field"},
		{"expired", resign(t, jwt, ed25519.NewKeyFromSeed(sha256Seed("ironvise evidence test issuer")), func(c map[string]any) {
			c["exp"] = now.Add(-time.Hour).Unix()
		}), pin, "expired"},
		{"not yet valid", resign(t, jwt, ed25519.NewKeyFromSeed(sha256Seed("ironvise evidence test issuer")), func(c map[string]any) {
			c["nbf"] = now.Add(time.Hour).Unix()
		}), pin, "not valid before"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verifyVC(tc.jwt, tc.pinned, now)
			if !errors.Is(err, ErrInvalidCredential) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want %q", err, tc.want)
			}
		})
	}
	if _, err := verifyVC(jwt, pin, now); err != nil {
		t.Fatalf("the untouched credential must verify: %v", err)
	}
	if _, err := verifyVC(jwt, nil, now); err != nil {
		t.Fatalf("unpinned, resolved from did:key: %v", err)
	}
}

func sha256Seed(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

func TestDIDKeyRoundTrip(t *testing.T) {
	for range 50 {
		pub, _, _ := ed25519.GenerateKey(nil)
		got, err := ParseDIDKey(ledger.DIDKey(pub))
		if err != nil || !got.Equal(pub) {
			t.Fatalf("%x: %v", pub, err)
		}
	}
	zero := make([]byte, 32)
	if got, err := ParseDIDKey(ledger.DIDKey(zero)); err != nil || !got.Equal(ed25519.PublicKey(zero)) {
		t.Fatalf("zero key: %v", err)
	}
	for _, bad := range []string{"", "did:key:", "did:key:z", "did:web:example.com", "did:key:z0OIl", "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme", "did:key:z11" + strings.TrimPrefix(ledger.DIDKey(zero), "did:key:z")} {
		if _, err := ParseDIDKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestMerkleRootMatchesTlog(t *testing.T) {
	for n := 0; n <= 70; n++ {
		hs := make([]ledger.Hash, n)
		var stored []tlog.Hash
		// read serves tlog the hashes stored so far.
		read := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(ix))
			for j, x := range ix {
				out[j] = stored[x]
			}
			return out, nil
		})
		for i := range hs {
			hs[i] = sha256.Sum256([]byte{byte(i), byte(i >> 8)})
			add, err := tlog.StoredHashes(int64(i), hs[i][:], read)
			if err != nil {
				t.Fatal(err)
			}
			stored = append(stored, add...)
		}
		want, err := tlog.TreeHash(int64(n), read)
		if err != nil {
			t.Fatal(err)
		}
		if got := MerkleRoot(hs); got != ledger.Hash(want) {
			t.Fatalf("n=%d: got %s want %x", n, got, want)
		}
	}
}

func TestCompliance(t *testing.T) {
	l := newTestLedger(t)
	id := buildFixture(t, l)
	c, err := Compliance(context.Background(), l, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionID != id.String() || !c.Sealed || c.EventCount != len(c.Events) || c.Events[0].Type != "genesis" ||
		c.Events[0].ContentHash != c.Events[0].PayloadHash || c.TipHash != c.Events[len(c.Events)-1].ContentHash ||
		c.Checkpoint.TreeSize == 0 || c.Checkpoint.EventID == nil || len(c.Checkpoint.Signature) != 128 {
		t.Fatalf("compliance: %+v", c)
	}
	if _, err := Compliance(context.Background(), l, uuid.New()); !IsNotFound(err) {
		t.Fatalf("unknown session: %v", err)
	}
}
