package handoff

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// program writes an executable file (or, with mode 0o644, one that is not
// executable) named name in dir.
func program(t *testing.T, dir, name string, mode os.FileMode) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	beside, onPath, other := t.TempDir(), t.TempDir(), t.TempDir()
	self := func() (string, error) { return filepath.Join(beside, "ironvise"), nil }
	noSelf := func() (string, error) { return "", errors.New("unknown") }

	want := program(t, onPath, "ironvise-server", 0o755)
	if got, err := find("ironvise-server", self, other+string(os.PathListSeparator)+onPath); err != nil || got != want {
		t.Fatalf("on PATH: %q, %v; want %q", got, err, want)
	}
	// Beside the running program comes first.
	want = program(t, beside, "ironvise-server", 0o755)
	if got, err := find("ironvise-server", self, onPath); err != nil || got != want {
		t.Fatalf("beside: %q, %v; want %q", got, err, want)
	}
	// Without the running program's path, PATH alone.
	if got, err := find("ironvise-server", noSelf, onPath); err != nil || got != filepath.Join(onPath, filepath.Base(want)) {
		t.Fatalf("no executable path: %q, %v", got, err)
	}
	if _, err := find("ironvise-nothing", self, onPath); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a program installed nowhere: %v, want ErrNotFound", err)
	}
}

// TestFindSkipsRelativeAndUnrunnable: a relative PATH entry names a file
// of whatever directory the process runs in (an agent's workspace), and a
// file without execute permission is no program.
func TestFindSkipsRelativeAndUnrunnable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("execute permission bits are Unix's")
	}
	ws := t.TempDir()
	program(t, ws, "ironvise-server", 0o755)
	t.Chdir(ws)
	noSelf := func() (string, error) { return "", errors.New("unknown") }
	if got, err := find("ironvise-server", noSelf, "."+string(os.PathListSeparator)+""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a relative PATH entry: %q, %v; want ErrNotFound", got, err)
	}
	dir := t.TempDir()
	program(t, dir, "ironvise-server", 0o644)
	if got, err := find("ironvise-server", noSelf, dir); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a file that is not executable: %q, %v; want ErrNotFound", got, err)
	}
}
