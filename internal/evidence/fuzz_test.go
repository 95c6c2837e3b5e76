package evidence

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzVerifyCertificate feeds arbitrary documents to the offline
// verifier: it must never panic, never report a document valid unless it
// is the untouched golden certificate or a re-encoding of it, and always
// return five pillars.
func FuzzVerifyCertificate(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "session.elc"))
	if err != nil {
		f.Fatal(err)
	}
	// The real certificate: the one input that must verify.
	f.Add(golden)
	// Truncated in the middle of the events: unreadable.
	f.Add(golden[:len(golden)/2])
	// One payload byte changed: readable, invalid.
	f.Add(bytes.Replace(golden, []byte("hunter2"), []byte("hunter3"), 1))
	// The signature removed: "not signed" must fail pillar 1.
	f.Add(bytes.Replace(golden, []byte(`"signature":{`), []byte(`"signature":null,"x":{`), 1))
	// Smallest shapes around the outer object.
	f.Add([]byte(`{"certificate":{"format":"ironvise-elc/v1"},"signature":null}`))
	f.Add([]byte(`{"certificate":null}`))
	// An empty event list with a signature block of the wrong size.
	f.Add([]byte(`{"certificate":{"format":"ironvise-elc/v1","issued_at":"","issuer":{"key_id":"","public_key":"00","did":"","origin":""},"session":{"id":"00000000-0000-0000-0000-000000000001","goal":"","goal_hash":"","policy_hash":null,"status":"","created_at":"","finished_at":null,"sealed_at":null,"llm_backend":"","llm_model":"","sandbox_tier":"","agent_loop":false,"session_public_key":"","session_did":"","event_count":0},"policy_hash":null,"keys":[],"events":[],"checkpoint":{"tree_size":1,"root_hash":"0000000000000000000000000000000000000000000000000000000000000000","timestamp":"","key_id":"","public_key":"","signature":"","note":""},"seal_checkpoint":null,"inclusion_proof":{"tree_size":1,"nodes":[]},"findings":[]},"signature":{"alg":"Ed25519","key_id":"","value":"00"}}`))
	// Deep nesting, duplicate members and invalid UTF-8.
	f.Add(bytes.Repeat([]byte("["), 600))
	f.Add([]byte(`{"certificate":{},"certificate":{}}`))
	f.Add([]byte("{\"certificate\":\"\xff\"}"))
	pin := testIssuerPub(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := VerifyCertificate(data, pin)
		if res == nil || len(res.Pillars) != 5 {
			t.Fatalf("no five-pillar result (err %v)", err)
		}
		if err != nil && res.Valid {
			t.Fatal("an unreadable document reported valid")
		}
		if res.Valid {
			// Anything valid must carry exactly the golden body.
			c, _, _, err := ParseCertificate(data)
			if err != nil {
				t.Fatal(err)
			}
			again, err := signCertificate(c, testIssuerKey(t))
			if err != nil || !bytes.Equal(again, golden) {
				t.Fatalf("a document other than the golden certificate verified:\n%s", data)
			}
		}
	})
}

// FuzzVerifyVC feeds arbitrary strings to the credential verifier.
func FuzzVerifyVC(f *testing.F) {
	// A well-formed credential shape, not signed by the test issuer.
	f.Add("eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.e30.AAAA")
	// Empty, one part, four parts.
	f.Add("")
	f.Add("a")
	f.Add("a.b.c.d")
	// alg none with an empty signature.
	f.Add(b64([]byte(`{"alg":"none"}`)) + "." + b64([]byte(`{}`)) + ".")
	pin := testIssuerPub(f)
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, jwt string) {
		if c, err := verifyVC(jwt, pin, now); err == nil || c != nil {
			// Only the issuer key can make a credential verify, and the
			// fuzzer does not have it.
			t.Fatalf("forged credential verified: %q", jwt)
		}
	})
}
