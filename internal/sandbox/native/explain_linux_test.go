//go:build linux

package native

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestExplainSandboxFailures runs, in the real tier, commands that fail
// because of the sandbox's rules — a write into the read-only workspace,
// a system call the seccomp filter refuses, a tool that is not on the
// sandbox's PATH — and commands that fail for reasons of their own. The
// first get IronVise's one line (in the observation, right after the
// headline, with where the command can write); the others get none; the
// recorded streams are never changed.
func TestExplainSandboxFailures(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	requireTool(t, "/usr/bin/python3")
	requireTool(t, "/usr/bin/unshare")
	cases := []struct {
		name, cmd string
		want      string // a substring of the explanation; "" for none
	}{
		{"write into the workspace", "touch out.txt", "the workspace is read-only inside the sandbox"},
		{"redirect into the workspace", "echo x > README", "the workspace is read-only inside the sandbox"},
		{"write by absolute workspace path", "mkdir " + fx.ws + "/build", "the workspace is read-only inside the sandbox"},
		{"python writes into the workspace", `python3 -c 'open("x", "w")'`, "the workspace is read-only inside the sandbox"},
		{"write outside the scratch directory", "touch /tmp/elsewhere", "mounts everything read-only except the command's scratch directory"},
		{"socket refused by seccomp", `python3 -c 'import socket; socket.socket()'`, "system-call filter"},
		{"unshare refused by seccomp", "unshare -U true", "system-call filter"},
		{"missing tool", "nosuchtool-ironvise --version", `"nosuchtool-ironvise" is not on the sandbox's PATH`},
		{"a test that fails", "grep -q absent README", ""},
		{"a missing file", "cat no-such-file", ""},
		{"an exit code of its own", "echo 'build failed: Read-only file system is a phrase in this log' >&2; exit 0", ""},
		{"exit 127 without a shell's message", "exit 127", ""},
		{"a script's own permission message", "echo 'error: permission denied for user bob' >&2; exit 1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tier, fx, tc.cmd)
			if r.ExitCode == nil {
				t.Fatalf("no exit code: %+v", r)
			}
			got := r.Explain(fx.ws)
			obs := r.ObservationIn(fx.ws)
			switch {
			case tc.want == "":
				if got != "" || strings.Contains(obs, "[sandbox: ") {
					t.Fatalf("a failure of the command's own got an explanation %q:\n%s", got, obs)
				}
			default:
				if *r.ExitCode == 0 || !strings.Contains(got, tc.want) {
					t.Fatalf("exit %d, explanation %q; want one containing %q; output:\n%s", *r.ExitCode, got, tc.want, obs)
				}
				if !strings.Contains(got, "the command can write only under $TMPDIR ("+r.Enforced.ScratchDir+")") {
					t.Fatalf("the explanation does not say where the command can write: %q", got)
				}
				if !strings.HasPrefix(obs, r.Headline()+"\n[sandbox: "+got+"]\n") {
					t.Fatalf("the observation does not carry the explanation right after the headline:\n%s", obs)
				}
				// The streams follow, unchanged.
				if !strings.HasSuffix(obs, r.Stderr) || strings.Contains(r.Stderr+r.Stdout, "[sandbox: ") {
					t.Fatalf("the command's output was changed:\n%s", obs)
				}
			}
		})
	}
}
