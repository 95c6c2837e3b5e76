//go:build unix

package handoff

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestExecReplacesTheProcess: the program handed to runs as this process
// (the same pid) with the arguments given, and its exit status is the
// process's.
func TestExecReplacesTheProcess(t *testing.T) {
	if os.Getenv("HANDOFF_TEST_CHILD") == "1" {
		err := Exec("/bin/sh", []string{"/bin/sh", "-c", `echo "$$ $0 $1"; exit 7`, "arg0", "arg1"})
		os.Stderr.WriteString("Exec returned: " + err.Error() + "\n")
		os.Exit(99)
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecReplacesTheProcess$")
	cmd.Env = append(os.Environ(), "HANDOFF_TEST_CHILD=1")
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v (want the program's status 7); output %q", err, out)
	}
	want := strconv.Itoa(cmd.Process.Pid) + " arg0 arg1"
	if got := strings.TrimSpace(string(out)); got != want {
		t.Fatalf("the program printed %q, want %q (its pid the test child's)", got, want)
	}
}

// TestExecFails: a program that cannot be run is an error returned to the
// caller, which is still running.
func TestExecFails(t *testing.T) {
	if err := Exec("/nonexistent/ironvise-server", []string{"/nonexistent/ironvise-server"}); err == nil {
		t.Fatal("Exec of a missing program returned nil")
	}
}
