package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Egress events. A command run in proxy mode (Config.Egress) returns one
// egress.Record per connection it opened through the proxy; each becomes an
// egress event of the command's step, staged right after its
// sandbox_result, so the whole run (result, connections, observation)
// commits in the one transaction the step already pays for.

// egressEvent is the payload of an egress event: the proxy's Record and the
// step and intent it belongs to. Every string passes the session's
// redactor like any other payload (stageRecord): a host name is chosen by
// the command, and a credential spelled as a DNS label must not reach the
// ledger, the stream or a webhook.
type egressEvent struct {
	Step     int    `json:"step"`
	IntentID string `json:"intent_id"`
	egress.Record
}

// MaxEgressLines caps the lines about refused connections that an
// observation carries; the rest are counted in one more line. Every
// connection is in the ledger either way.
const MaxEgressLines = 5

// stageEgress stages the egress events of a command's run in the order the
// proxy reported them; a refused connection reaches SIEM egress once
// committed.
func (s *Session) stageEgress(res *StepResult, recs []egress.Record) error {
	for _, r := range recs {
		var done func(ledger.Event)
		if r.Verdict == verdict.Deny {
			done = s.Notify
		}
		if _, err := s.stageRecord(ledger.TypeEgress, egressEvent{Step: res.Step, IntentID: res.IntentID, Record: r}, done); err != nil {
			return fmt.Errorf("record egress: %w", err)
		}
	}
	return nil
}

// egressLines are the observation's lines about refused connections, at
// most MaxEgressLines of them and then a count: the model learns which
// host was refused and why, in the words the proxy used, without a flood
// from a command that retried a thousand times.
func egressLines(recs []egress.Record) []string {
	var out []string
	n := 0
	for _, r := range recs {
		if r.Verdict != verdict.Deny {
			continue
		}
		n++
		if n > MaxEgressLines {
			continue
		}
		out = append(out, "[egress] refused: "+egressTarget(r)+" — "+oneLine(r.Reason))
	}
	if n > MaxEgressLines {
		out = append(out, fmt.Sprintf("[egress] and %d more refused connections (every one is in the ledger)", n-MaxEgressLines))
	}
	return out
}

// egressTarget names a connection's destination as host:port.
func egressTarget(r egress.Record) string {
	h := r.Host
	if h == "" {
		h = r.Addr
	}
	if h == "" {
		h = "(no host)"
	}
	if r.Port == 0 || strings.Contains(h, "]:") {
		return h
	}
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(int(r.Port))
}

// oneLine keeps a reason on one line: a newline in it (a host name can
// carry none, but a reason quotes what the client sent) would forge a
// line of the observation.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// withEgressLines inserts lines after the observation's headline (its
// first line), ahead of the output that the observation cap may cut.
func withEgressLines(text string, lines []string) string {
	if len(lines) == 0 {
		return text
	}
	head, rest, _ := strings.Cut(text, "\n")
	return head + "\n" + strings.Join(lines, "\n") + "\n" + rest
}
