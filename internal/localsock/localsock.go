// Package localsock is the local daemon path of `ironvise exec`: `ironvise
// serve` listens on a Unix socket in the data directory and runs the exec
// requests it receives with its already-open ledger, scanner and sandbox
// tier (docs/operate/performance.md#daemon-path). This file holds what both
// ends share: the socket's path and the framing, one length-prefixed JSON
// message each way.
package localsock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// Size caps of one message. A request is a command line and a few names;
// a response carries the command's output, which the sandbox already caps.
const (
	MaxRequest  = 1 << 20
	MaxResponse = 64 << 20
)

// Path is the socket of the daemon serving dataDir.
func Path(dataDir string) string { return filepath.Join(dataDir, "run", "ironvise.sock") }

// Request is one `ironvise exec` as the client shipped it. Workspace is
// absolute (the client resolved it against its working directory), and
// Env is the client's candidate sandbox environment.
type Request struct {
	Command       string   `json:"command"`
	Session       string   `json:"session,omitempty"`
	Workspace     string   `json:"workspace"`
	Policy        string   `json:"policy,omitempty"`
	PolicySHA256  string   `json:"policy_sha256,omitempty"`
	Justification string   `json:"justification"`
	Env           []string `json:"env,omitempty"`
}

// Response is what exec prints and exits with. Error is the message exec
// prints as "ironvise: ERROR" (empty: none). NotStarted is true when the
// daemon ran nothing for the request (a refused peer, a bad request).
type Response struct {
	Stdout     []byte `json:"stdout,omitempty"`
	Stderr     []byte `json:"stderr,omitempty"`
	Code       int    `json:"code"`
	Error      string `json:"error,omitempty"`
	NotStarted bool   `json:"not_started,omitempty"`
}

// maxDepth bounds the nesting of a message; both types are flat.
const maxDepth = 8

// ErrTooLarge is returned for a message above its cap.
var ErrTooLarge = errors.New("localsock: message too large")

// WriteMessage writes v as one frame: a 4-byte big-endian length, then
// the JSON.
func WriteMessage(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxResponse {
		return ErrTooLarge
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := w.Write(append(hdr[:], b...)); err != nil {
		return err
	}
	return nil
}

// ReadMessage reads one frame of at most limit bytes into v with the
// strict decoder (no duplicate or unknown members).
func ReadMessage(r io.Reader, limit int, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if uint64(n) > uint64(limit) {
		return fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return strictjson.Unmarshal(b, maxDepth, v)
}
