//go:build race

package ledger_test

// raceEnabled: the race detector also randomizes the scheduler's choice of
// the next goroutine to run.
const raceEnabled = true
