package cli

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/handoff"
)

// fakeHandOff replaces the hand-off's two steps for one test: find answers
// found (or ErrNotFound when empty), and exec records what it was given.
func fakeHandOff(t *testing.T, found string) *[]string {
	t.Helper()
	var got []string
	oldFind, oldExec := findProgram, execProgram
	t.Cleanup(func() { findProgram, execProgram = oldFind, oldExec })
	findProgram = func(name string) (string, error) {
		if name != serverProgram {
			t.Errorf("looked for %q, want %q", name, serverProgram)
		}
		if found == "" {
			return "", handoff.ErrNotFound
		}
		return found, nil
	}
	execProgram = func(full string, args []string) error {
		got = append([]string{full}, args...)
		return errors.New("exec format error")
	}
	return &got
}

// TestServerCommandHandsEverythingOn: the stand-in for serve in a build
// without the server passes every argument and flag, unparsed, to
// ironvise-server after the command's name, under the name ironvise was
// invoked by.
func TestServerCommandHandsEverythingOn(t *testing.T) {
	got := fakeHandOff(t, "/opt/iv/ironvise-server")
	a := &app{invoked: "ironvise"}
	cmd := a.serverCommand("serve", "Serve")
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"--verify-full", "--workspace", "/w", "--no-guard", "extra"})
	err := cmd.Execute()
	want := []string{"/opt/iv/ironvise-server", "ironvise", "serve", "--verify-full", "--workspace", "/w", "--no-guard", "extra"}
	if !slices.Equal(*got, want) {
		t.Fatalf("exec got %q, want %q", *got, want)
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), "could not be started: exec format error; nothing was run") {
		t.Fatalf("a failed start: %v, want a usage error saying why", err)
	}
}

// TestServerCommandWithoutServer: without ironvise-server installed the
// command fails closed, naming the program and the fix, and starts nothing.
func TestServerCommandWithoutServer(t *testing.T) {
	got := fakeHandOff(t, "")
	a := &app{}
	cmd := a.serverCommand("mcp", "MCP")
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{"proxy", "--name", "x", "--", "some-server"})
	err := cmd.Execute()
	if len(*got) != 0 {
		t.Fatalf("exec was called: %q", *got)
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), "mcp runs in ironvise-server, which was not found beside this program or on PATH; nothing was run") || !strings.Contains(err.Error(), "fix: install ironvise-server") {
		t.Fatalf("err %v", err)
	}
}
