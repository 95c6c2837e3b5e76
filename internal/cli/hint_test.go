package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
)

// hintBins makes two distinct executables named ironvise, one in a PATH
// directory and one in a ./bin-like directory outside PATH, and returns
// the PATH directory and both files.
func hintBins(t *testing.T) (pathDir, installed, built string) {
	t.Helper()
	root := t.TempDir()
	name := "ironvise"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	pathDir, buildDir := filepath.Join(root, "path"), filepath.Join(root, "checkout", "bin")
	for _, d := range []string{pathDir, buildDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	installed, built = filepath.Join(pathDir, name), filepath.Join(buildDir, name)
	for _, f := range []string{installed, built} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return pathDir, installed, built
}

// runAs runs the command line in-process as if the user had typed prog.
func runAs(t *testing.T, env map[string]string, prog string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{prog}, args...), strings.NewReader(""), &out, &errb, config.MapLookup(env))
	return code, out.String(), errb.String()
}

// TestHintsNameTheBinaryRun: the usage hint and the hints inside errors,
// the CLI's own and those other packages return, name ./bin/ironvise when
// that is what was run and a different ironvise is on PATH, and stay
// "ironvise" when the two are the same file.
func TestHintsNameTheBinaryRun(t *testing.T) {
	pathDir, installed, built := hintBins(t)
	env := cliEnv(t, "PATH", pathDir)
	for _, tc := range []struct {
		name string
		args []string
		want string // with PROG for the program
	}{
		{"usage", []string{"--bogus"}, "Run 'PROG --help' for usage."},
		{"error from the policy package", []string{"check", "--policy", "no-such-pack"}, "`PROG policy list`"},
		{"the CLI's own error", []string{"verify-session", "0190f1c2-7a3b-7cde-8f01-23456789abcd"}, "'PROG sessions' lists what is there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for prog, name := range map[string]string{built: built, installed: "ironvise"} {
				code, _, errOut := runAs(t, env, prog, tc.args...)
				want := strings.ReplaceAll(tc.want, "PROG", name)
				if code != ExitUsage || !strings.Contains(errOut, want) {
					t.Fatalf("run as %s: exit %d, stderr %q; want exit %d and %q", prog, code, errOut, ExitUsage, want)
				}
			}
		})
	}
}

// TestCompletion: `ironvise completion SHELL` writes each shell's script,
// and what the scripts ask the binary for (its hidden __complete command)
// offers the commands but neither the hidden guard worker nor the sandbox
// launcher's argument.
func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "complete -o default -F __start_ironvise ironvise",
		"zsh":        "#compdef ironvise",
		"fish":       "complete -c ironvise",
		"powershell": "Register-ArgumentCompleter",
	} {
		code, out, errOut := runCLI(t, cliEnv(t), "", "completion", shell)
		if code != 0 || !strings.Contains(out, marker) {
			t.Fatalf("completion %s: exit %d, stderr %q; want a script containing %q", shell, code, errOut, marker)
		}
	}
	code, out, errOut := runCLI(t, cliEnv(t), "", "__complete", "")
	if code != 0 {
		t.Fatalf("__complete: exit %d %s", code, errOut)
	}
	offered := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		offered[strings.SplitN(line, "\t", 2)[0]] = true
	}
	for _, want := range []string{"audit", "exec", "verify-session", "completion"} {
		if !offered[want] {
			t.Errorf("%q not offered; got %q", want, out)
		}
	}
	if strings.Contains(out, "guard-worker") || strings.Contains(out, "__") {
		t.Errorf("a hidden command or the launcher argument is offered: %q", out)
	}
}

// TestHintRewritingSparesPolicyText: a policy file that does not load is
// quoted in the error as it is written; a string 'ironvise …' in it is the
// user's text, not a hint, and keeps naming ironvise.
func TestHintRewritingSparesPolicyText(t *testing.T) {
	pathDir, _, built := hintBins(t)
	env := cliEnv(t, "PATH", pathDir)
	pol := filepath.Join(t.TempDir(), "p.toml")
	text := "name = \"t\"\nversion = \"1\"\napproval_gates = [ { id = \"g\", when = \"action == 'ironvise serve'\", timeout_seconds = 60 } ]\n"
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runAs(t, env, built, "check", "--policy", pol)
	if code != ExitUsage || !strings.Contains(errOut, "unknown action 'ironvise serve'") || strings.Contains(errOut, built+" serve") {
		t.Fatalf("exit %d, stderr %q; want the policy's 'ironvise serve' quoted unchanged", code, errOut)
	}
}
