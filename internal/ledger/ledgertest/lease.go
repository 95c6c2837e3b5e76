package ledgertest

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// testLeaseHeartbeat keeps a session busy for several leases, as a long
// command does, and checks that its owner's heartbeat holds the lease the
// whole time: another process's Recover leaves the session alone and the
// owner records and ends it. Once the owner closes, as a dead process
// would, the lease lapses and Recover takes the session.
func testLeaseHeartbeat(t *testing.T, h Harness) {
	const lease = time.Second
	e := open(t, h, func(o *ledger.Options) { o.LeaseDuration = lease })
	busy := newSession(t, e.l, "a command that outlives the lease")
	other := e.openLedger(nil)
	for end := time.Now().Add(3 * lease); time.Now().Before(end); {
		time.Sleep(lease / 4)
		if got, err := other.Recover(ctx()); err != nil || len(got) != 0 {
			t.Fatalf("Recover while the owner is alive = %v, %v; want nothing: the lease was not renewed", got, err)
		}
	}
	s, err := other.Session(ctx(), busy.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != ledger.StatusRunning || !s.LeaseUntil.After(busy.LeaseUntil) {
		t.Fatalf("after three leases: status %s, lease until %s (created with %s); want running with a renewed lease", s.Status, s.LeaseUntil, busy.LeaseUntil)
	}
	appendN(t, e.l, busy.ID, 1)
	if err := e.l.EndSession(ctx(), busy.ID, ledger.StatusCompleted); err != nil {
		t.Fatalf("the owner could not end its session: %v", err)
	}

	// The owner dies with a session running: nothing renews it any more.
	orphan := newSession(t, e.l, "owner dies")
	if err := e.l.Close(ctx()); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(lease + time.Millisecond)
	got, err := other.Recover(ctx())
	if err != nil || !slices.Equal(got, []uuid.UUID{orphan.ID}) {
		t.Fatalf("Recover after the owner closed = %v, %v; want only %s", got, err, orphan.ID)
	}
	if s, _ := other.Session(ctx(), busy.ID); s.Status != ledger.StatusCompleted {
		t.Fatalf("the ended session became %s", s.Status)
	}
}

// testLeaseOptions: a renewal interval that is not shorter than the lease
// would let the lease lapse between renewals, so New refuses it.
func testLeaseOptions(t *testing.T, h Harness) {
	db := h.NewDB(t)
	issuer, err := ledger.GenerateSigningKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		lease, renew time.Duration
	}{
		{"renew equals lease", time.Second, time.Second},
		{"renew longer than lease", time.Second, 10 * time.Second},
		// A lease shorter than the default 10 s interval must not keep it.
		{"short lease, explicit default interval", 2 * time.Second, ledger.DefaultLeaseRenewInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := db.Backend(t)
			l, err := ledger.New(ctx(), b, ledger.Options{IssuerKey: issuer, CheckpointInterval: -1, LeaseDuration: tc.lease, LeaseRenewInterval: tc.renew})
			if err == nil {
				l.Close(ctx())
				t.Fatal("New accepted it")
			}
			b.Close()
			if !strings.Contains(err.Error(), "LeaseRenewInterval") || errors.Is(err, ledger.ErrClosed) {
				t.Fatalf("New: %v; want an error naming LeaseRenewInterval", err)
			}
		})
	}
}

// testLeaseRenewIfDue: RenewLeasesIfDue leaves a lease with more than half
// of it left as it is (a hook process, one per tool call, would otherwise
// write and sync it each time), renews one that ends within half of it,
// and never touches another owner's; RenewLeases renews at once.
func testLeaseRenewIfDue(t *testing.T, h Harness) {
	const lease = time.Hour
	e := open(t, h, func(o *ledger.Options) { o.LeaseDuration = lease; o.LeaseRenewInterval = lease / 3 })
	s := newSession(t, e.l, "a hook session")
	other := e.openLedger(func(o *ledger.Options) { o.LeaseDuration = lease; o.LeaseRenewInterval = lease / 3 })
	theirs := newSession(t, other, "another owner's session")
	leaseOf := func(id uuid.UUID) time.Time {
		t.Helper()
		got, err := e.l.Session(ctx(), id)
		if err != nil {
			t.Fatal(err)
		}
		return got.LeaseUntil
	}
	created, theirsCreated := leaseOf(s.ID), leaseOf(theirs.ID)

	e.clock.Advance(lease/2 - time.Minute)
	if err := e.l.RenewLeasesIfDue(ctx()); err != nil {
		t.Fatal(err)
	}
	if got := leaseOf(s.ID); !got.Equal(created) {
		t.Fatalf("a lease with more than half left was renewed: %s → %s", created, got)
	}

	e.clock.Advance(2 * time.Minute)
	if err := e.l.RenewLeasesIfDue(ctx()); err != nil {
		t.Fatal(err)
	}
	renewed := leaseOf(s.ID)
	if want := e.clock.Now().Add(lease); renewed.Before(want.Add(-time.Minute)) || renewed.After(want) {
		t.Fatalf("a lease ending within half of it: %s after renewal, want about %s", renewed, want)
	}
	if got := leaseOf(theirs.ID); !got.Equal(theirsCreated) {
		t.Fatalf("another owner's lease changed: %s → %s", theirsCreated, got)
	}

	e.clock.Advance(time.Minute)
	if err := e.l.RenewLeases(ctx()); err != nil {
		t.Fatal(err)
	}
	if got := leaseOf(s.ID); !got.After(renewed) {
		t.Fatalf("RenewLeases left the lease at %s (was %s)", got, renewed)
	}
}
