package sandbox

import (
	"strings"
	"testing"
)

// TestExplain covers what each tier's knowledge lets Explain claim: the
// output's error must be the one the rule produces, the command must have
// failed under a tier that enforces the rule, and the path must be the
// workspace's where that matters. The real native tier's cases are in
// package native (explain_linux_test.go).
func TestExplain(t *testing.T) {
	const ws = "/srv/ws"
	linux := func(exit *int, stderr string) Result {
		return Result{Tier: TierNativeLinux, Status: StatusOK, ExitCode: exit, Stderr: stderr,
			Enforced: &Enforced{SeccompProfileSHA256: "ab", ScratchDir: "/tmp/ironvise-scratch-1"}}
	}
	podman := func(exit *int, stderr string) Result {
		return Result{Tier: TierPodman, Status: StatusOK, ExitCode: exit, Stderr: stderr, Enforced: &Enforced{ScratchDir: "/tmp"}}
	}
	const (
		roWS    = "the workspace is read-only inside the sandbox"
		roAll   = "mounts everything read-only except"
		seccomp = "system-call filter"
		path    = "is not on the sandbox's PATH"
		execDir = "executes programs only from"
	)
	cases := []struct {
		name string
		r    Result
		want string // a substring; "" for no explanation
	}{
		{"dash redirect", linux(intp(2), "sh: 1: cannot create out.txt: Read-only file system\n"), roWS},
		{"absolute workspace path", linux(intp(1), "touch: cannot touch '/srv/ws/a/b': Read-only file system\n"), roWS},
		{"git", linux(intp(128), "fatal: Unable to create '/srv/ws/.git/index.lock': Read-only file system\n"), roWS},
		{"EACCES writing the workspace", linux(intp(1), "cp: cannot create regular file 'out': Permission denied\n"), roWS},
		{"EACCES reading a file is the file's own", linux(intp(1), "cat: secret: Permission denied\n"), ""},
		{"EACCES writing elsewhere is not claimed", linux(intp(1), "touch: cannot touch '/srv/other/x': Permission denied\n"), ""},
		{"native tier: read-only elsewhere", linux(intp(1), "touch: cannot touch '/tmp/x': Read-only file system\n"), roAll},
		{"container: read-only elsewhere is not claimed", podman(intp(1), "touch: cannot touch '/etc/x': Read-only file system\n"), ""},
		{"container: /workspace", podman(intp(1), "touch: cannot touch '/workspace/x': Read-only file system\n"), roWS},
		{"on stdout (2>&1)", Result{Tier: TierNativeLinux, Status: StatusOK, ExitCode: intp(1), Stdout: "mkdir: cannot create directory ‘b’: Read-only file system\n", Enforced: &Enforced{}}, roWS},
		{"EPERM under seccomp", linux(intp(1), "unshare: unshare failed: Operation not permitted\n"), seccomp},
		{"EPERM without a filter is not claimed", podman(intp(1), "unshare: unshare failed: Operation not permitted\n"), ""},
		{"dash not found", linux(intp(127), "sh: 1: rg: not found\n"), `"rg" ` + path},
		{"bash not found", linux(intp(127), "bash: line 1: rg: command not found\n"), `"rg" ` + path},
		{"a path not found", linux(intp(127), "sh: 1: /opt/tool/bin/x: not found\n"), "does not exist inside the sandbox"},
		{"127 without the message", linux(intp(127), ""), ""},
		{"not found with another code", linux(intp(1), "sh: 1: rg: not found\n"), ""},
		{"script in the workspace", linux(intp(126), "sh: 1: ./build.sh: Permission denied\n"), execDir},
		{"126 in a container is not claimed", podman(intp(126), "sh: 1: ./build.sh: Permission denied\n"), ""},
		{"success whatever it printed", linux(intp(0), "touch: cannot touch 'x': Read-only file system\n"), ""},
		{"ordinary failure", linux(intp(1), "FAIL: TestSomething\n"), ""},
		{"killed by a signal", Result{Tier: TierNativeLinux, Status: StatusOK, Signal: "SIGKILL", Stderr: "Read-only file system\n", Enforced: &Enforced{}}, ""},
		{"timeout", Result{Tier: TierNativeLinux, Status: StatusTimeout, Signal: "SIGKILL", Stderr: "sh: 1: cannot create x: Read-only file system\n", Enforced: &Enforced{}}, ""},
		{"permissive", Result{Tier: TierNone, Status: StatusPermissive, ExitCode: intp(2), Stderr: "sh: 1: cannot create x: Read-only file system\n"}, ""},
		{"aborted", Aborted(TierNativeLinux, "Read-only file system", 0), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Explain(ws)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("explained %q; want nothing", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.Contains(got, "the command can write only under $TMPDIR") {
				t.Fatalf("got %q; want one containing %q and where to write", got, tc.want)
			}
			if obs := tc.r.ObservationIn(ws); !strings.HasPrefix(obs, tc.r.Headline()+"\n[sandbox: "+got+"]\n") {
				t.Fatalf("observation:\n%s", obs)
			}
		})
	}
}
