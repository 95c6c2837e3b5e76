package sqlite

import (
	"os"
	"testing"
)

// benchDirs are the fixture directories of this test binary, removed by
// TestMain.
var benchDirs []string

// mkdirTemp makes a directory that outlives one benchmark round: the
// fixtures are built once per test binary and reused as b.N grows.
func mkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "ironvise-ledger-bench-")
	if err == nil {
		benchDirs = append(benchDirs, d)
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
