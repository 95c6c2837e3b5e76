// Package handoff hands a command line to another IronVise program
// installed beside the running one: ironvise-exec hands what its thin path
// cannot take to ironvise, and an ironvise built without the server
// (the noserver build tag) hands serve and mcp to ironvise-server.
//
// Find looks beside the running executable first, then in the absolute
// directories of PATH. Relative PATH entries are skipped: which file they
// name depends on the working directory, which may be an agent's
// workspace. Exec replaces the process where the system can (Unix), so the
// program handed to keeps the process, its descriptors, its signals and
// its exit status; on Windows it runs the program as a child on the same
// console and exits with its code.
package handoff

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// ErrNotFound is Find's answer when no program of the name is installed
// beside the running one or on PATH.
var ErrNotFound = errors.New("not found beside this program or on PATH")

// Find returns the path of the program name (name.exe on Windows): the one
// in the running executable's directory, or else the first in an absolute
// PATH directory.
func Find(name string) (string, error) {
	return find(name, os.Executable, os.Getenv("PATH"))
}

func find(name string, executable func() (string, error), path string) (string, error) {
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if exe, err := executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), name); isProgram(p) {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, name); filepath.IsAbs(dir) && isProgram(p) {
			return p, nil
		}
	}
	return "", ErrNotFound
}

// isProgram reports whether p is a regular file this process may run.
func isProgram(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && (runtime.GOOS == "windows" || st.Mode()&0o111 != 0)
}
