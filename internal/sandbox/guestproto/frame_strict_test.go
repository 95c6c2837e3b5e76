package guestproto

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
)

// rawFrame frames payload bytes as WriteFrame frames a Result's encoding,
// so a payload WriteFrame would never write can be tried.
func rawFrame(nonce string, payload []byte, exit, status string) []byte {
	sum := sha256.Sum256(payload)
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n%s %s %s\n|%s\n", beginMarker, version, nonce, base64.StdEncoding.EncodeToString(payload))
	fmt.Fprintf(&b, "%s %s %s exit=%s status=%s bytes=%d sha256=%s\n", endMarker, version, nonce, exit, status, len(payload), hex.EncodeToString(sum[:]))
	return b.Bytes()
}

// TestParseFrameStrictPayload: the result payload is read strictly, like
// every untrusted JSON: a duplicate member (the end marker and the host
// could read different statuses), a case-folded name or data after the
// object make the frame corrupt.
func TestParseFrameStrictPayload(t *testing.T) {
	const tail = `"stdout":"","stderr":"","stdout_total":0,"stderr_total":0,"duration_ms":1,"uid":1000,"no_new_privs":true}`
	good := `{"status":"ok","exit_code":0,` + tail
	if _, err := ParseFrame(rawFrame(testNonce, []byte(good), "0", "ok"), testNonce); err != nil {
		t.Fatalf("the well-formed payload: %v", err)
	}
	for name, payload := range map[string]string{
		"duplicate status": `{"status":"error","status":"ok","exit_code":0,` + tail,
		"duplicate exit":   `{"status":"ok","exit_code":1,"exit_code":0,` + tail,
		"case-folded name": `{"Status":"ok","exit_code":0,` + tail,
		"trailing data":    good + ` {"status":"error"}`,
		"trailing brace":   good + `}`,
	} {
		if _, err := ParseFrame(rawFrame(testNonce, []byte(payload), "0", "ok"), testNonce); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v; want ErrCorrupt", name, err)
		}
	}
}
