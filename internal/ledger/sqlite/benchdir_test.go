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

// mkdirTempFast is mkdirTemp on /dev/shm when it exists: for fixtures
// whose construction, not their reading, would wait on the disk.
func mkdirTempFast() (string, error) {
	d, err := os.MkdirTemp("/dev/shm", "ironvise-ledger-bench-")
	if err != nil {
		return mkdirTemp()
	}
	benchDirs = append(benchDirs, d)
	return d, nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
