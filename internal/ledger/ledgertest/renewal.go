package ledgertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// testRenewalUnderAppends hammers lease renewal against appends (issue
// 13, item 6: under load PostgreSQL once aborted one of them as a
// deadlock). The renewal updates every running session of its owner; a
// group commit locks the rows of the sessions in its batch. Unless both
// take the rows under the one write lock, each can hold rows the other
// waits for. Here renewals run back to back while 24 writers append to
// their own sessions (batched together by group commit) for a few
// seconds: every append and every renewal must succeed.
func testRenewalUnderAppends(t *testing.T, h Harness) {
	e := open(t, h, nil)
	const writers = 24
	ids := make([]uuid.UUID, writers)
	for i := range ids {
		ids[i] = newSession(t, e.l, fmt.Sprintf("renewed session %d", i)).ID
	}
	dur := 4 * time.Second
	if testing.Short() {
		dur = time.Second
	}
	c, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	errs := make(chan error, writers+4)
	var wg sync.WaitGroup
	var appends, renewals [writers + 4]int
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.Err() == nil {
				if _, err := e.l.Append(ctx(), ids[g], ledger.TypeThought, map[string]any{"content": "beat"}); err != nil {
					errs <- fmt.Errorf("append to session %d: %w", g, err)
					return
				}
				appends[g]++
			}
		}()
	}
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.Err() == nil {
				until := time.Now().Add(time.Minute).UnixMicro()
				if err := e.l.Backend().RenewLeases(ctx(), e.l.OwnerID(), until, 0); err != nil {
					errs <- fmt.Errorf("renew leases: %w", err)
					return
				}
				renewals[writers+r]++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	na, nr := 0, 0
	for i := range appends {
		na += appends[i]
		nr += renewals[i]
	}
	t.Logf("%d appends and %d lease renewals in %v", na, nr, dur)
	if na == 0 || nr == 0 {
		t.Fatalf("%d appends and %d renewals: nothing raced", na, nr)
	}
}
