package agent

import (
	"context"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// Hooks of the loop into evidence and SIEM egress. Both are optional
// fields of Env; the loop behaves the same without them.

// Notifier receives the ledger events SIEM egress may forward
// (docs/design/ledger.md#siem-egress): every deny verdict, every aborted
// sandbox result, every observation, and the seal of a session that ended
// aborted. Notify is called on the agent loop right after the event
// committed, so it must not block: queue and return. *webhook.Dispatcher
// implements it.
type Notifier interface {
	Notify(ev ledger.Event)
}

// CredentialIssuer records the verifiable credential of a session that
// completed (docs/design/ledger.md#evidence-exports); Run calls it after the
// session ended completed and before the seal. evidence.Credentials
// implements it.
type CredentialIssuer interface {
	IssueCredential(ctx context.Context, session uuid.UUID) error
}

// Notify hands a committed event of this session to the environment's
// notifier, if any. Callers that end and seal a session outside Run (exec)
// pass the seal event, so a session that ended aborted reaches SIEM
// egress as well.
func (s *Session) Notify(ev ledger.Event) {
	if s.env.Notifier != nil {
		s.env.Notifier.Notify(ev)
	}
}
