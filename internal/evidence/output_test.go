package evidence

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

func TestParseIssuerKey(t *testing.T) {
	for range 20 {
		pub, _, _ := ed25519.GenerateKey(nil)
		vkey, err := ledger.CheckpointVerifierKey(ledger.OriginPrefix+ledger.KeyID(pub), pub)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{hex.EncodeToString(pub), " " + ledger.DIDKey(pub) + "\n", vkey, base64.StdEncoding.EncodeToString(pub)} {
			got, err := ParseIssuerKey(s)
			if err != nil || !got.Equal(pub) {
				t.Fatalf("%q: %v", s, err)
			}
		}
	}
	for _, bad := range []string{"", "zz", "did:key:zabc", "a+b+c", "ironvise/x+00000000+AAAA", hex.EncodeToString(make([]byte, 31))} {
		if _, err := ParseIssuerKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
