// Package ledgertest is the one conformance suite every ledger backend
// passes (docs/design/ledger.md#backends): lifecycle, canonical payloads,
// concurrency, key rotation and resumption, crash recovery, checkpoints and
// proofs, immutability triggers, tamper detection by each named verification
// check and by 1,000 random single mutations, and the operational tables.
//
// # Usage
//
// A backend's test file supplies a [Harness] and calls [Run]:
//
//	func TestConformance(t *testing.T) {
//		ledgertest.Run(t, ledgertest.Harness{Name: "sqlite", NewDB: newDB})
//	}
//
// # Limitations
//
// Tamper tests need SQL access that bypasses the append-only triggers;
// each harness provides it for its own database (test-only code).
package ledgertest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// DB is one fresh, empty test database.
type DB interface {
	// Backend opens a new connection pool on this database (a second call
	// stands for a second process sharing it).
	Backend(t testing.TB) ledger.Backend
	// Exec runs SQL with the triggers in force ("?" placeholders); it
	// returns the database's error.
	Exec(t testing.TB, query string, args ...any) error
	// Tamper runs SQL with the append-only triggers bypassed, as an
	// attacker with database access could; it fails the test on error.
	Tamper(t testing.TB, query string, args ...any)
	// Unguard switches the append-only triggers off until restore
	// switches them on again, for tests that tamper thousands of times:
	// tamper runs statements in one transaction on a connection of its
	// own that does not wait for durability, and returns the database's
	// error (nothing is applied then). The ledger must not write events,
	// keys, log hashes or checkpoints meanwhile.
	Unguard(t testing.TB) (tamper func(stmts ...Stmt) error, restore func())
	// HasTruncate reports whether the database has TRUNCATE (and the
	// suite should check that it is rejected).
	HasTruncate() bool
}

// Stmt is one SQL statement with "?" placeholders and its arguments.
type Stmt struct {
	Query string
	Args  []any
}

// Harness describes a backend under test.
type Harness struct {
	Name  string
	NewDB func(t testing.TB) DB
	// Skip names tests of the suite this harness leaves out, each with
	// the reason.
	Skip map[string]string
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"InstanceSession", testInstanceSession},
		{"Lifecycle", testLifecycle},
		{"CommitGroup", testCommitGroup},
		{"CanonicalPayload", testCanonicalPayload},
		{"Listing", testListing},
		{"ConcurrentSessions", testConcurrentSessions},
		{"ConcurrentOneSession", testConcurrentOneSession},
		{"ConcurrentMixed", testConcurrentMixed},
		{"KeyRotation", testKeyRotation},
		{"ResumeInOtherProcess", testResume},
		{"PassphraseAndIssuer", testPassphraseAndIssuer},
		{"CrashRecovery", testCrashRecovery},
		{"LeaseHeartbeat", testLeaseHeartbeat},
		{"LeaseOptions", testLeaseOptions},
		{"LeaseRenewIfDue", testLeaseRenewIfDue},
		{"RenewalUnderAppends", testRenewalUnderAppends},
		{"GoalAnchoringOnAppend", testGoalAnchoringOnAppend},
		{"CheckpointCadence", testCheckpointCadence},
		{"Proofs", testProofs},
		{"Immutability", testImmutability},
		{"Tamper", testTamper},
		{"TamperRandomized", testTamperRandomized},
		{"StartupAndFullVerification", testStartup},
		{"StartupTail", testStartupTail},
		{"StartupOwned", testStartupOwned},
		{"OperationalTables", testOperationalTables},
		{"AdminChangeAudited", testAdminChangeAudited},
		{"Reopen", testReopen},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if why := h.Skip[tc.name]; why != "" {
				t.Skip(why)
			}
			t.Parallel()
			tc.fn(t, h)
		})
	}
}

// Clock is a settable test clock.
type Clock struct{ offset atomic.Int64 }

// Now returns the wall clock plus the offset.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// env is one ledger opened on a test database.
type env struct {
	t      testing.TB
	db     DB
	l      *ledger.Ledger
	issuer *ledger.SigningKey
	clock  *Clock
}

// open creates a fresh database and a ledger on it.
func open(t testing.TB, h Harness, mod func(*ledger.Options)) *env {
	t.Helper()
	db := h.NewDB(t)
	issuer, err := ledger.GenerateSigningKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, issuer: issuer, clock: &Clock{}}
	e.l = e.openLedger(mod)
	return e
}

// openLedger opens another ledger (another process) on the same database
// with the same issuer key.
func (e *env) openLedger(mod func(*ledger.Options)) *ledger.Ledger {
	e.t.Helper()
	opts := ledger.Options{IssuerKey: e.issuer, Clock: e.clock.Now, CheckpointInterval: -1}
	if mod != nil {
		mod(&opts)
	}
	l, err := ledger.New(context.Background(), e.db.Backend(e.t), opts)
	if err != nil {
		e.t.Fatalf("ledger.New: %v", err)
	}
	e.t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func ctx() context.Context { return context.Background() }

// mustVerify verifies the session id and fails unless all five checks pass.
func mustVerify(t testing.TB, l *ledger.Ledger, id uuid.UUID) ledger.Report {
	t.Helper()
	r, err := l.VerifySession(ctx(), id)
	if err != nil {
		t.Fatal(err)
	}
	mustOK(t, r)
	return r
}

// mustOK fails unless all five checks pass.
func mustOK(t testing.TB, r ledger.Report) {
	t.Helper()
	if !r.OK() {
		name, c, _ := r.FirstFailure()
		t.Fatalf("verification failed: %s check at seq %d: %s", name, c.Seq, c.Problem)
	}
}
