package evidence

import (
	"crypto/ed25519"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxKeyFileBytes bounds an issuer key file: the whole output of
// `ironvise issuer-key`, in either form, is well under 1 KiB.
const maxKeyFileBytes = 4096

// ResolveIssuerPin turns a verifier's pin flags into the key it trusts.
// keyValue is the key itself (--issuer-key: hex, did:key, checkpoint
// verifier key or base64) and is never read as a file name; keyFile is the
// path of a file holding one (--issuer-key-file). Exactly one may be
// given. With neither, the result is ErrUnpinned unless allowUnpinned is
// true, in which case the key is nil and verification only shows that the
// document is self-consistent.
func ResolveIssuerPin(keyValue, keyFile string, allowUnpinned bool) (ed25519.PublicKey, error) {
	switch {
	case keyValue != "" && keyFile != "":
		return nil, fmt.Errorf("evidence: --issuer-key and --issuer-key-file both given: pass the key once, either as its value or as a file")
	case keyValue != "":
		// The value is only ever a key. Reading it as a file name first
		// let a file named like the real key, holding another key, make
		// a self-made certificate pass as pinned (issue 23, item 3).
		parse := ParseIssuerKey
		if strings.Contains(keyValue, "\n") {
			// --issuer-key "$(ironvise issuer-key)": the whole output.
			parse = ParseIssuerKeyText
		}
		k, err := parse(keyValue)
		if err != nil {
			return nil, fmt.Errorf("--issuer-key: %w (for a file holding the key use --issuer-key-file)", err)
		}
		return k, nil
	case keyFile != "":
		k, err := readIssuerKeyFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("--issuer-key-file: %w", err)
		}
		return k, nil
	case allowUnpinned:
		return nil, nil
	}
	return nil, ErrUnpinned
}

// readIssuerKeyFile reads an issuer public key from a small file: what
// `ironvise issuer-key` prints or writes with --output, or one of its
// forms alone (ParseIssuerKeyText).
func readIssuerKeyFile(path string) (ed25519.PublicKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read issuer key %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read issuer key %s: %w", path, err)
	}
	if len(b) > maxKeyFileBytes {
		return nil, fmt.Errorf("read issuer key %s: larger than %d bytes, not a key file", path, maxKeyFileBytes)
	}
	k, err := ParseIssuerKeyText(string(b))
	if err != nil {
		return nil, fmt.Errorf("issuer key file %s: %w", path, err)
	}
	return k, nil
}
