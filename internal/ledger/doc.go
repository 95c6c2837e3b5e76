// Package ledger is IronVise's evidence store: sessions, their signed hash
// chains, one instance-wide RFC 6962 Merkle log with signed checkpoints,
// and the verification an auditor runs (docs/design/ledger.md). It knows
// nothing of the agent, the sandbox or the server; producers hand it event
// types and payloads, and it stores, chains, signs and proves them.
//
// # Usage
//
// Open a ledger with ledgerdb.Open (DATABASE_URL selects SQLite or
// PostgreSQL), or with New on any [Backend]:
//
//	l, err := ledgerdb.Open(ctx, cfg.Ledger.DatabaseURL, cfg.Ledger.PoolSize, ledger.Options{DataDir: cfg.DataDir})
//	if err != nil { … }
//	defer l.Close(ctx)
//	recovered, err := l.Recover(ctx)           // fail sessions whose owner died
//	rep, err := l.VerifyStartup(ctx)           // refuse to start on tampering: rep.Err()
//
//	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: goal, PolicyHash: ph, SandboxTier: "native"})
//	ev, err := l.Append(ctx, s.ID, ledger.TypeObservation, observation)  // durable when it returns
//	evs, err := l.AppendBatch(ctx, s.ID, []ledger.Record{{Type: ledger.TypeCheckVerdict, Payload: v}, …})
//	err = l.EndSession(ctx, s.ID, ledger.StatusCompleted)
//	res, err := l.Seal(ctx, s.ID, actor)       // closes the chain, writes a checkpoint covering it
//
//	report, err := l.VerifySession(ctx, s.ID)  // five checks, each reported separately
//	proof, err := l.InclusionProof(ctx, s.ID, seq, 0)
//	cons, err := l.ConsistencyProof(ctx, oldSize, newSize)
//
// # What is hashed and signed
//
// A payload is stored as the RFC 8785 canonical JSON of the value given to
// Append, with a "type" member equal to the event type; those bytes are
// hashed and never re-serialised. The v1 event hash is
//
//	SHA-256("ironvise/event/v1" ‖ 0x00 ‖ prev_hash[32] ‖ session_id[16] ‖ u64be(seq) ‖
//	        i64be(created_at_micros) ‖ u32be(len(type)) ‖ type ‖ SHA-256(payload)[32])
//
// with prev_hash of sequence 0 = SHA-256("ironvise/session/v1" ‖ 0x00 ‖
// session_id[16]). Every event is signed, Ed25519 over its hash, by the
// session key in force at its sequence; a key_rotation event names the next
// key and is signed by the current one. Only recovery, session_sealed and
// admin_change may instead carry an issuer signature (written by a process
// without the session key), and verification reports them. The instance
// session (the nil UUID) is signed by the issuer key.
//
// Every event hash is also leaf log_index of the instance-wide Merkle log
// (leaf = H(0x00 ‖ event hash), node = H(0x01 ‖ l ‖ r); the hashes it needs
// are stored). Checkpoints are C2SP signed notes by the issuer key, origin
// "ironvise/<instance id>", written at every seal, every
// CheckpointEvents events and every CheckpointInterval when events other
// than checkpoint events were added.
//
// # Concurrency and durability
//
// Writes go through one committer goroutine per Ledger that batches the
// requests waiting at that moment into one transaction under the
// backend's ledger-wide write lock (group commit), reading the current
// chain heads inside it, so several processes may share a database. A
// write returns only after its transaction committed. Appends to one
// session are serialised; distinct sessions share commits.
//
// # Keys
//
// The issuer key lives in $ECTO_DATA_DIR/keys/issuer.ed25519 (PEM PKCS#8,
// mode 0600, created on first run); one ledger has one issuer key, so
// instances sharing a database share that file. Session private keys are
// held in memory and stored encrypted (AES-256-GCM) under a KEK derived
// with Argon2id from ECTO_KEY_PASSPHRASE when set, else with HKDF-SHA256
// from the issuer key; a ledger of the HKDF passphrase KEK is migrated
// when it is opened (docs/ledger.md). [SigningKey] never prints or
// exports its secret, and signs event hashes and JWS signing inputs only.
//
// # Limitations
//
// The ledger trusts its own issuer key file: whoever holds it (or the
// database and the passphrase) can write valid-looking history after the
// newest checkpoint a client kept; clients that keep checkpoints and check
// consistency proofs detect any rewrite before them. Throughput of
// synchronous appends is bounded by concurrent writers divided by the
// storage's fsync latency; AppendBatch and more concurrent sessions
// amortise it. Verification holds a whole session in memory.
package ledger
