//go:build linux

package native

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// setidProbePy calls the set*id family inside the sandbox: switches among
// the ids the process holds (what make and friends do) and attempts to
// take another identity. It prints "OK <name>" or "ERR <name> <errno
// name>" per call, then the credential lines of /proc/self/status.
const setidProbePy = `import os, errno, ctypes
libc = ctypes.CDLL(None, use_errno=True)
def t(name, f, *a):
    try:
        f(*a); print("OK", name)
    except OSError as e:
        print("ERR", name, errno.errorcode.get(e.errno, "?"))
def fs(name, f, v):
    f(v); print("OK", name)
uid, gid = os.getuid(), os.getgid()
other = 4242
print("groups before:", sorted(os.getgroups()))
t("noop_setresuid", os.setresuid, -1, -1, -1)
t("noop_setresgid", os.setresgid, -1, -1, -1)
t("seteuid_own", os.seteuid, uid)
t("setreuid_own", os.setreuid, uid, uid)
t("setregid_own", os.setregid, gid, gid)
t("setuid_own", os.setuid, uid)
t("setgid_own", os.setgid, gid)
t("become_root", os.setresuid, 0, 0, 0)
t("become_other_user", os.setresuid, other, other, other)
t("become_other_group", os.setresgid, other, other, other)
t("setuid_other", os.setuid, other)
t("setgroups_root_group", os.setgroups, [0])
t("setgroups_empty", os.setgroups, [])
fs("setfsuid_root", libc.setfsuid, 0)
fs("setfsgid_root", libc.setfsgid, 0)
print("groups after:", sorted(os.getgroups()))
for line in open("/proc/self/status"):
    if line.split(":")[0] in ("Uid", "Gid", "Groups", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs"):
        print(line.rstrip())
`

// TestSetIDFamilyGainsNothing runs the set*id calls now allowed and proves
// that they only switch among ids the command already holds: every attempt
// at root or another user fails in the kernel with EPERM, and afterwards
// all four uids and gids, the groups and the empty capability sets are what
// they were. Before, even the no-op switches failed (make's seteuid).
func TestSetIDFamilyGainsNothing(t *testing.T) {
	requireSandbox(t)
	requireTool(t, py3)
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) {
			tier := newTestTier(t, opts)
			fx := newFixture(t)
			writeFile(t, fx.ws, "setid.py", setidProbePy)
			r := run(t, tier, fx, "python3 setid.py")
			exitZero(t, r)
			uid := *r.Enforced.UID
			lines := map[string]string{}
			for _, l := range strings.Split(r.Stdout, "\n") {
				if k, v, ok := strings.Cut(l, ":"); ok {
					lines[k] = strings.Join(strings.Fields(v), " ")
				}
			}
			for _, ok := range []string{"noop_setresuid", "noop_setresgid", "seteuid_own", "setreuid_own", "setregid_own", "setuid_own", "setgid_own"} {
				contains(t, r, "OK "+ok+"\n")
			}
			for _, denied := range []string{"become_other_user", "become_other_group", "setuid_other", "setgroups_root_group", "setgroups_empty"} {
				contains(t, r, "ERR "+denied+" EPERM\n")
			}
			if uid != 0 {
				contains(t, r, "ERR become_root EPERM\n")
			}
			u4 := strings.Repeat(strconv.Itoa(uid)+" ", 4)
			if got := lines["Uid"] + " "; got != u4 {
				t.Errorf("Uid: %q; want %q (real, effective, saved, filesystem)", lines["Uid"], strings.TrimSpace(u4))
			}
			g := strings.Fields(lines["Gid"])
			if len(g) != 4 || g[0] != g[1] || g[1] != g[2] || g[2] != g[3] {
				t.Errorf("Gid: %q; want one gid four times", lines["Gid"])
			}
			if lines["groups before"] != lines["groups after"] || lines["groups after"] == "" {
				t.Errorf("supplementary groups changed from %q to %q", lines["groups before"], lines["groups after"])
			}
			for _, c := range []string{"CapEff", "CapPrm", "CapBnd"} {
				if lines[c] != "0000000000000000" {
					t.Errorf("%s: %q; want no capabilities", c, lines[c])
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("%s", r.Observation())
			}
		})
	}
}

// hostIOPrio returns what ionice reports for a host process, and its nice
// value (field 19 of /proc/<pid>/stat).
func hostIOPrio(t *testing.T, pid int) (ioprio, nice string) {
	t.Helper()
	out, err := exec.Command("ionice", "-p", strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("ionice -p %d: %v: %s", pid, err, out)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return strings.TrimSpace(string(out)), f[16]
}

// TestIOPrioSyncAndNiceStayInside: ionice, sync and renice work for the
// command, but the per-user forms (ionice -u, renice -u) reach only the
// processes of the command's PID namespace, never a host process of the
// same user, and the realtime I/O class is refused.
func TestIOPrioSyncAndNiceStayInside(t *testing.T) {
	requireSandbox(t)
	requireTool(t, "/usr/bin/ionice")
	tier := newTestTier(t, sandbox.Options{})
	fx := newFixture(t)
	sleeper := hostSleeper(t).Process.Pid
	ioBefore, niceBefore := hostIOPrio(t, sleeper)
	uid := strconv.Itoa(os.Geteuid())
	r := run(t, tier, fx, `sync && sync -f "$TMPDIR" && echo sync-ok; ionice -c2 -n7 true && echo best-effort-ok; `+
		`ionice -c3 -u `+uid+` && ionice -p $$; renice -n 5 -u `+uid+` >/dev/null && echo reniced; `+
		`ionice -c1 -n0 true 2>&1; echo realtime=$?`)
	contains(t, r, "sync-ok\n")
	contains(t, r, "best-effort-ok\n")
	contains(t, r, "idle\n") // the command's own shell got the idle class
	contains(t, r, "reniced\n")
	contains(t, r, "Operation not permitted")
	noLeak(t, r, "realtime=0")
	if io, nice := hostIOPrio(t, sleeper); io != ioBefore || nice != niceBefore {
		t.Fatalf("host process %d changed from %q, nice %s to %q, nice %s", sleeper, ioBefore, niceBefore, io, nice)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("%s", r.Observation())
	}
}
