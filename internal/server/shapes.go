package server

import (
	"encoding/hex"
	"strconv"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
)

// appendEventJSON appends the Event of docs/design/api.md#event-shape to b.
// payload replaces the stored payload (the stream's redacted copy); redacted,
// when non-nil, adds the stream's "redacted" member. It is hand-written
// because the feed renders every event once and the payload must stay byte
// for byte.
func appendEventJSON(b []byte, e *ledger.Event, payload []byte, redacted *bool) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, e.ID(), 10)
	b = append(b, `,"session_id":`...)
	if e.SessionID == uuid.Nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		b = append(b, e.SessionID.String()...)
		b = append(b, '"')
	}
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"previous_hash":"`...)
	b = hex.AppendEncode(b, e.PrevHash[:])
	b = append(b, `","content_hash":"`...)
	b = hex.AppendEncode(b, e.Hash[:])
	b = append(b, `","payload":`...)
	if payload == nil {
		payload = e.Payload
	}
	b = append(b, payload...)
	b = append(b, `,"created_at":"`...)
	b = append(b, ts(e.CreatedAt())...)
	b = append(b, `","signature":"`...)
	b = hex.AppendEncode(b, e.Signature)
	b = append(b, `","public_key":"`...)
	b = hex.AppendEncode(b, e.PublicKey)
	b = append(b, '"')
	if redacted != nil {
		b = append(b, `,"redacted":`...)
		b = strconv.AppendBool(b, *redacted)
	}
	return append(b, '}')
}

// eventsJSON renders a list of events.
func eventsJSON(evs []ledger.Event) []byte {
	b := make([]byte, 0, 512*len(evs)+2)
	b = append(b, '[')
	for i := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEventJSON(b, &evs[i], nil, nil)
	}
	return append(b, ']')
}

// eventRef is the short event reference of IntentResult and SealResult.
type eventRef struct {
	ID          int64  `json:"id"`
	Sequence    uint64 `json:"sequence"`
	Type        string `json:"type,omitempty"`
	ContentHash string `json:"content_hash"`
}

func refOf(e *ledger.Event) eventRef {
	return eventRef{ID: e.ID(), Sequence: e.Seq, Type: e.Type, ContentHash: e.Hash.String()}
}

// checkpointJSON is the Checkpoint of docs/design/api.md#checkpoints with the
// signed note and the log's origin line.
type checkpointJSON struct {
	evidence.CheckpointInfo
	Note   string `json:"note"`
	Origin string `json:"origin"`
}

func toCheckpoint(c *ledger.Checkpoint, origin string) checkpointJSON {
	return checkpointJSON{CheckpointInfo: evidence.NewCheckpointInfo(c), Note: string(c.Note), Origin: origin}
}

// sessionOf is the Session of docs/design/api.md#session-shape.
func sessionOf(s *ledger.Session) ledger.SessionJSON { return s.JSON() }
