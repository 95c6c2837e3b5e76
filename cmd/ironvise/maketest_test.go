//go:build !windows

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeUnitShowsProgress: `make test`'s test step prints a line per
// package as it finishes, the totals and the slowest tests, and keeps go
// test's exit status (a run that fails says so at the end).
func TestMakeUnitShowsProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test through make")
	}
	unit := func(pkgs string) (string, error) {
		cmd := makeCmd(t, "unit", "PKGS="+pkgs, "SLOWEST=3", "TESTJSON="+filepath.Join(t.TempDir(), "test.json"))
		cmd.Env = makeEnv()
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := unit("./internal/progname")
	if err != nil {
		t.Fatalf("make unit on a passing package: %v\n%s", err, out)
	}
	for _, want := range []string{"internal/progname", "DONE ", "== the 3 slowest tests"} {
		if !strings.Contains(out, want) {
			t.Errorf("make unit printed no %q:\n%s", want, out)
		}
	}
	out, err = unit("./internal/no-such-package")
	if err == nil || !strings.Contains(out, "== FAIL: go test exited") {
		t.Errorf("make unit on a package that does not build: %v; want a failing exit and the FAIL line:\n%s", err, out)
	}
}
