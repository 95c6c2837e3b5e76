// Package localsock is the local daemon path of `ironvise exec`: `ironvise
// serve` listens on a Unix socket in the data directory and runs the exec
// requests it receives with its already-open ledger, scanner and sandbox
// tier (docs/operate/performance.md#daemon-path). This file holds the
// daemon's framing, one length-prefixed JSON message each way; the client
// is package execclient, and the messages are package wire's.
package localsock

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ironvise/ironvise/internal/localsock/wire"
	"github.com/ironvise/ironvise/internal/strictjson"
)

// The messages and their caps are package wire's, which exec's thin
// client shares without this package's imports.
const (
	MaxRequest  = wire.MaxRequest
	MaxResponse = wire.MaxResponse
)

// Path is the socket of the daemon serving dataDir.
func Path(dataDir string) string { return wire.Path(dataDir) }

// Request is one `ironvise exec` as the client shipped it.
type Request = wire.Request

// Response is what exec prints and exits with.
type Response = wire.Response

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
