package guard

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// mac computes HMAC-SHA256(key, label ‖ payload).
func mac(key []byte, label string, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write(payload)
	return m.Sum(nil)
}

// seal builds one protocol line, '\n' included. payload must be compact
// JSON (json.Marshal output): it is placed verbatim, so the receiver's MAC
// input is byte for byte what was MACed here.
func seal(key []byte, label string, payload []byte) []byte {
	sum := mac(key, label, payload)
	line := make([]byte, 0, len(payload)+100)
	line = append(line, `{"payload":`...)
	line = append(line, payload...)
	line = append(line, `,"mac":"`...)
	line = hex.AppendEncode(line, sum)
	line = append(line, "\"}\n"...)
	return line
}

// open verifies one line (without its '\n') and returns the raw payload
// bytes. The payload is not decoded here: decoding happens only after the
// MAC check, so unauthenticated bytes never reach the payload decoder.
func open(key []byte, label string, line []byte) ([]byte, error) {
	payload, macHex, err := splitEnvelope(line)
	if err != nil {
		return nil, err
	}
	got, err := decodeMAC(macHex)
	if err != nil {
		return nil, err
	}
	// Constant-time comparison: a timing oracle would let a forger learn
	// the MAC byte by byte.
	if !hmac.Equal(mac(key, label, payload), got) {
		return nil, ErrBadMAC
	}
	return payload, nil
}

// splitEnvelope reads the envelope: exactly the keys "payload" (an
// object, kept as raw bytes) and "mac" (a string), once each, and nothing
// after the object. encoding/json alone would match keys
// case-insensitively and let a duplicate win, so it is read with
// strictjson.
func splitEnvelope(line []byte) (json.RawMessage, string, error) {
	var env struct {
		Payload json.RawMessage `json:"payload"`
		MAC     *string         `json:"mac"`
	}
	if err := strictjson.Unmarshal(line, maxPayloadDepth+1, &env); err != nil {
		return nil, "", fmt.Errorf("envelope: %w: %w", ErrMalformed, err)
	}
	if env.Payload == nil || env.MAC == nil {
		return nil, "", fmt.Errorf("envelope: needs both payload and mac: %w", ErrMalformed)
	}
	if env.Payload[0] != '{' {
		return nil, "", fmt.Errorf("envelope: payload is not an object: %w", ErrMalformed)
	}
	return env.Payload, *env.MAC, nil
}

// decodeMAC accepts exactly 64 lowercase hex digits, the one form seal
// writes.
func decodeMAC(s string) ([]byte, error) {
	if len(s) != 2*32 {
		return nil, fmt.Errorf("envelope: mac is %d characters, want 64: %w", len(s), ErrMalformed)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil, fmt.Errorf("envelope: mac is not lowercase hex: %w", ErrMalformed)
		}
	}
	return hex.DecodeString(s)
}

// sliceReader is the part of *bufio.Reader readLine uses; the worker's
// lineBuffer implements it too.
type sliceReader interface {
	ReadSlice(delim byte) ([]byte, error)
}

// readLine reads one '\n'-terminated line of at most max bytes, returned
// without the '\n' (a '\r' before it is kept, and fails decoding later). A
// longer line is consumed up to its '\n' and reported as ErrLineTooLong, so
// the stream stays in sync. A final line without '\n' is
// io.ErrUnexpectedEOF; a clean end is io.EOF.
func readLine(br sliceReader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+1 { // +1: the '\n' itself
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, ErrLineTooLong
			}
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 && !tooLong {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}
