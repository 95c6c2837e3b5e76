//go:build linux

package native

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestArgvModeMatchesShell runs each command in argv mode and under
// /bin/sh -c in the real tier and requires the same stdout, stderr and
// exit code. Where the direct exec fails (no such program, no #!, not
// executable) the launcher hands the command to the shell, which must
// then be what the result records.
func TestArgvModeMatchesShell(t *testing.T) {
	argvTier := newTestTier(t, sandbox.Options{})
	shellTier := newTestTier(t, sandbox.Options{})
	shellTier.shellOnly = true
	fx := newFixture(t)
	// The workspace is not executable (Landlock): each direct exec there
	// fails, and the shell reports it.
	writeFile(t, fx.ws, "script", "#!/bin/sh\necho never\n")
	if err := os.Chmod(filepath.Join(fx.ws, "script"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := execDir(t)
	path := "/nonexistent-dir:" + filepath.Join(bin, "bin1") + ":" + filepath.Join(bin, "bin2") + ":" + sandbox.CommandPath()
	argvTier.path, shellTier.path = path, path

	cases := []struct {
		cmd, mode string
		stdout    string // when set, the stdout both must give
	}{
		{"/bin/true", sandbox.ExecArgv, ""},
		{"/bin/false", sandbox.ExecArgv, ""},
		{"ls -la", sandbox.ExecArgv, ""},
		{"ls -la src README", sandbox.ExecArgv, ""},
		{"grep -n 'line t' README", sandbox.ExecArgv, ""},
		{`grep -c "needle" README src/main.txt`, sandbox.ExecArgv, ""},
		{`ls 'a'"b"`, sandbox.ExecArgv, ""},
		{"ls ''", sandbox.ExecArgv, ""},
		{"cat README # a comment", sandbox.ExecArgv, ""},
		{"/bin/echo 'a  b' \"*\" '~' '#' " + strings.Repeat("w", 20000), sandbox.ExecArgv, ""},
		{"tool x 'y z'", sandbox.ExecArgv, "two x y z\n"},
		{"id -u", sandbox.ExecArgv, ""},
		{"head -c 7 README", sandbox.ExecArgv, ""},
		{"touch made-here", sandbox.ExecArgv, ""}, // read-only workspace: same error
		// The direct exec fails; the shell runs the command and reports.
		{"no-such-program-ironvise --flag", sandbox.ExecShell, ""},
		{"./no-such-file", sandbox.ExecShell, ""},
		{"./script", sandbox.ExecShell, ""},
		{bin + "/noshebang", sandbox.ExecShell, "from a script without an interpreter line\n"},
		{bin + "/bin1/tool", sandbox.ExecShell, ""},
		{"/etc", sandbox.ExecShell, ""},
		// Shell syntax, builtins.
		{"ls | wc -l", sandbox.ExecShell, ""},
		{"echo 'a b'", sandbox.ExecShell, ""},
		{"ls *.txt src/*", sandbox.ExecShell, ""},
		{"echo ~", sandbox.ExecShell, ""},
		{"x=1 env", sandbox.ExecShell, ""},
		{`ls\ -la`, sandbox.ExecShell, ""},
		{"true; false", sandbox.ExecShell, ""},
	}
	for _, c := range cases {
		a := run(t, argvTier, fx, c.cmd)
		s := run(t, shellTier, fx, c.cmd)
		name := c.cmd
		if len(name) > 60 {
			name = name[:60] + "…"
		}
		if a.ExecMode != c.mode || s.ExecMode != sandbox.ExecShell {
			t.Errorf("%q: exec_mode %q (shell-only tier %q), want %q", name, a.ExecMode, s.ExecMode, c.mode)
		}
		if c.stdout != "" && a.Stdout != c.stdout {
			t.Errorf("%q: stdout %q, want %q", name, a.Stdout, c.stdout)
		}
		if !equalOutcome(a, s) {
			t.Errorf("%q: argv mode gave %s|%q|%q, the shell %s|%q|%q", name,
				a.Headline(), a.Stdout, a.Stderr, s.Headline(), s.Stdout, s.Stderr)
		}
	}
}

// TestArgvModeEnvironment: a command started directly sees the same
// environment as under the shell; only the order of the variables, which
// the shell rebuilds, may differ.
func TestArgvModeEnvironment(t *testing.T) {
	argvTier := newTestTier(t, sandbox.Options{})
	shellTier := newTestTier(t, sandbox.Options{})
	shellTier.shellOnly = true
	fx := newFixture(t)
	env := func(r sandbox.Result) []string {
		lines := strings.Split(r.Stdout, "\n")
		slices.Sort(lines)
		return lines
	}
	req := func(r *sandbox.Request) { r.Env = []string{"LANG=C.UTF-8", "TERM=dumb"} }
	a, s := run(t, argvTier, fx, "env", req), run(t, shellTier, fx, "env", req)
	if a.ExecMode != sandbox.ExecArgv {
		t.Fatalf("env ran in %q mode", a.ExecMode)
	}
	// A scratch directory of its own per run: compare without it.
	scrub := func(r sandbox.Result) []string {
		var out []string
		for _, l := range env(r) {
			l = strings.ReplaceAll(l, r.Enforced.ScratchDir, "SCRATCH")
			out = append(out, l)
		}
		return out
	}
	if got, want := scrub(a), scrub(s); !slices.Equal(got, want) {
		t.Errorf("argv mode environment %q, the shell's %q", got, want)
	}
}

// equalOutcome compares two runs' streams (each with its own scratch
// directory, which is masked) and outcome.
func equalOutcome(a, b sandbox.Result) bool {
	out := func(r sandbox.Result, s string) string {
		return strings.ReplaceAll(s, r.Enforced.ScratchDir, "SCRATCH")
	}
	return out(a, a.Stdout) == out(b, b.Stdout) && out(a, a.Stderr) == out(b, b.Stderr) && a.Signal == b.Signal &&
		(a.ExitCode == nil) == (b.ExitCode == nil) && (a.ExitCode == nil || *a.ExitCode == *b.ExitCode)
}

// execDir makes a directory where the sandbox may execute files (under
// /usr/local/lib, so root only) holding:
//
//	bin1/tool   a script that is not executable
//	bin2/tool   an executable script that prints its arguments
//	noshebang   an executable script without #!, which only a shell runs
//
// so that tool, searched for through bin1 and bin2, is found the way the
// shell finds it: past the file it cannot execute.
func execDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/usr/local/lib", "ironvise-argv-test-")
	if err != nil {
		t.Skipf("no executable directory for the test (%v): needs root", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	files := []struct {
		name, text string
		mode       os.FileMode
	}{
		{"bin1/tool", "#!/bin/sh\necho one\n", 0o644},
		{"bin2/tool", "#!/bin/sh\necho two \"$@\"\n", 0o755},
		{"noshebang", "echo from a script without an interpreter line\nexit 3\n", 0o755},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.text), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
