package evidence

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

func TestParseIssuerKeyText(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	vkey, err := ledger.CheckpointVerifierKey("ironvise/test", pub)
	if err != nil {
		t.Fatal(err)
	}
	text := string(IssuerKeyText(pub, vkey))
	js, _ := json.MarshalIndent(IssuerKeyJSON{PublicKey: hex.EncodeToString(pub), KeyID: ledger.KeyID(pub), DID: ledger.DIDKey(pub), Origin: "ironvise/test", CheckpointVerifierKey: vkey}, "", "  ")
	good := map[string]string{
		"issuer-key output":    text,
		"CRLF and comments":    "# from the operator, 2026-06-01\r\n\r\n" + strings.ReplaceAll(text, "\n", "\r\n"),
		"hex alone":            hex.EncodeToString(pub) + "\n",
		"did alone":            ledger.DIDKey(pub),
		"verifier key alone":   vkey + "\n\n",
		"two unlabelled forms": hex.EncodeToString(pub) + "\n" + ledger.DIDKey(pub) + "\n",
		"--json output":        string(js) + "\n",
		"--json, key only":     `{"did": "` + ledger.DIDKey(pub) + `"}`,
	}
	for name, in := range good {
		if k, err := ParseIssuerKeyText(in); err != nil || !k.Equal(pub) {
			t.Errorf("%s: %x, %v; want the key", name, k, err)
		}
	}
	bad := map[string]string{
		"empty":               "",
		"comments only":       "# nothing\n",
		"two keys":            text + hex.EncodeToString(other) + "\n",
		"wrong key id":        strings.Replace(text, ledger.KeyID(pub), ledger.KeyID(other), 1),
		"key id alone":        "key id                   " + ledger.KeyID(pub) + "\n",
		"unknown label":       "public key               " + hex.EncodeToString(pub) + "\n",
		"not a key":           "hello\n",
		"json unknown field":  `{"public_key": "` + hex.EncodeToString(pub) + `", "extra": 1}`,
		"json two keys":       `{"public_key": "` + hex.EncodeToString(pub) + `", "did": "` + ledger.DIDKey(other) + `"}`,
		"json trailing":       `{"public_key": "` + hex.EncodeToString(pub) + `"} {}`,
		"json no key":         `{"origin": "x"}`,
		"not UTF-8":           hex.EncodeToString(pub) + "\n\xff\n",
		"hex with label typo": strings.Replace(text, "did:key  ", "did:kee  ", 1),
	}
	for name, in := range bad {
		if k, err := ParseIssuerKeyText(in); err == nil {
			t.Errorf("%s: parsed %x; want an error", name, k)
		}
	}
}
