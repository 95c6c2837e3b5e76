package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/google/uuid"
)

// Hash is a SHA-256 digest: an event hash, a prev_hash, a Merkle node.
type Hash [32]byte

// String returns the lowercase hex form used on every wire.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText implements encoding.TextMarshaler (lowercase hex).
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// ParseHash parses 64 hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 64 {
		return h, fmt.Errorf("ledger: parse hash %q: want 64 hex digits", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("ledger: parse hash %q: %w", s, err)
	}
	return h, nil
}

// Domain separators of the v1 formulas
// (docs/design/ledger.md#canonical-hashing). A different formula gets a
// different version string; verification never falls back silently.
const (
	eventDomainV1   = "ironvise/event/v1"
	sessionDomainV1 = "ironvise/session/v1"
	// HashVersion names the event hash formula this build writes and
	// verifies.
	HashVersion = "v1"
)

// GenesisPrevHash is the prev_hash of sequence 0 of the chain id:
// H("ironvise/session/v1" ‖ 0x00 ‖ session_id[16]).
func GenesisPrevHash(id uuid.UUID) Hash {
	h := sha256.New()
	h.Write([]byte(sessionDomainV1))
	h.Write([]byte{0})
	h.Write(id[:])
	var out Hash
	h.Sum(out[:0])
	return out
}

// EventHash computes the v1 event hash
// (docs/design/ledger.md#canonical-hashing):
//
//	H("ironvise/event/v1" ‖ 0x00 ‖ prev_hash[32] ‖ session_id[16] ‖ u64be(seq) ‖
//	  i64be(created_at_micros) ‖ u32be(len(type)) ‖ type ‖ SHA-256(payload)[32])
//
// Every field has a fixed width or a length prefix, so no two distinct
// events share an input.
func EventHash(prev Hash, session uuid.UUID, seq uint64, createdMicros int64, typ string, payload []byte) Hash {
	var buf [len(eventDomainV1) + 1 + 32 + 16 + 8 + 8 + 4]byte
	n := copy(buf[:], eventDomainV1)
	buf[n] = 0
	n++
	n += copy(buf[n:], prev[:])
	n += copy(buf[n:], session[:])
	binary.BigEndian.PutUint64(buf[n:], seq)
	n += 8
	binary.BigEndian.PutUint64(buf[n:], uint64(createdMicros))
	n += 8
	binary.BigEndian.PutUint32(buf[n:], uint32(len(typ)))
	n += 4
	ph := sha256.Sum256(payload)
	h := sha256.New()
	h.Write(buf[:n])
	h.Write([]byte(typ))
	h.Write(ph[:])
	var out Hash
	h.Sum(out[:0])
	return out
}

// GoalHash is the SHA-256 hex of the UTF-8 goal, which must already be
// trimmed (docs/design/ledger.md#data-model).
func GoalHash(goal string) string {
	s := sha256.Sum256([]byte(goal))
	return hex.EncodeToString(s[:])
}
