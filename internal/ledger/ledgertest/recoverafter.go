package ledgertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// RecoverAfter is a second IronVise process starting on the same ledger
// while a test's command runs: after d it opens the ledger with open, runs
// the startup recovery, which fails every session whose lease has lapsed,
// and sends what it recovered (nil when the ledger did not open). The test
// does not end before it, as it reports through t.
func RecoverAfter(t testing.TB, d time.Duration, open func() (*ledger.Ledger, error)) <-chan []uuid.UUID {
	t.Helper()
	ch := make(chan []uuid.UUID, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	t.Cleanup(wg.Wait)
	go func() {
		defer wg.Done()
		time.Sleep(d)
		l, err := open()
		if err != nil {
			t.Errorf("open the ledger as another process: %v", err)
			ch <- nil
			return
		}
		defer l.Close(context.Background())
		got, err := l.Recover(context.Background())
		if err != nil {
			t.Errorf("Recover: %v", err)
		}
		ch <- got
	}()
	return ch
}
