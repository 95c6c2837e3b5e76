package sqlite

import (
	"os"
	"sync"
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

// onceFixture returns a function that builds a benchmark fixture in a
// directory from mkdir on its first call and returns the same fixture on
// every later one, as b.N grows and across -count rounds.
func onceFixture[T any](mkdir func() (string, error), build func(b *testing.B, dir string) *T) func(*testing.B) *T {
	var (
		once sync.Once
		f    *T
	)
	return func(b *testing.B) *T {
		once.Do(func() {
			dir, err := mkdir()
			if err != nil {
				b.Fatal(err)
			}
			f = build(b, dir)
		})
		if f == nil {
			b.Fatal("the fixture failed to build")
		}
		return f
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
