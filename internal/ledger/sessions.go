package ledger

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/enclave"
)

// sessionGenesis is the payload of sequence 0 of a session
// (docs/design/ledger.md#canonical-hashing,
// docs/design/api.md#event-payloads).
type sessionGenesis struct {
	Message          string  `json:"message"`
	Nonce            string  `json:"nonce"`
	SessionPublicKey string  `json:"session_public_key"`
	Goal             string  `json:"goal"`
	GoalHash         string  `json:"goal_hash"`
	PolicyHash       *string `json:"policy_hash"`
	TripwireHash     string  `json:"tripwire_hash"`
	GuardRequired    bool    `json:"guard_required"`
	LLMBackend       string  `json:"llm_backend"`
	LLMModel         string  `json:"llm_model"`
	SandboxTier      string  `json:"sandbox_tier"`
	// AgentLoop is what the session row's agent_loop shows; sessions
	// created before it was signed lack the member (verify.go checkGoal).
	AgentLoop bool `json:"agent_loop"`
	// Network is the sandbox network of the session's commands; absent
	// for sessions that run no command under IronVise's network rules and
	// for sessions created before it was recorded.
	Network *SessionNetwork `json:"network,omitempty"`
	// Workspace is the workspace mode of the session's commands; absent
	// like Network.
	Workspace *SessionWorkspace `json:"workspace,omitempty"`
	// Enclave is the attestation of the enclave the session's guard runs
	// in (docs/enclaves.md); absent without one.
	Enclave *enclave.Attestation `json:"enclave,omitempty"`
}

// CreateSession creates a running session owned by this process, with a
// fresh Ed25519 key (kept in memory and stored encrypted), and commits its
// sequence 0 (genesis) and 1 (prompt_input with the goal) before
// returning.
func (l *Ledger) CreateSession(ctx context.Context, spec SessionSpec) (*Session, error) {
	op, _, err := l.CreateSessionOp(spec)
	if err != nil {
		return nil, fmt.Errorf("ledger: create session: %w", err)
	}
	res, err := l.Commit(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("ledger: create session: %w", err)
	}
	return res[0].(*Session), nil
}

// CreateSessionOp prepares what CreateSession writes as an Op, so that a
// caller can commit the new session together with its first records (one
// durable transaction instead of two). The session id is known at once;
// the Op's result is the *Session.
func (l *Ledger) CreateSessionOp(spec SessionSpec) (Op, uuid.UUID, error) {
	goal := strings.TrimSpace(spec.Goal)
	switch {
	case goal == "":
		return Op{}, uuid.Nil, fmt.Errorf("%w: empty goal", ErrInvalidPayload)
	case strings.ContainsRune(goal, 0):
		return Op{}, uuid.Nil, fmt.Errorf("%w: goal contains NUL", ErrInvalidPayload)
	case !utf8.ValidString(goal):
		// JSON encoding would replace the bad bytes, so the recorded goal
		// would differ from the hashed one.
		return Op{}, uuid.Nil, fmt.Errorf("%w: goal is not valid UTF-8", ErrInvalidPayload)
	}
	if spec.PolicyHash != "" {
		if _, err := ParseHash(spec.PolicyHash); err != nil || strings.ToLower(spec.PolicyHash) != spec.PolicyHash {
			return Op{}, uuid.Nil, fmt.Errorf("%w: policy hash %q is not 64 lowercase hex digits", ErrInvalidPayload, spec.PolicyHash)
		}
	}
	id, err := uuid.NewV7FromReader(l.rand)
	if err != nil {
		return Op{}, uuid.Nil, fmt.Errorf("ledger: session id: %w", err)
	}
	key, err := GenerateSigningKey(l.rand)
	if err != nil {
		return Op{}, uuid.Nil, err
	}
	pub := key.Public()
	enc, err := l.writeKEK.seal(key.seed(), keyAAD(id, 0, pub))
	if err != nil {
		return Op{}, uuid.Nil, err
	}
	nonce := make([]byte, 16)
	if _, err := l.rand.Read(nonce); err != nil {
		return Op{}, uuid.Nil, fmt.Errorf("ledger: nonce: %w", err)
	}
	gh := GoalHash(goal)
	g := sessionGenesis{
		Message: "session started", Nonce: hex.EncodeToString(nonce), SessionPublicKey: hex.EncodeToString(pub),
		Goal: goal, GoalHash: gh, TripwireHash: spec.TripwireHash, GuardRequired: spec.GuardRequired,
		LLMBackend: spec.LLMBackend, LLMModel: spec.LLMModel, SandboxTier: spec.SandboxTier, AgentLoop: spec.AgentLoop,
		Network: spec.Network, Workspace: spec.Workspace, Enclave: spec.Enclave,
	}
	if spec.PolicyHash != "" {
		g.PolicyHash = &spec.PolicyHash
	}
	genesis, err := ownPayload(TypeGenesis, g)
	if err != nil {
		return Op{}, uuid.Nil, err
	}
	prompt, err := canonicalPayload(TypePromptInput, OriginIronVise, struct {
		Content string `json:"content"`
	}{goal})
	if err != nil {
		return Op{}, uuid.Nil, err
	}
	return Op{apply: func(b *batch) (any, error) {
		s := Session{
			ID: id, Goal: goal, GoalHash: gh, PolicyHash: spec.PolicyHash, Status: StatusRunning,
			CreatedAt: fromMicros(b.now), LLMBackend: spec.LLMBackend, LLMModel: spec.LLMModel,
			SandboxTier: spec.SandboxTier, PublicKey: pub, DID: DIDKey(pub), AgentLoop: spec.AgentLoop,
			OwnerID: l.owner, LeaseUntil: fromMicros(b.now + l.lease.Microseconds()), CreatedBy: spec.CreatedBy,
		}
		h := &SessionHead{ID: id, Status: StatusRunning, GoalHash: gh, OwnerID: l.owner, LeaseUntil: b.now + l.lease.Microseconds()}
		b.heads[id] = h
		b.keys[id] = &chainKey{key: key, keyID: KeyID(pub)}
		b.goals[id] = gh
		if _, err := b.appendEvent(h, TypeGenesis, genesis, SignerSession); err != nil {
			return nil, b.abort(err)
		}
		if _, err := b.appendEvent(h, TypePromptInput, prompt, SignerSession); err != nil {
			return nil, b.abort(err)
		}
		b.ch.NewSessions = append(b.ch.NewSessions, s)
		b.ch.Keys = append(b.ch.Keys, KeyRecord{
			SessionID: id, KeyID: KeyID(pub), PublicKey: pub, EncryptedPrivate: enc, KEK: l.writeKEK.kind, CreatedMicros: b.now,
		})
		s.EventCount = 2
		return &s, nil
	}}, id, nil
}

// abort marks the batch failed: a request staged part of its rows and
// cannot complete, so the transaction must not commit.
func (b *batch) abort(err error) error {
	if b.fatal == nil {
		b.fatal = err
	}
	return err
}

// Record is one event to append: its type and its payload (see Append).
type Record struct {
	Type    string
	Payload any
	// Origin is stamped into the payload (origin.go): "" or OriginIronVise
	// for events IronVise produced, OriginClient for what a client
	// appended through the API (AppendClient).
	Origin string
	// Build, when set, replaces Payload: it is called inside the commit
	// with the events appended before this record by the same Op, in
	// order, and returns the payload. A record that names the sequence of
	// an earlier record of its batch (an action naming its intent) needs
	// it, because sequences are assigned only under the write lock.
	Build func(prior []Event) (any, error)
}

// Op is one write of a Commit: the creation of a session, records to
// append, the end of a session or its seal (CreateSessionOp, AppendOp,
// EndOp, SealOp).
type Op struct {
	// sessions are the chains whose heads apply reads.
	sessions []uuid.UUID
	apply    func(b *batch) (any, error)
}

// Commit applies ops in order in one durable transaction: all of them, or
// none and an error. It returns each Op's result (see the Op's
// constructor). A process that records several steps of one action at
// once (exec's intent, verdicts and commit record) pays one commit, and so
// one fsync, instead of one per step.
func (l *Ledger) Commit(ctx context.Context, ops ...Op) ([]any, error) {
	var ids []uuid.UUID
	for _, op := range ops {
		if op.apply == nil {
			return nil, errors.New("ledger: commit: an Op was not made by its constructor")
		}
		ids = append(ids, op.sessions...)
	}
	res, err := l.submit(ctx, ids, func(b *batch) (any, error) {
		out := make([]any, len(ops))
		for i, op := range ops {
			r, err := op.apply(b)
			if err != nil {
				if i > 0 {
					// Earlier ops staged rows: the transaction must
					// not commit half of the group.
					return nil, b.abort(err)
				}
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return res.([]any), nil
}

// Append appends one event to a session's chain and returns it once it is
// durably committed. payload is any value encoding/json marshals to an
// object (or JSON text as json.RawMessage / []byte); it is stored as RFC
// 8785 canonical JSON with a "type" member equal to typ. The event is
// signed with the session key held in memory, loading and decrypting it
// from the key table when another process created the session.
//
// Append refuses the types only the ledger writes (ErrReservedType), a
// sealed session (ErrSealed), and an unknown one (ErrNotFound). The event
// is recorded as produced by IronVise ("event_origin":"ironvise");
// anything a client submitted goes through AppendClient instead. Before
// appending it re-checks goal anchoring: when the session row's goal hash
// no longer matches the goal of its genesis event, the session is aborted
// and Append returns ErrGoalMismatch.
func (l *Ledger) Append(ctx context.Context, session uuid.UUID, typ string, payload any) (Event, error) {
	evs, err := l.AppendBatch(ctx, session, []Record{{Type: typ, Payload: payload}})
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// AppendBatch appends several events to one session atomically, with
// consecutive sequences and one durable commit (the events of one agent
// step, for instance). Each record follows Append's rules; if any is
// refused, none is appended.
func (l *Ledger) AppendBatch(ctx context.Context, session uuid.UUID, recs []Record) ([]Event, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	op, err := AppendOp(session, recs)
	if err != nil {
		return nil, err
	}
	res, err := l.Commit(ctx, op)
	if err != nil {
		return nil, fmt.Errorf("ledger: append to %s: %w", session, err)
	}
	return res[0].([]Event), nil
}

// AppendOp prepares what AppendBatch writes as an Op (see Commit); its
// result is the []Event appended. The records are checked, and those
// without Build encoded, before anything is queued.
func AppendOp(session uuid.UUID, recs []Record) (Op, error) {
	bodies, err := canonicalRecords(recs)
	if err != nil {
		return Op{}, err
	}
	return Op{sessions: []uuid.UUID{session}, apply: func(b *batch) (any, error) {
		return b.appendRecords(session, recs, bodies)
	}}, nil
}

// canonicalRecords checks each record's type and origin and returns the
// canonical payloads, before anything is queued.
func canonicalRecords(recs []Record) ([][]byte, error) {
	bodies := make([][]byte, len(recs))
	for i, r := range recs {
		if !validType(r.Type) {
			return nil, fmt.Errorf("ledger: append %q: %w: use 1 to 64 characters of a-z, 0-9 and _", r.Type, ErrInvalidType)
		}
		if IsLedgerWritten(r.Type) {
			return nil, fmt.Errorf("ledger: append %s: %w", r.Type, ErrReservedType)
		}
		origin := r.Origin
		switch origin {
		case "":
			origin = OriginIronVise
		case OriginIronVise, OriginClient:
		default:
			return nil, fmt.Errorf("ledger: append %s: %w: origin %q (want %q or %q)", r.Type, ErrInvalidPayload, origin, OriginIronVise, OriginClient)
		}
		if r.Build != nil {
			continue // encoded in the commit, from the events before it
		}
		body, err := canonicalPayload(r.Type, origin, r.Payload)
		if err != nil {
			return nil, fmt.Errorf("ledger: append %s: %w", r.Type, err)
		}
		bodies[i] = body
	}
	return bodies, nil
}

// builtBody calls a record's Build with the events appended before it and
// encodes the payload.
func builtBody(r Record, prior []Event) ([]byte, error) {
	origin := r.Origin
	if origin == "" {
		origin = OriginIronVise
	}
	v, err := r.Build(prior)
	if err != nil {
		return nil, fmt.Errorf("ledger: append %s: %w", r.Type, err)
	}
	body, err := canonicalPayload(r.Type, origin, v)
	if err != nil {
		return nil, fmt.Errorf("ledger: append %s: %w", r.Type, err)
	}
	return body, nil
}

// appendRecords stages the events of recs (with their canonical bodies) on
// a session's chain: all of them, or none and an error.
func (b *batch) appendRecords(session uuid.UUID, recs []Record, bodies [][]byte) ([]Event, error) {
	h, err := b.writableHead(session)
	if err != nil {
		return nil, err
	}
	signer := SignerSession
	if _, err := b.chainKey(h); err != nil {
		if !errors.Is(err, ErrKeyUnavailable) {
			return nil, err
		}
		// Only the three types verification accepts from the issuer
		// may fall back to it; anything else would be unverifiable.
		for _, r := range recs {
			if !IssuerSignable(r.Type) {
				return nil, err
			}
		}
		signer = SignerIssuer
	}
	out := make([]Event, 0, len(recs))
	for i, r := range recs {
		body := bodies[i]
		if r.Build != nil {
			if body, err = builtBody(r, out); err != nil {
				if i > 0 {
					return nil, b.abort(err)
				}
				return nil, err
			}
		}
		ev, err := b.appendEvent(h, r.Type, body, signer)
		if err != nil {
			if i > 0 {
				return nil, b.abort(err)
			}
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// writableHead returns the head of a session that may be appended to: it
// exists, is not sealed, and its goal anchoring holds (see checkGoal).
func (b *batch) writableHead(session uuid.UUID) (*SessionHead, error) {
	h, err := b.head(session)
	if err != nil {
		return nil, err
	}
	if h.Sealed {
		return nil, fmt.Errorf("session %s: %w", session, ErrSealed)
	}
	if err := b.checkGoal(h); err != nil {
		return nil, err
	}
	return h, nil
}

// checkGoal re-checks goal anchoring
// (docs/design/ledger.md#canonical-hashing) for a session chain. On a
// mismatch it stages the abort of the session and returns ErrGoalMismatch.
func (b *batch) checkGoal(h *SessionHead) error {
	if h.ID == InstanceSessionID {
		return nil
	}
	want, ok := b.goals[h.ID]
	if !ok {
		want, ok = b.l.goals[h.ID]
	}
	if !ok {
		evs, err := b.tx.Events(b.ctx, h.ID, 0, 1)
		if err != nil {
			return fmt.Errorf("ledger: read genesis of %s: %w", h.ID, err)
		}
		var problem string
		if len(evs) == 0 || evs[0].Seq != 0 {
			problem = "genesis event missing"
		} else if g, err := genesisGoal(&evs[0]); err != nil {
			problem = err.Error()
		} else {
			want = g
			b.goals[h.ID] = g
		}
		if problem != "" {
			return b.abortGoal(h, problem)
		}
	}
	if h.GoalHash != want {
		return b.abortGoal(h, fmt.Sprintf("stored goal_hash %s differs from the genesis goal's hash %s", h.GoalHash, want))
	}
	return nil
}

// genesisGoal returns the goal hash anchored by a genesis event, after
// checking that the event's payload is the hashed one and that its goal
// and goal_hash agree.
func genesisGoal(ev *Event) (string, error) {
	if ev.Type != TypeGenesis {
		return "", fmt.Errorf("sequence 0 has type %q, want genesis", ev.Type)
	}
	if EventHash(ev.PrevHash, ev.SessionID, ev.Seq, ev.CreatedMicros, ev.Type, ev.Payload) != ev.Hash {
		return "", errors.New("genesis payload does not match its hash")
	}
	var g struct {
		Goal     *string `json:"goal"`
		GoalHash *string `json:"goal_hash"`
	}
	if err := json.Unmarshal(ev.Payload, &g); err != nil || g.Goal == nil || g.GoalHash == nil {
		return "", errors.New("genesis payload lacks goal and goal_hash")
	}
	if GoalHash(*g.Goal) != *g.GoalHash {
		return "", errors.New("genesis goal_hash does not match its goal")
	}
	return *g.GoalHash, nil
}

// abortGoal stages the abort of a session whose goal anchoring failed.
func (b *batch) abortGoal(h *SessionHead, problem string) error {
	err := fmt.Errorf("session %s: %w: %s", h.ID, ErrGoalMismatch, problem)
	b.l.log.Error("ledger: goal anchoring failed; aborting the session", "session", h.ID, "problem", problem)
	if h.Status == StatusRunning {
		st := StatusAborted
		now := b.now
		b.ch.SessionUpdates = append(b.ch.SessionUpdates, SessionUpdate{ID: h.ID, Status: &st, FinishedMicro: &now})
		h.Status = st
	}
	if _, kerr := b.chainKey(h); kerr == nil {
		payload, perr := ownPayload(TypeSessionHalted, struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}{"halt_goal_mismatch", "goal anchoring failed: " + problem})
		if perr != nil {
			return b.abort(perr)
		}
		if _, aerr := b.appendEvent(h, TypeSessionHalted, payload, SignerSession); aerr != nil {
			return b.abort(aerr)
		}
	}
	return err
}

// EndSession moves a running session to a terminal status (completed,
// failed or aborted) and sets its finish time. It appends nothing: the
// outcome enters the signed record with the seal.
func (l *Ledger) EndSession(ctx context.Context, session uuid.UUID, status Status) error {
	op, err := EndOp(session, status)
	if err == nil {
		_, err = l.Commit(ctx, op)
	}
	if err != nil {
		return fmt.Errorf("ledger: end session: %w", err)
	}
	return nil
}

// EndOp prepares what EndSession writes as an Op (see Commit); its result
// is nil.
func EndOp(session uuid.UUID, status Status) (Op, error) {
	if !status.Terminal() {
		return Op{}, fmt.Errorf("end session %s: status %q is not completed, failed or aborted", session, status)
	}
	return Op{sessions: []uuid.UUID{session}, apply: func(b *batch) (any, error) {
		h, err := b.head(session)
		if err != nil {
			return nil, err
		}
		if session == InstanceSessionID {
			return nil, fmt.Errorf("the instance session never ends: %w", ErrNotRunning)
		}
		if h.Sealed {
			return nil, fmt.Errorf("session %s: %w", session, ErrSealed)
		}
		if h.Status != StatusRunning {
			return nil, fmt.Errorf("session %s is %s: %w", session, h.Status, ErrNotRunning)
		}
		now := b.now
		b.ch.SessionUpdates = append(b.ch.SessionUpdates, SessionUpdate{ID: session, Status: &status, FinishedMicro: &now})
		h.Status = status
		return nil, nil
	}}, nil
}

// SealResult is the outcome of Seal.
type SealResult struct {
	SessionID uuid.UUID
	// Status is the session's terminal outcome.
	Status   Status
	SealedAt time.Time
	// AlreadySealed is true when the session was sealed before this call;
	// nothing was written then.
	AlreadySealed bool
	// Event is the session_sealed event.
	Event Event
	// Checkpoint is the checkpoint written with the seal (zero when
	// AlreadySealed).
	Checkpoint Checkpoint
}

// sealPayload is the payload of session_sealed
// (docs/design/api.md#event-payloads).
type sealPayload struct {
	Status             Status `json:"status"`
	EventCount         uint64 `json:"event_count"`
	TipSequence        uint64 `json:"tip_sequence"`
	TipHash            string `json:"tip_hash"`
	CheckpointTreeSize int64  `json:"checkpoint_tree_size"`
	Actor              string `json:"actor"`
	// FinishedAt binds the row's finished_at (TimeFormat); seals written
	// before it was signed lack the member.
	FinishedAt string `json:"finished_at,omitempty"`
}

// Seal closes a session's chain: a running session becomes completed, a
// session_sealed event commits to the tip, and a checkpoint covering the
// seal is written in the same transaction (the seal names its tree size).
// Any later write to the session fails with ErrSealed. Sealing a sealed
// session is idempotent. actor names who sealed (e.g. the first 16 hex of
// a token hash). When this process cannot obtain the session key, the seal
// is signed by the issuer key.
func (l *Ledger) Seal(ctx context.Context, session uuid.UUID, actor string) (SealResult, error) {
	res, err := l.Commit(ctx, SealOp(session, actor))
	if err != nil {
		return SealResult{}, fmt.Errorf("ledger: seal %s: %w", session, err)
	}
	return res[0].(SealResult), nil
}

// SealOp prepares what Seal writes as an Op (see Commit); its result is
// the SealResult.
func SealOp(session uuid.UUID, actor string) Op {
	return Op{sessions: []uuid.UUID{session}, apply: func(b *batch) (any, error) {
		h, err := b.head(session)
		if err != nil {
			return nil, err
		}
		if session == InstanceSessionID {
			return nil, errors.New("the instance session cannot be sealed")
		}
		if h.Sealed {
			s, err := b.tx.Session(b.ctx, session)
			if err != nil {
				return nil, err
			}
			evs, err := b.tx.Events(b.ctx, session, h.LastSeq, 1)
			if err != nil {
				return nil, err
			}
			r := SealResult{SessionID: session, Status: s.Status, SealedAt: s.SealedAt, AlreadySealed: true}
			if len(evs) == 1 {
				r.Event = evs[0]
			}
			return r, nil
		}
		signer := SignerSession
		if _, err := b.chainKey(h); err != nil {
			if !errors.Is(err, ErrKeyUnavailable) {
				return nil, err
			}
			signer = SignerIssuer
		}
		status := h.Status
		now := b.now
		upd := SessionUpdate{ID: session, SealedMicro: &now}
		finished := now
		if status == StatusRunning {
			status = StatusCompleted
			upd.Status, upd.FinishedMicro = &status, &now
		} else if finished, err = b.finishedMicros(session); err != nil {
			return nil, err
		}
		payload, err := ownPayload(TypeSessionSealed, sealPayload{
			Status: status, EventCount: h.LastSeq + 1, TipSequence: h.LastSeq, TipHash: h.LastHash.String(),
			// The checkpoint written right after this event has exactly
			// this size, so the seal names the tree that covers it.
			CheckpointTreeSize: b.logSize + 1, Actor: actor,
			FinishedAt: fromMicros(finished).Format(TimeFormat),
		})
		if err != nil {
			return nil, err
		}
		ev, err := b.appendEvent(h, TypeSessionSealed, payload, signer)
		if err != nil {
			return nil, err
		}
		b.ch.SessionUpdates = append(b.ch.SessionUpdates, upd)
		h.Status, h.Sealed = status, true
		if err := b.writeCheckpoint(); err != nil {
			return nil, b.abort(err)
		}
		return SealResult{SessionID: session, Status: status, SealedAt: fromMicros(now), Event: ev, Checkpoint: b.ch.Checkpoints[len(b.ch.Checkpoints)-1]}, nil
	}}
}

// rotationPayload is the payload of key_rotation
// (docs/design/api.md#event-payloads).
type rotationPayload struct {
	NewPublicKey  string `json:"new_public_key"`
	RotationIndex int    `json:"rotation_index"`
}

// RotateKey replaces a session's signing key (AGENT_KEY_ROTATION_STEPS):
// a key_rotation event naming the new public key is signed by the current
// key, and from the next event on only the new key is valid.
func (l *Ledger) RotateKey(ctx context.Context, session uuid.UUID) (Event, error) {
	if session == InstanceSessionID {
		return Event{}, errors.New("ledger: rotate key: the instance chain is signed by the issuer key")
	}
	key, err := GenerateSigningKey(l.rand)
	if err != nil {
		return Event{}, err
	}
	pub := key.Public()
	res, err := l.submit(ctx, []uuid.UUID{session}, func(b *batch) (any, error) {
		h, err := b.writableHead(session)
		if err != nil {
			return nil, err
		}
		old, err := b.chainKey(h)
		if err != nil {
			return nil, err
		}
		validFrom := h.LastSeq + 2 // the event after the rotation
		enc, err := l.writeKEK.seal(key.seed(), keyAAD(session, validFrom, pub))
		if err != nil {
			return nil, err
		}
		payload, err := ownPayload(TypeKeyRotation, rotationPayload{NewPublicKey: hex.EncodeToString(pub), RotationIndex: old.rotations + 1})
		if err != nil {
			return nil, err
		}
		ev, err := b.appendEvent(h, TypeKeyRotation, payload, SignerSession)
		if err != nil {
			return nil, err
		}
		b.ch.Keys = append(b.ch.Keys, KeyRecord{
			SessionID: session, ValidFromSeq: validFrom, KeyID: KeyID(pub), PublicKey: pub,
			EncryptedPrivate: enc, KEK: l.writeKEK.kind, CreatedMicros: b.now,
		})
		b.keys[session] = &chainKey{key: key, keyID: KeyID(pub), validFrom: validFrom, rotations: old.rotations + 1}
		return ev, nil
	})
	if err != nil {
		return Event{}, fmt.Errorf("ledger: rotate key of %s: %w", session, err)
	}
	return res.(Event), nil
}

// recoveryPayload is the payload of recovery
// (docs/design/agent.md#agent-loop).
type recoveryPayload struct {
	PreviousOwner string `json:"previous_owner"`
	LastSeq       uint64 `json:"last_seq"`
	Message       string `json:"message"`
}

// runningSessions reads the heads of every running session.
func (l *Ledger) runningSessions(ctx context.Context) ([]SessionHead, error) {
	var running []SessionHead
	err := l.b.View(ctx, func(tx ReadTx) error {
		var err error
		running, err = tx.RunningSessions(ctx)
		return err
	})
	return running, err
}

// Recover fails the running sessions whose owner stopped renewing its
// lease (docs/design/ledger.md#session-lifecycle): each gets an issuer-signed
// recovery event and status failed. Sessions with a live lease, and this
// process's own, are left alone, so instances never recover each other's live
// sessions. It returns the ids it recovered.
func (l *Ledger) Recover(ctx context.Context) ([]uuid.UUID, error) {
	running, err := l.runningSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: recover: %w", err)
	}
	now := l.nowMicros()
	var ids []uuid.UUID
	for _, h := range running {
		if h.LeaseUntil < now && h.OwnerID != l.owner && !h.Sealed {
			ids = append(ids, h.ID)
		}
	}
	// Re-checked under the write lock: the owner may have renewed or
	// ended the session since the scan.
	return l.recoverHeads(ctx, ids, func(h *SessionHead, now int64) bool { return h.LeaseUntil < now && h.OwnerID != l.owner },
		func(h *SessionHead) string {
			return fmt.Sprintf("owner %s stopped renewing its lease (expired %s); the session was marked failed", h.OwnerID, fromMicros(h.LeaseUntil).Format(TimeFormat))
		})
}

// Checkpoint writes a checkpoint if events other than checkpoint events
// were added since the newest one, and returns the newest checkpoint.
func (l *Ledger) Checkpoint(ctx context.Context) (Checkpoint, error) {
	res, err := l.submit(ctx, nil, func(b *batch) (any, error) {
		if err := b.refreshAndCheckpoint(); err != nil {
			return nil, b.abort(err)
		}
		if len(b.ch.Checkpoints) > 0 {
			return b.ch.Checkpoints[len(b.ch.Checkpoints)-1], nil
		}
		return b.tx.LatestCheckpoint(b.ctx)
	})
	if err != nil {
		return Checkpoint{}, fmt.Errorf("ledger: checkpoint: %w", err)
	}
	return res.(Checkpoint), nil
}

// finishedMicros is the finished_at of an ended session: from an update
// staged in this batch, else from its row.
func (b *batch) finishedMicros(session uuid.UUID) (int64, error) {
	for i := len(b.ch.SessionUpdates) - 1; i >= 0; i-- {
		if u := b.ch.SessionUpdates[i]; u.ID == session && u.FinishedMicro != nil {
			return *u.FinishedMicro, nil
		}
	}
	s, err := b.tx.Session(b.ctx, session)
	if err != nil {
		return 0, err
	}
	if s.FinishedAt.IsZero() {
		return 0, bug(fmt.Errorf("session %s is %s but has no finished_at", session, s.Status))
	}
	return s.FinishedAt.UnixMicro(), nil
}
