package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
)

// ptraceSyscall is the syscall number perl's syscall() uses for the ptrace
// probe; 0 where the probe does not apply.
func ptraceSyscall() int {
	if runtime.GOOS != "linux" {
		return 0
	}
	switch runtime.GOARCH {
	case "amd64":
		return 101
	case "arm64":
		return 117
	}
	return 0
}

const ptraceAttach = 16 // PTRACE_ATTACH

// run performs every probe and evaluates it: one command runs the
// in-sandbox probes, then the host checks what reached it, then the limit
// and scratch probes run commands of their own.
func (p *prober) run(ctx context.Context) ([]Guarantee, *Enforced, error) {
	hidden := []string{p.protected}
	if p.container {
		// Container mode refuses a workspace holding a protected path
		// (probed below by protectedRefused): the main probe runs
		// without one.
		hidden = nil
	}
	main := p.t.Run(ctx, Request{Command: p.script(), Workspace: p.ws, Timeout: 60 * time.Second, Hidden: hidden})
	if main.Status != StatusOK && main.Status != StatusPermissive {
		return nil, main.Enforced, fmt.Errorf("doctor: the probe command did not run: %s", main.Headline())
	}
	f := parseFindings(main.Stdout)
	if f.get("done") != "yes" {
		return nil, main.Enforced, fmt.Errorf("doctor: the probe command stopped early: %s", oneLine(main.Observation()))
	}
	survivors := findSurvivors(p.marker)

	var v verdicts
	perl := strings.Contains(f.get("tools"), "perl=1")
	bash := strings.Contains(f.get("tools"), "bash=1")
	p.judgeFilesystem(&v, f, main.Stdout+main.Stderr)
	p.judgeNetwork(&v, f, perl, bash)
	judgeProcesses(&v, f, perl)
	v = append(v, p.limitProbes(ctx, f, perl)...)
	judgeCredentials(&v, f, p.container)
	v = append(v, p.proxyProbe(ctx))
	v = append(v, p.overlayProbe(ctx, hidden))
	if p.container {
		v = p.containerVerdicts(ctx, v, main.Enforced)
	}
	if len(survivors) > 0 {
		v.add(GNoSurvivors, false, true, fmt.Sprintf("background processes outlived the command: pids %v (killed by doctor)", survivors))
	} else {
		v.add(GNoSurvivors, true, true, survivorEvidence(f.get("setsid")))
	}
	return orderGuarantees(v), main.Enforced, nil
}

// script is the probe command: each probe prints "@@key:value" findings.
func (p *prober) script() string {
	tcpPort := portOf(p.tcp.Addr().String())
	udpPort := portOf(p.udp.LocalAddr().String())
	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	w(`P() { printf '@@%%s:%%s\n' "$1" "$2"; }`)
	w(`first() { head -n 1 | tr -d '\r'; }`)
	w(`HAVE_PERL=0; command -v perl >/dev/null 2>&1 && HAVE_PERL=1`)
	w(`HAVE_BASH=0; [ -x /bin/bash ] && HAVE_BASH=1`)
	w(`P tools "perl=$HAVE_PERL bash=$HAVE_BASH"`)
	// Filesystem.
	w(`r=$( { echo x > ./.ironvise-probe; } 2>&1 ) && P ws WROTE || P ws "$(printf '%%s' "$r" | first)"`)
	w(`r=$( { echo x > %s; } 2>&1 ) && P out WROTE || P out "$(printf '%%s' "$r" | first)"`, shq(filepath.Join(p.outside, "probe")))
	w(`r=$(cat %s 2>&1); P read "$(printf '%%s' "$r" | first)"`, shq(p.secret))
	w(`r=$(cat ./.ironvise-protected/key 2>&1); P hidden "$(printf '%%s' "$r" | first)"`)
	// The interfaces of the command's network namespace.
	w(`if [ -r /proc/net/dev ]; then P netdev "$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"; else P netdev "no /proc/net/dev"; fi`)
	// Credentials and limits, as the kernel reports them for this process.
	w(`grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status 2>/dev/null | while read -r k v; do P status "$k$v"; done`)
	w(`grep -E '^Max (cpu time|file size|processes|open files|address space)' /proc/self/limits 2>/dev/null | while read -r l; do P limits "$l"; done`)
	// Network.
	w(`if [ $HAVE_PERL = 1 ]; then`)
	w(`  P tcp "$(perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_in(%s, inet_aton("127.0.0.1"))) or die "connect: $!\n"; print "CONNECTED\n"' 2>&1 | first)"`, tcpPort)
	w(`  P udp "$(perl -MSocket -e 'socket(my $s, PF_INET, SOCK_DGRAM, 0) or die "socket: $!\n"; defined(send($s, "probe", 0, pack_sockaddr_in(%s, inet_aton("127.0.0.1")))) or die "send: $!\n"; print "SENT\n"' 2>&1 | first)"`, udpPort)
	if p.abstractN != "" {
		w(`  P unix_abstract "$(perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un("\0%s")) or die "connect: $!\n"; print "CONNECTED\n"' 2>&1 | first)"`, p.abstractN)
	}
	w(`  P unix_path "$(perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un("%s")) or die "connect: $!\n"; print "CONNECTED\n"' 2>&1 | first)"`, p.sockPath)
	if p.dgramPath != "" {
		// An unconnected datagram socket from socketpair, then a send
		// addressed to a host socket by path.
		w(`  P unix_dgram "$(perl -MSocket -e 'socketpair(my $a, my $b, AF_UNIX, SOCK_DGRAM, PF_UNSPEC) or die "socketpair: $!\n"; defined(send($a, "probe", 0, pack_sockaddr_un("%s"))) or die "send: $!\n"; print "SENT\n"' 2>&1 | first)"`, p.dgramPath)
	}
	w(`  P fds "$(perl -e 'my @f; while (open(my $f, "<", "/dev/null")) { push @f, $f; last if @f >= 100000 } print scalar(@f), " open: $!\n"' 2>&1 | first)"`)
	w(`elif [ $HAVE_BASH = 1 ]; then`)
	w(`  P tcp "$(/bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/%s && echo CONNECTED' 2>&1 | first)"`, tcpPort)
	w(`  P udp "$(/bin/bash -c 'echo probe > /dev/udp/127.0.0.1/%s && echo SENT' 2>&1 | first)"`, udpPort)
	w(`fi`)
	// ptrace of a sibling inside the sandbox.
	if nr := ptraceSyscall(); nr != 0 {
		w(`if [ $HAVE_PERL = 1 ]; then sleep 5 & sp=$!`)
		w(`  P ptrace "$(perl -e '$r = syscall(%d, %d, $ARGV[0], 0, 0); print $r == -1 ? "ptrace: $!\n" : "ATTACHED\n"' "$sp" 2>&1 | first)"`, nr, ptraceAttach)
		w(`  kill "$sp" 2>/dev/null; fi`)
	}
	// Signals towards IronVise itself (signal 0 only tests reachability).
	// IronVise's pid means IronVise only in its own PID namespace: the
	// command reports its namespace, and doctor compares it with its
	// own before it trusts the answer either way.
	w(`P pidns "$(readlink /proc/self/ns/pid 2>&1)"`)
	w(`P signal "$( { kill -0 %d && echo SIGNALLED; } 2>&1 | first)"`, os.Getpid())
	// Survivors: a detached process and a plain background one. Whether
	// a new session may be started at all (container mode refuses it) is
	// asked apart, so the evidence says which survivors were tried.
	w(`if command -v setsid >/dev/null 2>&1; then P setsid "$(setsid true >/dev/null 2>&1 && echo ok || echo refused)"; setsid sleep %s >/dev/null 2>&1 </dev/null & else P setsid absent; fi`, p.marker)
	w(`sleep %s >/dev/null 2>&1 </dev/null &`, p.marker)
	w(`P done yes`)
	return sb.String()
}

// verdicts collect the probes' guarantees.
type verdicts []Guarantee

// add records name as enforced when ok; probed tells whether a probe
// tried to break it (rather than the setting being read).
func (v *verdicts) add(name string, ok bool, probed bool, evidence string) {
	st := StateNotEnforced
	if ok {
		st = StateEnforced
	}
	*v = append(*v, Guarantee{Name: name, State: st, Evidence: evidence, Probed: probed})
}

func (v *verdicts) notApplicable(name, evidence string) {
	*v = append(*v, Guarantee{Name: name, State: StateNotApplicable, Evidence: evidence})
}

// judgeFilesystem checks the writes and reads of the probe command, on
// the host and in its output.
func (p *prober) judgeFilesystem(v *verdicts, f findings, output string) {
	_, wsErr := os.Stat(filepath.Join(p.ws, ".ironvise-probe"))
	v.add(GFSWorkspaceReadonly, f.get("ws") != "WROTE" && wsErr != nil, true, "write in the workspace: "+f.get("ws"))
	_, outErr := os.Stat(filepath.Join(p.outside, "probe"))
	v.add(GFSOutsideWriteDenied, f.get("out") != "WROTE" && outErr != nil, true, "write outside the workspace: "+f.get("out"))
	v.add(GFSOutsideReadDenied, !strings.Contains(output, p.secretTxt), true, "read "+p.secret+": "+f.get("read"))
	v.add(GProtectedHidden, !strings.Contains(output, p.protTxt), true,
		"read a protected file inside the workspace: "+f.get("hidden"))
}

// judgeNetwork checks the network probes, and whether anything reached
// the host's listeners.
func (p *prober) judgeNetwork(v *verdicts, f findings, perl, bash bool) {
	switch nd := strings.TrimSpace(f.get("netdev")); {
	case strings.HasPrefix(nd, "no "):
		v.add(GNetNamespace, false, false, "no /proc/net/dev in the sandbox to list interfaces with")
	default:
		v.add(GNetNamespace, nd == "lo" || nd == "", true, "interfaces visible to the command: "+nd)
	}

	tcpAccepted := acceptedWithin(p.tcp, 50*time.Millisecond)
	udpGot := receivedWithin(p.udp, 50*time.Millisecond)
	if perl || bash {
		v.add(GNetTCPDenied, !strings.Contains(f.get("tcp"), "CONNECTED") && !tcpAccepted, true, "TCP connect to 127.0.0.1: "+f.get("tcp"))
		v.add(GNetUDPDenied, !strings.Contains(f.get("udp"), "SENT") && !udpGot, true, "UDP send to 127.0.0.1: "+f.get("udp"))
	} else {
		const noTool = "no perl or bash in the sandbox to open a socket with"
		v.add(GNetTCPDenied, !tcpAccepted, false, noTool)
		v.add(GNetUDPDenied, !udpGot, false, noTool)
	}
	unixAccepted := acceptedWithin(p.pathSock, 20*time.Millisecond)
	if p.abstract != nil {
		unixAccepted = acceptedWithin(p.abstract, 20*time.Millisecond) || unixAccepted
	}
	if perl {
		ev := "connect to a pathname socket: " + f.get("unix_path")
		if p.abstractN != "" {
			ev += "; to an abstract socket: " + f.get("unix_abstract")
		}
		v.add(GUnixSocketsDenied, !strings.Contains(f.get("unix_path")+f.get("unix_abstract"), "CONNECTED") && !unixAccepted, true, ev)
	} else {
		v.add(GUnixSocketsDenied, !unixAccepted, false, "no perl in the sandbox to open a Unix socket with")
	}
	switch {
	case p.dgram == nil:
		v.notApplicable(GUnixDatagramDenied, "no Unix datagram sockets on "+runtime.GOOS)
	case perl:
		got := receivedWithin(p.dgram, 50*time.Millisecond)
		v.add(GUnixDatagramDenied, !got && !strings.Contains(f.get("unix_dgram"), "SENT"), true,
			"socketpair(AF_UNIX, SOCK_DGRAM) and a send to a host socket by path: "+f.get("unix_dgram"))
	default:
		v.add(GUnixDatagramDenied, !receivedWithin(p.dgram, 20*time.Millisecond), false, "no perl in the sandbox to open a socket pair with")
	}
}

// judgeProcesses checks the ptrace and signal probes.
func judgeProcesses(v *verdicts, f findings, perl bool) {
	switch {
	case ptraceSyscall() == 0:
		v.notApplicable(GPtraceDenied, "no ptrace probe for "+runtime.GOOS+"/"+runtime.GOARCH)
	case perl:
		v.add(GPtraceDenied, !strings.Contains(f.get("ptrace"), "ATTACHED"), true, "PTRACE_ATTACH to a sibling process: "+f.get("ptrace"))
	default:
		v.add(GPtraceDenied, true, false, "no perl in the sandbox to call ptrace with")
	}
	judgeSignals(v, f)
}

// judgeSignals checks the signal probe. In the command's own PID
// namespace IronVise has no pid at all: the number it has in its own names
// some process of the command's (the command itself is pid 1 there), so
// a delivered signal says nothing, and nothing it can name lies outside
// the sandbox.
func judgeSignals(v *verdicts, f findings) {
	own, _ := os.Readlink("/proc/self/ns/pid")
	theirs := f.get("pidns")
	attempt := fmt.Sprintf("kill -0 of IronVise (pid %d): %s", os.Getpid(), f.get("signal"))
	if own != "" && strings.HasPrefix(theirs, "pid:") && theirs != own {
		v.add(GSignalsScoped, true, true, fmt.Sprintf("the command runs in PID namespace %s, IronVise in %s: no process outside the sandbox has a pid there to signal (%s, a process of the sandbox's own)", theirs, own, attempt))
		return
	}
	v.add(GSignalsScoped, !strings.Contains(f.get("signal"), "SIGNALLED"), true, attempt)
}

// judgeCredentials reads the capabilities and no_new_privs the kernel
// reported for the command.
//
// In container mode a non-root IronVise has no CAP_SETPCAP to empty the
// command's bounding set; the set grants nothing by itself. What matters
// is that the command holds no capability and can gain none: with
// no_new_privs execve grants none (set-user-ID and file capabilities are
// ignored), and the seccomp profile refuses new user namespaces. So there
// a non-empty bounding set with every other set empty and no_new_privs set
// counts as dropped, and the evidence says so.
func judgeCredentials(v *verdicts, f findings, container bool) {
	status := strings.Join(f.all("status"), ", ")
	if status == "" {
		v.add(GCapsDropped, false, false, "/proc/self/status is not readable in the sandbox")
		v.add(GNoNewPrivs, false, false, "/proc/self/status is not readable in the sandbox")
		return
	}
	capsZero, bndZero := true, true
	nnp := ""
	for _, s := range f.all("status") {
		if strings.HasPrefix(s, "Cap") && strings.Trim(s[strings.IndexByte(s, ':')+1:], "0\t ") != "" {
			if strings.HasPrefix(s, "CapBnd:") {
				bndZero = false
			} else {
				capsZero = false
			}
		}
		if strings.HasPrefix(s, "NoNewPrivs:") {
			nnp = s
		}
	}
	nnpSet := strings.TrimSpace(strings.TrimPrefix(nnp, "NoNewPrivs:")) == "1"
	evidence := status
	dropped := capsZero && bndZero
	if container && capsZero && !bndZero && nnpSet {
		dropped = true
		evidence += "; the bounding set is not empty (IronVise has no CAP_SETPCAP to empty it), but no capability can be gained: no_new_privs makes execve grant none and seccomp refuses new user namespaces"
	}
	v.add(GCapsDropped, dropped, true, evidence)
	v.add(GNoNewPrivs, nnpSet, true, nnp)
}

// limitProbes exceed each limit for real, with lowered per-request limits
// so that doctor stays quick.
func (p *prober) limitProbes(ctx context.Context, f findings, perl bool) []Guarantee {
	var v verdicts
	limits := strings.Join(f.all("limits"), "; ")

	// The timeouts are generous so that a loaded machine cannot turn a
	// working limit into a timeout; a working limit ends each probe in
	// about a second.
	cpu := p.t.Run(ctx, Request{Command: "while :; do :; done", Workspace: p.ws, Limits: Limits{CPUSecs: 1}, Timeout: 60 * time.Second})
	// A container runtime reports a killed PID 1 as exit 128+N; the busy
	// loop cannot exit any other way.
	cpuKilled := cpu.Signal != "" || (cpu.ExitCode != nil && *cpu.ExitCode > 128)
	v.add(GLimitCPU, cpu.Status == StatusOK && cpuKilled, true,
		fmt.Sprintf("busy loop with a 1 s CPU limit: %s after %.1f s", cpu.Headline(), cpu.Duration.Seconds()))

	mem := p.t.Run(ctx, Request{Command: `awk 'BEGIN { s = "x"; for (;;) s = s s }'`, Workspace: p.ws, Limits: Limits{MemMiB: 64}, Timeout: 60 * time.Second})
	memOK := mem.Status == StatusOK && (mem.Signal != "" || (mem.ExitCode != nil && *mem.ExitCode != 0))
	v.add(GLimitMemory, memOK, true, fmt.Sprintf("doubling a string with a 64 MiB address-space cap: %s %s", mem.Headline(), FirstLine(mem.Stderr, 0)))

	if fds := f.get("fds"); perl && fds != "" {
		n, _ := strconv.Atoi(strings.Fields(fds + " x")[0])
		v.add(GLimitFDs, n > 0 && n < 100000, true, "opening /dev/null until refused: "+fds)
	} else {
		v.add(GLimitFDs, strings.Contains(limits, "open files"), false, limits)
	}

	procs := p.t.Run(ctx, Request{
		Command:   `i=0; while [ $i -lt 1000 ]; do sleep 3 & i=$((i+1)); printf '%s\n' "$i"; done; echo ALL-STARTED`,
		Workspace: p.ws, Limits: Limits{NProc: 16}, Timeout: 60 * time.Second,
	})
	lines := strings.Fields(procs.Stdout)
	// The count of sleeps started: none when the first fork was refused
	// (the limit already reached by the command's own processes).
	last := "none"
	if len(lines) > 0 {
		last = lines[len(lines)-1]
	}
	backstop := "RLIMIT_NPROC 16"
	if procs.Enforced != nil && procs.Enforced.PidMax != nil {
		// uid 0 is exempt from RLIMIT_NPROC; the PID namespace's pid_max
		// counts every PID it ever hands out, the kernel's 300 reserved
		// ones included.
		backstop = fmt.Sprintf("pid_max %d of the command's PID namespace (16 processes plus the kernel's 300 reserved PIDs; RLIMIT_NPROC does not bind uid 0)", *procs.Enforced.PidMax)
	}
	v.add(GLimitProcesses, procs.Status == StatusOK && !strings.Contains(procs.Stdout, "ALL-STARTED"), true,
		fmt.Sprintf("1000 background sleeps under %s: the kernel refused a fork after %s had started: %s", backstop, last, FirstLine(procs.Stderr, 0)))

	v = append(v, p.scratchProbes(ctx)...)
	return v
}

// scratchProbes fill the scratch space past its cap, leave behind a tree
// its own user cannot remove, and check what is left on the host.
func (p *prober) scratchProbes(ctx context.Context) []Guarantee {
	fill := `i=0; while [ $i -lt 16 ]; do head -c 67108864 /dev/zero > "$TMPDIR/fill$i" 2>/dev/null || break; i=$((i+1)); done; ` +
		`printf '@@scratch:%s\n' "$(du -sm "$TMPDIR" 2>/dev/null | cut -f1)"; `
	if p.container {
		// No scratch cap to probe (containerVerdicts): filling the
		// container's disk proves nothing.
		fill = ""
	}
	r := p.t.Run(ctx, Request{
		Command:   fill + `mkdir -p "$TMPDIR/locked/deep" && chmod 000 "$TMPDIR/locked/deep" "$TMPDIR/locked"; echo @@done:yes`,
		Workspace: p.ws, Timeout: 60 * time.Second,
	})
	if r.Status != StatusOK && r.Status != StatusPermissive {
		return []Guarantee{
			{Name: GScratchCapped, State: StateNotEnforced, Evidence: "the probe did not run: " + r.Headline()},
			{Name: GScratchCleanup, State: StateNotEnforced, Evidence: "the probe did not run: " + r.Headline()},
		}
	}
	f := parseFindings(r.Stdout)
	used, _ := strconv.Atoi(f.get("scratch"))
	var v verdicts
	capMiB := 0
	if r.Enforced != nil && r.Enforced.Scratch != nil {
		capMiB = r.Enforced.Scratch.MiB
	}
	switch {
	case capMiB > 0:
		v.add(GScratchCapped, used <= capMiB, true,
			fmt.Sprintf("writing 1 GiB into the scratch space stopped at %d MiB (cap %d MiB, %d inodes)", used, capMiB, r.Enforced.Scratch.Inodes))
	case used > 0 && used < 1024:
		v.add(GScratchCapped, true, true, fmt.Sprintf("writing 1 GiB into the scratch space stopped at %d MiB", used))
	default:
		v.add(GScratchCapped, false, true, fmt.Sprintf("1 GiB written into the scratch space (%d MiB counted)", used))
	}
	switch {
	case r.Enforced != nil && r.Enforced.Scratch != nil:
		// Gone, or (a long-lived native tier's shared mount point) an
		// empty directory: nothing of the command is on the host.
		left, err := os.ReadDir(r.Enforced.ScratchDir)
		v.add(GScratchCleanup, r.Enforced.Scratch.Cleanup == ScratchRemoved && (os.IsNotExist(err) || err == nil && len(left) == 0), true,
			"after a chmod 000 tree was left in scratch: "+r.Enforced.Scratch.Cleanup)
	case r.Enforced != nil && filepath.IsAbs(r.Enforced.ScratchDir) && (p.t.Name() == TierNativeDarwin):
		_, err := os.Stat(r.Enforced.ScratchDir)
		v.add(GScratchCleanup, os.IsNotExist(err), true,
			"after a chmod 000 tree was left in scratch, the host directory "+r.Enforced.ScratchDir+" exists: "+strconv.FormatBool(err == nil))
	default:
		v = append(v, Guarantee{Name: GScratchCleanup, State: StateEnforced,
			Evidence: "the scratch space lives inside the " + string(p.t.Name()) + " and goes with it"})
	}
	return v
}

// containerVerdicts restate, for container mode, the guarantees whose
// isolation the container provides, and probe how protected paths are
// kept out instead of masked.
func (p *prober) containerVerdicts(ctx context.Context, v verdicts, e *Enforced) verdicts {
	set := func(name string, st State, probed bool, ev string) {
		for i := range v {
			if v[i].Name == name {
				v[i] = Guarantee{Name: name, State: st, Evidence: ev, Probed: probed}
			}
		}
	}
	r := p.t.Run(ctx, Request{Command: "cat ./.ironvise-protected/key", Workspace: p.ws, Timeout: 60 * time.Second, Hidden: []string{p.protected}})
	refused := r.Status == StatusAborted && strings.Contains(r.Reason, p.protected) && !strings.Contains(r.Stdout+r.Stderr, p.protTxt)
	st := StateNotEnforced
	if refused {
		st = StateEnforced
	}
	set(GProtectedHidden, st, true, "kept out by construction, not masked: a run whose workspace holds a protected directory: "+r.Headline())
	set(GNetNamespace, StateDelegated, false, "the container's network namespace, which the command shares with IronVise; seccomp refuses the command socket(2) of every family")
	fsize := DefaultFSizeMiB
	if e != nil && e.RLimits != nil {
		fsize = e.RLimits.FSizeMiB
	}
	set(GScratchCapped, StateDelegated, false, fmt.Sprintf("the container's storage: the scratch directory is a plain directory in %s (no tmpfs of its own); RLIMIT_FSIZE caps each file at %d MiB", os.TempDir(), fsize))
	for _, g := range v {
		if g.Name != GLimitProcesses || g.State == StateEnforced {
			continue
		}
		if limit := pidsLimit(); limit != "" {
			set(GLimitProcesses, StateDelegated, true, "the container's pids limit ("+limit+"): RLIMIT_NPROC is set but does not bind root of the initial user namespace; "+g.Evidence)
		} else {
			set(GLimitProcesses, StateNotEnforced, true, "no pids limit on IronVise's cgroup, and RLIMIT_NPROC does not bind root of the initial user namespace; "+g.Evidence)
		}
	}
	return v
}

// pidsLimit is the tightest pids.max of IronVise's cgroup and its
// ancestors, as "pids.max N of /sys/fs/cgroup/…"; "" when none is set or
// none can be read. Under cgroup v2 the unified hierarchy is read, under
// v1 the pids controller's; inside a container the hierarchy is mounted at
// the container's own cgroup, which the walk up from IronVise's path
// reaches.
func pidsLimit() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	best, where := -1, ""
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		base := ""
		switch {
		case f[0] == "0" && f[1] == "":
			base = "/sys/fs/cgroup"
		case slices.Contains(strings.Split(f[1], ","), "pids"):
			base = "/sys/fs/cgroup/pids"
		default:
			continue
		}
		for dir := filepath.Join(base, f[2]); ; dir = filepath.Dir(dir) {
			if b, err := os.ReadFile(filepath.Join(dir, "pids.max")); err == nil {
				if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && (best < 0 || n < best) {
					best, where = n, dir
				}
			}
			if dir == base || !strings.HasPrefix(dir, base) {
				break
			}
		}
	}
	if best < 0 {
		return ""
	}
	return fmt.Sprintf("pids.max %d of %s", best, where)
}

// findings are the "@@key:value" lines of a probe's stdout.
type findings map[string][]string

func parseFindings(out string) findings {
	f := findings{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "@@")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(rest, ":")
		f[k] = append(f[k], strings.TrimSpace(v))
	}
	return f
}

func (f findings) get(k string) string {
	if v := f[k]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

func (f findings) all(k string) []string { return f[k] }

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// orderGuarantees sorts gs into the order of GuaranteeNames.
func orderGuarantees(gs []Guarantee) []Guarantee {
	idx := map[string]int{}
	for i, n := range GuaranteeNames() {
		idx[n] = i
	}
	out := make([]Guarantee, len(GuaranteeNames()))
	for _, g := range gs {
		out[idx[g.Name]] = g
	}
	return out
}

// findSurvivors returns the pids whose command line carries marker, and
// kills them.
func findSurvivors(marker string) []int {
	pids, _ := ProcessesMatching(context.Background(), marker)
	killAll(pids)
	return pids
}

// acceptedWithin reports whether a connection reached l within d.
func acceptedWithin(l net.Listener, d time.Duration) bool {
	if dl, ok := l.(interface{ SetDeadline(time.Time) error }); ok {
		_ = dl.SetDeadline(time.Now().Add(d))
	}
	c, err := l.Accept()
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// receivedWithin reports whether a datagram reached pc within d.
func receivedWithin(pc net.PacketConn, d time.Duration) bool {
	_ = pc.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 64)
	_, _, err := pc.ReadFrom(buf)
	return err == nil
}

// ProcessesMatching returns the pids of the processes whose command line
// contains marker, IronVise's own excepted: how doctor, the macOS tier's
// self-test and the tests find a probe's background processes that
// outlived it. It reads /proc where there is one and asks ps elsewhere
// (macOS).
func ProcessesMatching(ctx context.Context, marker string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil || len(entries) == 0 {
		return processesMatchingPS(ctx, marker)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// processesMatchingPS is ProcessesMatching from ps's listing. ps is
// absolute so that the host's PATH plays no part; -A and -o exist in both
// macOS's and procps's ps.
func processesMatchingPS(ctx context.Context, marker string) ([]int, error) {
	out, err := exec.CommandContext(ctx, "/bin/ps", "-A", "-o", "pid=", "-o", "command=").Output()
	if err != nil {
		return nil, fmt.Errorf("/bin/ps: %w", err)
	}
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.Contains(line, marker) {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killAll kills each of pids, as far as it still exists.
func killAll(pids []int) {
	for _, pid := range pids {
		if proc, err := os.FindProcess(pid); err == nil {
			_ = proc.Kill()
		}
	}
}

// proxyPort is the egress proxy's port inside a proxy-mode command's
// network namespace (the native Linux tier's launch.ProxyPort, which this
// package cannot import).
const proxyPort = 3128

// proxyProbe runs a command in proxy mode (net_proxy_only), with rules that
// opt in to one HTTP server doctor serves on IronVise's 127.0.0.1: the
// command must see loopback alone and no route, get the server's token
// through the proxy, and fail to reach the server directly or to send UDP.
// A tier that refuses proxy-mode runs makes the guarantee not applicable:
// such runs fail closed there.
func (p *prober) proxyProbe(ctx context.Context) Guarantee {
	g := func(s State, probed bool, ev string) Guarantee {
		return Guarantee{Name: GNetProxyOnly, State: s, Evidence: ev, Probed: probed}
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return g(StateNotEnforced, false, "doctor could not listen on 127.0.0.1 for the proxy probe: "+err.Error())
	}
	token := "ironvise-doctor-proxy-" + randomToken()
	var mu sync.Mutex
	hits := 0
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		_, _ = io.WriteString(w, token+"\n")
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	port := portOf(ln.Addr().String())
	udpPort := portOf(p.udp.LocalAddr().String())

	var sb strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	w(`P() { printf '@@%%s:%%s\n' "$1" "$2"; }`)
	w(`first() { head -n 1 | tr -d '\r'; }`)
	w(`P netdev "$(tail -n +3 /proc/net/dev 2>/dev/null | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"`)
	w(`P routes "$(tail -n +2 /proc/net/route 2>/dev/null | wc -l | tr -d ' ')"`)
	w(`if command -v perl >/dev/null 2>&1; then`)
	w(`  P proxied "$(perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_in(%d, inet_aton("127.0.0.1"))) or die "connect: $!\n"; syswrite($s, "GET http://127.0.0.1:%s/ HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n"); my $all = ""; while (sysread($s, my $b, 4096)) { $all .= $b } my ($t) = $all =~ /(ironvise-doctor-proxy-\w+)/; print(($t // "no token: " . (split /\r\n/, $all)[0]), "\n")' 2>&1 | first)"`, proxyPort, port, port)
	w(`  P direct "$(perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_in(%s, inet_aton("127.0.0.1"))) or die "connect: $!\n"; print "CONNECTED\n"' 2>&1 | first)"`, port)
	w(`  P udp "$(perl -MSocket -e 'socket(my $s, PF_INET, SOCK_DGRAM, 0) or die "socket: $!\n"; defined(send($s, "probe", 0, pack_sockaddr_in(%s, inet_aton("127.0.0.1")))) or die "send: $!\n"; print "SENT\n"' 2>&1 | first)"`, udpPort)
	w(`fi`)
	w(`P done yes`)
	rules := egress.NewRules(nil, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	r := p.t.Run(ctx, Request{Command: sb.String(), Workspace: p.ws, Timeout: 30 * time.Second, Egress: rules})
	if r.Status == StatusAborted {
		return g(StateNotApplicable, true, "a proxy-mode run is refused (fails closed): "+oneLine(r.Reason))
	}
	if r.Status != StatusOK || r.Enforced == nil {
		return g(StateNotEnforced, true, "the proxy-mode probe did not run confined: "+r.Headline())
	}
	if r.Enforced.Network != "proxy" {
		return g(StateNotEnforced, true, fmt.Sprintf("the tier ran a proxy-mode request with network %q instead of proxy", r.Enforced.Network))
	}
	f := parseFindings(r.Stdout)
	if f.get("done") != "yes" {
		return g(StateNotEnforced, true, "the proxy-mode probe stopped early: "+oneLine(r.Observation()))
	}
	nd, routes := strings.TrimSpace(f.get("netdev")), f.get("routes")
	ev := fmt.Sprintf("interfaces: %s; routes: %s", nd, routes)
	ok := nd == "lo" && routes == "0"
	udpGot := receivedWithin(p.udp, 50*time.Millisecond)
	mu.Lock()
	served := hits
	mu.Unlock()
	allowed := 0
	for _, rec := range r.Egress {
		if rec.Verdict == "allow" {
			allowed++
		}
	}
	if f.get("proxied") == "" {
		// No perl: the namespace is checked, the exits are not.
		return g(stateOf(ok), false, ev+"; no perl in the sandbox to open a socket with")
	}
	proxied := f.get("proxied") == token
	ok = ok && proxied && served == 1 && allowed == 1 && !strings.Contains(f.get("direct"), "CONNECTED") &&
		!strings.Contains(f.get("udp"), "SENT") && !udpGot
	ev += fmt.Sprintf("; through the proxy: %s; direct TCP to IronVise's loopback: %s; UDP: %s; %d connection(s) recorded",
		map[bool]string{true: "reached the opted-in host", false: f.get("proxied")}[proxied], f.get("direct"), f.get("udp"), len(r.Egress))
	return g(stateOf(ok), true, ev)
}

// stateOf is enforced when ok.
func stateOf(ok bool) State {
	if ok {
		return StateEnforced
	}
	return StateNotEnforced
}

// overlayProbe runs a command in overlay mode on the probe workspace: it
// creates a directory and a file, appends to one file, deletes another and
// renames a directory, all through the workspace. The guarantee holds when
// each change is in the command's layer (the deletion as a whiteout) and
// the real workspace is exactly as before. A tier that refuses
// overlay-mode runs makes it not applicable: such runs fail closed there.
func (p *prober) overlayProbe(ctx context.Context, hidden []string) Guarantee {
	g := func(s State, probed bool, ev string) Guarantee {
		return Guarantee{Name: GFSOverlayIsolated, State: s, Evidence: ev, Probed: probed}
	}
	dir := filepath.Join(p.base, "overlay")
	ov := &Overlay{Upper: filepath.Join(dir, "upper"), Work: filepath.Join(dir, "work")}
	for _, d := range []string{ov.Upper, ov.Work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return g(StateNotEnforced, false, "doctor could not create the overlay probe's layer: "+err.Error())
		}
	}
	if err := os.WriteFile(filepath.Join(p.ws, "overlay-victim"), []byte("delete me\n"), 0o644); err != nil {
		return g(StateNotEnforced, false, "doctor could not write the overlay probe's fixture: "+err.Error())
	}
	if err := os.MkdirAll(filepath.Join(p.ws, "overlay-dir"), 0o755); err != nil {
		return g(StateNotEnforced, false, "doctor could not write the overlay probe's fixture: "+err.Error())
	}
	defer os.Remove(filepath.Join(p.ws, "overlay-victim"))
	defer os.Remove(filepath.Join(p.ws, "overlay-dir"))
	before, err := treeDigest(p.ws)
	if err != nil {
		return g(StateNotEnforced, false, "doctor could not read the probe workspace: "+err.Error())
	}
	cmd := `mkdir overlay-new && echo probe > overlay-new/file && echo more >> README && rm overlay-victim && mv overlay-dir overlay-moved && echo @@done:yes`
	r := p.t.Run(ctx, Request{Command: cmd, Workspace: p.ws, Timeout: 30 * time.Second, Hidden: hidden, Overlay: ov})
	if r.Status == StatusAborted {
		return g(StateNotApplicable, true, "an overlay-mode run is refused (fails closed): "+oneLine(r.Reason))
	}
	if r.Status != StatusOK || r.Enforced == nil {
		return g(StateNotEnforced, true, "the overlay-mode probe did not run confined: "+r.Headline())
	}
	if r.Enforced.Workspace != "overlay" || r.Enforced.Overlay == nil {
		return g(StateNotEnforced, true, fmt.Sprintf("the tier ran an overlay-mode request with workspace %q instead of overlay", r.Enforced.Workspace))
	}
	if !strings.Contains(r.Stdout, "@@done:yes") {
		return g(StateNotEnforced, true, "the overlay-mode probe could not write through the workspace: "+oneLine(r.Observation()))
	}
	after, err := treeDigest(p.ws)
	if err != nil || after != before {
		return g(StateNotEnforced, true, fmt.Sprintf("the real workspace changed under an overlay-mode command (%v)", err))
	}
	var missing []string
	if b, err := os.ReadFile(filepath.Join(ov.Upper, "overlay-new", "file")); err != nil || string(b) != "probe\n" {
		missing = append(missing, "the new file")
	}
	if b, err := os.ReadFile(filepath.Join(ov.Upper, "README")); err != nil || !strings.HasSuffix(string(b), "more\n") {
		missing = append(missing, "the changed file")
	}
	if fi, err := os.Lstat(filepath.Join(ov.Upper, "overlay-victim")); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		missing = append(missing, "the deletion's whiteout")
	}
	if _, err := os.Lstat(filepath.Join(ov.Upper, "overlay-moved")); err != nil {
		missing = append(missing, "the renamed directory")
	}
	if len(missing) > 0 {
		return g(StateNotEnforced, true, "the command's layer lacks "+strings.Join(missing, ", "))
	}
	return g(StateEnforced, true, fmt.Sprintf("a command in overlay mode (%s) created, changed, deleted and renamed through the workspace; every change is in its layer and the real workspace is unchanged", r.Enforced.Overlay.Options))
}

// treeDigest hashes every entry under root: its path, type, mode, size and
// modification time, and a regular file's content.
func treeDigest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d %d\n", path, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil)), err
}

// survivorEvidence is the no_survivors evidence of a run none outlived,
// by what the probe found of setsid.
func survivorEvidence(setsid string) string {
	switch setsid {
	case "ok":
		return "a setsid'd and a background sleep were both gone when the command returned"
	case "refused":
		return "a background sleep was gone when the command returned; setsid is refused, so no process of the command leaves its process group"
	}
	return "a background sleep was gone when the command returned (no setsid tool to try a detached one)"
}
