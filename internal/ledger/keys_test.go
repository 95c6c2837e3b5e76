package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

func TestSigningKeyIsRedacted(t *testing.T) {
	k, err := GenerateSigningKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	seedText := fmt.Sprintf("%x", k.seed())
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("key", "k", k)
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k), logs.String()} {
		if strings.Contains(s, seedText) || strings.Contains(s, seedText[:16]) {
			t.Fatalf("private key printed: %s", s)
		}
	}
	// No marshalling reveals the private half: there is no way out of the
	// type but encrypted key storage.
	var v any = k
	if _, ok := v.(encoding.TextMarshaler); ok {
		t.Fatal("SigningKey is a TextMarshaler: its private half can be exported")
	}
	if _, ok := v.(encoding.BinaryMarshaler); ok {
		t.Fatal("SigningKey is a BinaryMarshaler: its private half can be exported")
	}
	back, err := SigningKeyFromSeed(k.seed())
	if err != nil || !back.Equal(k) {
		t.Fatalf("seed round trip: %v", err)
	}
	other, _ := GenerateSigningKey(nil)
	if k.Equal(other) {
		t.Fatal("different keys compare equal")
	}
}

// TestSignJWS: a JWS signed by SignJWS verifies as ordinary EdDSA JWS
// verifiers check it (Ed25519 over the signing input, RFC 8037), and its
// signatures and event-hash signatures cannot stand in for each other.
//
// Domain separation without Ed25519ctx or a prefix (which ordinary JWS
// verifiers would not apply): Sign signs exactly 32 bytes, SignJWS only
// inputs longer than 32 bytes shaped header.payload with an EdDSA header.
// The two message sets are disjoint, so no signature the key makes over one
// is a signature over a member of the other.
func TestSignJWS(t *testing.T) {
	k, _ := GenerateSigningKey(nil)
	enc := base64.RawURLEncoding.EncodeToString
	input := enc([]byte(`{"alg":"EdDSA","typ":"JWT"}`)) + "." + enc([]byte(`{"iss":"did:key:z6Mk","sub":"session"}`))
	sig, err := k.SignJWS([]byte(input))
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(k.Public(), []byte(input), sig) {
		t.Fatal("the JWS signature does not verify over its signing input")
	}

	h := Hash(sha256.Sum256([]byte("an event")))
	hashSig := k.Sign(h)
	if ed25519.Verify(k.Public(), h[:], sig) || ed25519.Verify(k.Public(), []byte(input), hashSig) {
		t.Fatal("a JWS signature and an event-hash signature stand in for each other")
	}
	// 32 bytes shaped exactly like a JWS input: still not signed, as the
	// 32 bytes of an event hash are not.
	short := enc([]byte(`{"alg":"EdDSA"}`)) + "." + strings.Repeat("A", 11)
	if len(short) != len(h) {
		t.Fatalf("test input is %d bytes", len(short))
	}
	header := enc([]byte(`{"alg":"EdDSA"}`))
	payload := enc([]byte(`{"claims":"long enough to pass the length rule"}`))
	for name, in := range map[string]string{
		"event hash":             string(h[:]),
		"32-byte jws shape":      short,
		"no dot":                 header + payload,
		"a whole jws":            header + "." + payload + "." + enc(sig),
		"empty payload":          enc([]byte(`{"alg":"EdDSA","typ":"JWT","kid":"long enough"}`)) + ".",
		"padding":                header + "." + payload + "==",
		"standard base64":        header + "." + payload + "+/",
		"alg none":               enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload,
		"alg hs256":              enc([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + payload,
		"header not json":        enc([]byte(`alg=EdDSA, typ=JWT, padding`)) + "." + payload,
		"header a json string":   enc([]byte(`"{\"alg\":\"EdDSA\"}"`)) + "." + payload,
		"arbitrary long message": strings.Repeat("x", 200),
	} {
		if sig, err := k.SignJWS([]byte(in)); err == nil {
			t.Errorf("%s: SignJWS(%q) signed: %x", name, in, sig)
		}
	}
}

func TestBase58(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte("Hello World!"), "2NEpo7TZRRrLZSi2U"},
		{[]byte{0, 0, 1}, "112"},
		{[]byte{}, ""},
	}
	for _, tc := range tests {
		if got := base58(tc.in); got != tc.want {
			t.Errorf("base58(%x) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestIssuerKeyFile(t *testing.T) {
	dir := t.TempDir()
	k1, created, err := LoadOrCreateIssuerKey(dir)
	if err != nil || !created {
		t.Fatalf("first run: created=%v, %v", created, err)
	}
	path := IssuerKeyPath(dir)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Fatalf("issuer key mode %v; want 0600", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !bytes.HasPrefix(b, []byte("-----BEGIN PRIVATE KEY-----")) {
		t.Fatalf("issuer key is not PEM PKCS#8: %.40s", b)
	}
	k2, created, err := LoadOrCreateIssuerKey(dir)
	if err != nil || created || !k1.Equal(k2) {
		t.Fatalf("second run: created=%v equal=%v, %v", created, k1.Equal(k2), err)
	}
	if runtime.GOOS != "windows" {
		os.Chmod(path, 0o644)
		if _, _, err := LoadOrCreateIssuerKey(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Fatalf("world-readable key: %v; want a refusal naming the fix", err)
		}
		os.Chmod(path, 0o600)
	}
	os.WriteFile(filepath.Join(dir, "keys", "issuer.ed25519"), []byte("garbage"), 0o600)
	if _, _, err := LoadOrCreateIssuerKey(dir); err == nil {
		t.Fatal("garbage key file accepted")
	}
	if _, _, err := LoadOrCreateIssuerKey(""); err == nil {
		t.Fatal("empty data dir accepted")
	}
}

func TestKEK(t *testing.T) {
	k, _ := newKEK(kekPassphrase, []byte("pw"), "inst")
	ct, err := k.seal([]byte("secret seed"), []byte("row-1"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := k.open(ct, []byte("row-1")); err != nil || string(pt) != "secret seed" {
		t.Fatalf("open = %q, %v", pt, err)
	}
	if _, err := k.open(ct, []byte("row-2")); err == nil {
		t.Fatal("ciphertext opened under another row's AAD")
	}
	other, _ := newKEK(kekPassphrase, []byte("pw"), "another instance")
	if _, err := other.open(ct, []byte("row-1")); err == nil {
		t.Fatal("same passphrase in another ledger opened the key")
	}
	ct[len(ct)-1] ^= 1
	if _, err := k.open(ct, []byte("row-1")); err == nil {
		t.Fatal("modified ciphertext opened")
	}
}

func TestCheckpointNote(t *testing.T) {
	k, _ := GenerateSigningKey(nil)
	origin := OriginPrefix + KeyID(k.Public())
	root := LeafHash(Hash{1})
	cp, err := signCheckpoint(origin, 42, root, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyCheckpoint(&cp, origin, k.Public()); err != nil {
		t.Fatal(err)
	}
	// Any signed-note verifier accepts it with the published verifier key.
	vkey, _ := CheckpointVerifierKey(origin, k.Public())
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(cp.Note, note.VerifierList(v))
	if err != nil || n.Text != CheckpointBody(origin, 42, root) {
		t.Fatalf("note.Open = %v, %v", n, err)
	}
	other, _ := GenerateSigningKey(nil)
	if VerifyCheckpoint(&cp, origin, other.Public()) == nil {
		t.Fatal("checkpoint verified with another key")
	}
	bad := cp
	bad.TreeSize = 43
	if VerifyCheckpoint(&bad, origin, k.Public()) == nil {
		t.Fatal("checkpoint row with another size verified")
	}
	bad = cp
	bad.Note = bytes.Replace(cp.Note, []byte("\n42\n"), []byte("\n43\n"), 1)
	if VerifyCheckpoint(&bad, origin, k.Public()) == nil {
		t.Fatal("edited note verified")
	}
}

func TestReportJSON(t *testing.T) {
	r := Report{Chain: pass(""), Signatures: pass(""), Goal: fail(0, "x"), Log: fail(-1, "y"), Seal: fail(4, "z")}
	if r.OK() {
		t.Fatal("failed report is OK")
	}
	name, c, ok := r.FirstFailure()
	if !ok || name != "goal" || c.Seq != 0 {
		t.Fatalf("FirstFailure = %s %+v", name, c)
	}
	b, _ := json.Marshal(r)
	if !bytes.Contains(b, []byte(`"goal":{"ok":false,"seq":0,"problem":"x"}`)) {
		t.Fatalf("report JSON %s", b)
	}
}
