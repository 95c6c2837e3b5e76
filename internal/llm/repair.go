package llm

import (
	"context"
	"fmt"
	"slices"
)

// maxRepairErrorBytes bounds the parse error quoted back to the model.
const maxRepairErrorBytes = 1024

// Proposal is the outcome of ProposeIntent.
type Proposal struct {
	// Reply is the text for the schema check: the first reply when it
	// parsed, else the repair attempt's reply (which may still fail; the
	// schema check then denies it).
	Reply string
	// Repaired is true when the first reply failed to parse and a repair
	// attempt was made. FirstReply and FirstError are then the failed reply
	// and its parse error, for the schema_error event.
	Repaired   bool
	FirstReply string
	FirstError error
	// Usage sums both calls; Model is the model of the last reply.
	Usage Usage
	Model string
}

// ProposeIntent asks the model for one intent. When the reply does not
// parse, the model gets exactly one repair attempt: the conversation
// continues with its own reply and a user turn quoting the parse error.
//
// A non-nil error is a transport failure (it counts toward
// AGENT_LLM_ERROR_LIMIT); a Proposal whose Reply still fails to parse is
// not an error here, it is denied by the schema check
// (docs/design/checks.md#check-order). If the repair call itself fails, the
// returned Proposal still carries FirstReply and FirstError so the caller can
// record them.
func ProposeIntent(ctx context.Context, c Client, req Request, parse func(string) error) (Proposal, error) {
	req.Kind = KindAgent
	first, err := c.Complete(ctx, req)
	if err != nil {
		return Proposal{}, err
	}
	p := Proposal{Reply: first.Text, Usage: first.Usage, Model: first.Model}
	perr := parse(first.Text)
	if perr == nil {
		return p, nil
	}
	p.Repaired, p.FirstReply, p.FirstError = true, first.Text, perr

	repair := req
	repair.Messages = append(slices.Clone(req.Messages),
		Message{Role: RoleAssistant, Content: first.Text},
		Message{Role: RoleUser, Content: RepairPrompt(perr)},
	)
	second, err := c.Complete(ctx, repair)
	if err != nil {
		return p, fmt.Errorf("llm: repair attempt: %w", err)
	}
	p.Reply, p.Usage, p.Model = second.Text, p.Usage.Add(second.Usage), second.Model
	return p, nil
}

// RepairPrompt is the user turn that shows the model why its reply was
// rejected.
func RepairPrompt(parseErr error) string {
	msg := parseErr.Error()
	if len(msg) > maxRepairErrorBytes {
		cut := maxRepairErrorBytes
		for cut > 0 && msg[cut]&0xC0 == 0x80 {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return "Your reply was rejected by the schema check: " + msg + "\n" +
		"Reply again with exactly one JSON object with the keys action, params, justification and reasoning, " +
		"and nothing else: no prose, no second object, no extra keys."
}
