package sandbox

import (
	"strings"
	"testing"
)

// TestMemoryHint covers the messages the address-space limit produces (as
// measured through the native tier at 512 MiB: Go 1.26, Node.js 20,
// Python 3.11, the JVM) and the results that must not get the hint.
func TestMemoryHint(t *testing.T) {
	native := func(exit *int, signal, stdout, stderr string, asMiB int) Result {
		return Result{Tier: TierNativeLinux, Status: StatusOK, ExitCode: exit, Signal: signal, Stdout: stdout, Stderr: stderr,
			Enforced: &Enforced{RLimits: &RLimits{ASMiB: asMiB}}}
	}
	const want512 = "the command seems to have run out of address space under ECTO_SANDBOX_MEM_MIB=512; raise it, for example ECTO_SANDBOX_MEM_MIB=4096"
	cases := []struct {
		name string
		r    Result
		want string
	}{
		{"go runtime at start", native(intp(2), "", "", "fatal error: failed to reserve page summary memory\n\nruntime stack:\n", 512), want512},
		{"go out of memory", native(intp(2), "", "", "fatal error: runtime: out of memory\n", 512), want512},
		{"v8 code range, killed by SIGTRAP", native(nil, "SIGTRAP", "", "\n#\n# Fatal process OOM in Failed to reserve virtual memory for CodeRange\n#\n", 512), want512},
		{"v8 heap", native(intp(134), "", "", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n", 512), want512},
		{"python", native(intp(1), "", "", "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nMemoryError\n", 512), want512},
		{"jvm on stdout", native(intp(1), "", "Error occurred during initialization of VM\nCould not reserve enough space for 262144KB object heap\n", "", 512), want512},
		{"mmap ENOMEM", native(intp(127), "", "", "sh: 1: ./x: error while loading shared libraries: libc.so.6: cannot allocate memory\n", 512), want512},
		{"gcc", native(intp(1), "", "", "cc1: out of memory allocating 1048576 bytes\n", 512), want512},
		{"larger limit doubles", native(intp(2), "", "", "fatal error: out of memory\n", 4096),
			"the command seems to have run out of address space under ECTO_SANDBOX_MEM_MIB=4096; raise it, for example ECTO_SANDBOX_MEM_MIB=8192"},
		{"success whatever it printed", native(intp(0), "", "grep: out of memory in a log line\n", "", 512), ""},
		{"failure without a marker", native(intp(1), "", "", "make: *** [Makefile:2: all] Error 1\n", 512), ""},
		{"no limit recorded", Result{Tier: TierNativeLinux, Status: StatusOK, ExitCode: intp(2), Stderr: "fatal error: out of memory\n", Enforced: &Enforced{}}, ""},
		{"container tier", Result{Tier: TierPodman, Status: StatusOK, ExitCode: intp(2), Stderr: "fatal error: out of memory\n",
			Enforced: &Enforced{RLimits: &RLimits{ASMiB: 512}}}, ""},
		{"permissive", Result{Tier: TierNone, Status: StatusPermissive, ExitCode: intp(2), Stderr: "fatal error: out of memory\n"}, ""},
		{"aborted", Aborted(TierNativeLinux, "sandbox setup failed: out of memory", 0), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.MemoryHint(); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
			obs := tc.r.Observation()
			line := "[sandbox: " + tc.want + "]\n"
			switch {
			case tc.want == "" && strings.Contains(obs, "ECTO_SANDBOX_MEM_MIB"):
				t.Fatalf("observation carries a hint:\n%s", obs)
			case tc.want != "" && !strings.HasPrefix(obs, tc.r.Headline()+"\n"+line):
				t.Fatalf("observation does not carry the hint right after the headline:\n%s", obs)
			}
		})
	}
}
