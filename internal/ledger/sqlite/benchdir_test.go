package sqlite

import "os"

// mkdirTemp makes a directory that outlives one benchmark round: the
// fixtures are built once per test binary and reused as b.N grows.
func mkdirTemp() (string, error) { return os.MkdirTemp("", "ironvise-ledger-bench-") }
