package ledger

// Event type names. These are wire names (docs/design/api.md#event-payloads,
// docs/design/checks.md#check-events, docs/design/agent.md#agent-loop): SDK
// clients parse them, so they never change. Producers define the payload
// structs; the ledger only stores canonical JSON.
const (
	// TypeGenesis is sequence 0 of every chain (written by the ledger).
	TypeGenesis = "genesis"
	// TypePromptInput is sequence 1 of a session: {content: goal}.
	TypePromptInput = "prompt_input"
	// TypeThought is an agent or client thought.
	TypeThought = "thought"
	// TypeObservation is scanned, redacted command output or client input.
	TypeObservation = "observation"
	// TypeAction is the signed commit of an approved intent, before it runs.
	TypeAction = "action"
	// TypeIntentProposed records every proposed intent.
	TypeIntentProposed = "intent_proposed"
	// TypeSchemaError records a malformed LLM reply before its repair.
	TypeSchemaError = "schema_error"
	// TypeCheckVerdict records the verdict of one check.
	TypeCheckVerdict = "check_verdict"
	// TypeApprovalRequired records an opened approval gate.
	TypeApprovalRequired = "approval_required"
	// TypeApprovalDecision records the decision of an approval gate.
	TypeApprovalDecision = "approval_decision"
	// TypeSandboxResult records what the sandbox enforced and how the
	// command ended.
	TypeSandboxResult = "sandbox_result"
	// TypeEgress records one network connection a command opened through
	// the egress proxy, allowed or refused; it follows its command's
	// sandbox_result in the step (docs/ledger.md#egress-events).
	TypeEgress = "egress"
	// TypeWorkspaceDiff records what a command changed in its session's
	// overlay (ECTO_SANDBOX_WORKSPACE=overlay): the change set, the step,
	// and whether forbidden paths discarded it; it follows its command's
	// sandbox_result in the step (docs/ledger.md#workspace-events).
	TypeWorkspaceDiff = "workspace_diff"
	// TypeWorkspaceApplied records that a session's accepted changes were
	// written to the real workspace (ironvise apply): who, which steps,
	// which paths (docs/ledger.md#workspace-events).
	TypeWorkspaceApplied = "workspace_applied"
	// TypeWorkspaceDiscarded records that an ended session's accepted
	// changes were thrown away unapplied (ironvise discard): who, which
	// steps, which paths (docs/ledger.md#workspace-events).
	TypeWorkspaceDiscarded = "workspace_discarded"
	// TypeSessionHalted records a stop other than a circuit breaker.
	TypeSessionHalted = "session_halted"
	// TypeCircuitBreaker records a consecutive-limit stop.
	TypeCircuitBreaker = "circuit_breaker"
	// TypeSnapshot records an agent state snapshot.
	TypeSnapshot = "snapshot"
	// TypeRecovery records that a crashed owner's session was failed
	// (written by the ledger, issuer-signed).
	TypeRecovery = "recovery"
	// TypeKeyRotation names the next signing key, signed by the current one
	// (written by the ledger).
	TypeKeyRotation = "key_rotation"
	// TypeKeyRevocation is reserved; nothing writes it in this milestone.
	TypeKeyRevocation = "key_revocation"
	// TypeCheckpoint records a signed tree head on the instance chain
	// (written by the ledger).
	TypeCheckpoint = "checkpoint"
	// TypeSessionSealed closes a session's chain (written by the ledger).
	TypeSessionSealed = "session_sealed"
	// TypeAdminChange records an administrative write on the instance chain.
	TypeAdminChange = "admin_change"
	// TypeChatMessage records a chat message.
	TypeChatMessage = "chat_message"
	// TypeVerifiableCredential carries the VC-JWT issued on completion.
	TypeVerifiableCredential = "verifiable_credential"
	// TypeAnchor is reserved for later anchoring features.
	TypeAnchor = "anchor"
	// TypeCrossLedgerSeal is reserved (docs/design/agent.md#multi-agent).
	TypeCrossLedgerSeal = "cross_ledger_seal"
)

// ledgerWritten are the types only the ledger writes: Append refuses them
// so that a producer cannot forge a seal, a rotation or a checkpoint.
var ledgerWritten = map[string]bool{
	TypeGenesis:       true,
	TypeKeyRotation:   true,
	TypeCheckpoint:    true,
	TypeSessionSealed: true,
	TypeRecovery:      true,
}

// IsLedgerWritten reports whether typ is written only by the ledger itself,
// so Append refuses it.
func IsLedgerWritten(typ string) bool { return ledgerWritten[typ] }

// issuerSignable are the only types verification accepts with an issuer
// signature in a session chain (docs/design/ledger.md#signing-keys): events
// written by a process that cannot obtain the session key.
var issuerSignable = map[string]bool{
	TypeRecovery:      true,
	TypeSessionSealed: true,
	TypeAdminChange:   true,
}

// IssuerSignable reports whether verification accepts an issuer signature on
// an event of type typ.
func IssuerSignable(typ string) bool { return issuerSignable[typ] }

// validType reports whether typ is a well-formed type name: 1 to 64 bytes
// of [a-z0-9_]. The hash framing would accept any bytes, but a narrow
// alphabet keeps the names safe to print and to use as metric labels.
func validType(typ string) bool {
	if len(typ) == 0 || len(typ) > 64 {
		return false
	}
	for i := 0; i < len(typ); i++ {
		c := typ[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}
