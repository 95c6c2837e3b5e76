package mcpproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// EventPin is the event type of one tool's pin in a proxy session: the
// hash seen in this run and the hash accepted after it. Every proxy run
// records the whole table, so the newest session of a server name holds it.
const EventPin = "mcp_tool_pin"

// Pin statuses.
const (
	// PinFirstSeen: no earlier pin; the hash seen is pinned now.
	PinFirstSeen = "first_seen"
	// PinMatch: the definition is the pinned one.
	PinMatch = "match"
	// PinChanged: the definition differs from the pin; the tool is
	// withheld until the change is approved (ironvise mcp pins approve).
	PinChanged = "changed"
	// PinApproved: an operator accepted the definition last seen.
	PinApproved = "approved"
	// PinAbsent: pinned earlier, not offered in this run (carried over).
	PinAbsent = "absent"
)

// PinEvent is the payload of a mcp_tool_pin event.
type PinEvent struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// SHA256 is the hash of the definition seen in this run ("" when the
	// tool was not offered).
	SHA256 string `json:"sha256"`
	// Pinned is the accepted hash after this run ("" when none is: a
	// poisoned tool seen for the first time).
	Pinned string `json:"pinned_sha256"`
	Status string `json:"status"`
	// Withheld says the tool was not offered to the client, and Reason
	// why.
	Withheld bool   `json:"withheld"`
	Reason   string `json:"reason,omitempty"`
	// Labels are the scanner's labels on the description.
	Labels []string `json:"labels,omitempty"`
	// Definition is the tool's definition as seen, as JSON text
	// (credentials redacted, capped), so a reviewer can see what changed
	// before approving it.
	Definition string `json:"definition,omitempty"`
}

// ToolHash is the pin of a tool: the SHA-256 of the canonical JSON of its
// name, description and input schema.
func ToolHash(t *mcp.Tool) (string, error) {
	b, err := ledger.CanonicalJSON(map[string]any{"name": t.Name, "description": t.Description, "input_schema": t.InputSchema})
	if err != nil {
		return "", fmt.Errorf("tool %q: canonical JSON of its definition: %w", t.Name, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Goal is the goal of every session that records the pins of server name.
func Goal(name string) string { return "mcp proxy: " + name }

// PinTable is the latest pin event of each tool of one server name.
type PinTable struct {
	// Session is the session the table was read from (uuid.Nil: none).
	Session string
	Pins    map[string]PinEvent
}

// Sorted returns the pins sorted by tool name.
func (t PinTable) Sorted() []PinEvent {
	out := make([]PinEvent, 0, len(t.Pins))
	for _, p := range t.Pins {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// pageSize is how many sessions one listing reads while looking for pins.
const pageSize = 200

// LoadPins returns the pin table of server name: the pin events of the
// newest session with its goal that has any. Only events IronVise wrote
// count: an API client could append events named mcp_tool_pin to a
// session it created with the same goal, and they must not pin anything.
func LoadPins(ctx context.Context, l *ledger.Ledger, name string) (PinTable, error) {
	goal := Goal(name)
	for off := 0; ; off += pageSize {
		ss, err := l.Sessions(ctx, ledger.SessionFilter{Limit: pageSize, Offset: off})
		if err != nil {
			return PinTable{}, fmt.Errorf("read the pins of %q: %w", name, err)
		}
		for _, s := range ss {
			if s.Goal != goal {
				continue
			}
			evs, err := l.Events(ctx, s.ID, 0, 0)
			if err != nil {
				return PinTable{}, fmt.Errorf("read the pins of %q in session %s: %w", name, s.ID, err)
			}
			t := PinTable{Session: s.ID.String(), Pins: map[string]PinEvent{}}
			for _, ev := range evs {
				if ev.Type != EventPin || ledger.EventOrigin(ev.Payload) != ledger.OriginIronVise {
					continue
				}
				var p PinEvent
				if err := json.Unmarshal(ev.Payload, &p); err != nil {
					return PinTable{}, fmt.Errorf("session %s seq %d: unreadable pin: %w", s.ID, ev.Seq, err)
				}
				if p.Server == name {
					t.Pins[p.Tool] = p
				}
			}
			if len(t.Pins) > 0 {
				return t, nil
			}
		}
		if len(ss) < pageSize {
			return PinTable{Pins: map[string]PinEvent{}}, nil
		}
	}
}

// Approve accepts the last seen definition of tools of server name: it
// records the whole pin table, with those tools pinned to the hash last
// seen, in a new session under the server's goal, sealed by actor.
func Approve(ctx context.Context, l *ledger.Ledger, name string, tools []string, actor string) (uuid.UUID, error) {
	t, err := LoadPins(ctx, l, name)
	if err != nil {
		return uuid.Nil, err
	}
	if len(t.Pins) == 0 {
		return uuid.Nil, fmt.Errorf("no pins recorded for MCP server %q ('ironvise mcp pins --name %s' lists them once the proxy ran)", name, name)
	}
	for _, tool := range tools {
		p, ok := t.Pins[tool]
		switch {
		case !ok:
			return uuid.Nil, fmt.Errorf("MCP server %q has no tool %q in its pins", name, tool)
		case p.SHA256 == "":
			return uuid.Nil, fmt.Errorf("tool %q of %q was not offered in the last run: there is no definition to approve", tool, name)
		case p.SHA256 == p.Pinned:
			return uuid.Nil, fmt.Errorf("tool %q of %q is already pinned to the definition last seen", tool, name)
		}
		p.Pinned, p.Status, p.Withheld, p.Reason = p.SHA256, PinApproved, false, "approved by "+actor
		t.Pins[tool] = p
	}
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: Goal(name), SandboxTier: string(sandbox.TierNone)})
	if err != nil {
		return uuid.Nil, fmt.Errorf("record the approval: %w", err)
	}
	var recs []ledger.Record
	for _, p := range t.Sorted() {
		recs = append(recs, ledger.Record{Type: EventPin, Payload: p})
	}
	if _, err := l.AppendBatch(ctx, s.ID, recs); err != nil {
		return uuid.Nil, fmt.Errorf("record the approval: %w", err)
	}
	if err := l.EndSession(ctx, s.ID, ledger.StatusCompleted); err != nil {
		return uuid.Nil, fmt.Errorf("record the approval: %w", err)
	}
	if _, err := l.Seal(ctx, s.ID, actor); err != nil {
		return uuid.Nil, fmt.Errorf("record the approval: %w", err)
	}
	return s.ID, nil
}
