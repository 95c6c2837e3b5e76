//go:build linux

package launch

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// ReaperArg, as the argument after [Arg], makes the process the reaper of
// container mode instead of a launcher.
//
// # Why a reaper
//
// Without a PID namespace of its own, a command is not PID 1 of anything:
// killing it does not take its descendants along, and a background or
// setsid'd process, or one that forked twice, would outlive it. The
// reaper is a child subreaper (PR_SET_CHILD_SUBREAPER): every orphan of
// the command is re-parented to it, so everything the command started
// stays its descendant. It starts the launcher proper as its child (which
// confines itself and becomes the command), waits for that child, then
// kills every descendant left, until it has none; SIGTERM (the tier's
// timeout or cancellation, or IronVise's death through the parent-death
// signal) does the same at once. Its last status record is the command's
// [Outcome].
//
// The reaper is not confined (it runs only this code) and the command
// cannot reach it: the command's Landlock domain scopes signals (ABI 6)
// and denies ptrace of any process outside the domain, and seccomp denies
// ptrace outright.
const ReaperArg = "reaper"

// ReapTimeout bounds the reaper's final sweep: SIGKILL cannot be caught,
// so only a process stuck in the kernel (uninterruptible sleep) can make
// it last longer.
const ReapTimeout = 30 * time.Second

// reaperMain is the reaper's whole life; it returns the process's exit
// code.
func reaperMain(exe string) int {
	status := os.NewFile(StatusFD, "launch-status")
	fail := func(err error) int {
		_ = kernel.Write(StatusFD, append(Status{Error: &SetupError{Step: StepReaper, Message: err.Error()}}.Marshal(), '\n'))
		return ExitFailed
	}
	// The parent-death signal of the launcher is tied to the thread that
	// forked it: that thread must live as long as the reaper.
	runtime.LockOSThread()
	// Security: only the descriptors passed on below reach the launcher.
	if err := kernel.CloseRangeCloexec(StatusFD); err != nil {
		return fail(fmt.Errorf("close_range CLOEXEC: %w", err))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err))
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pid, err := syscall.ForkExec(exe, []string{exe, Arg}, &syscall.ProcAttr{
		Dir: "/", Env: Env(),
		Files: []uintptr{0, 1, 2, StatusFD, SpecFD},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	// The specification is the launcher's alone.
	_ = syscall.Close(SpecFD)
	if err != nil {
		return fail(fmt.Errorf("start the launcher: %w", err))
	}
	// group guards the command's group id: it is signalled only until the
	// command's zombie is reaped, after which the id may be reused.
	var group sync.Mutex
	go func() {
		// Killing the tree makes the launcher (or the command) end,
		// which the wait below sees; the sweep after it finishes the job.
		for range term {
			group.Lock()
			if pid > 0 {
				_ = unix.Kill(-pid, unix.SIGKILL)
			}
			group.Unlock()
			killDescendants()
		}
	}()
	if err := awaitExit(pid); err != nil {
		return fail(fmt.Errorf("wait for the command: %w", err))
	}
	killed, err := sweep(pid, ReapTimeout)
	if err != nil {
		return fail(err)
	}
	group.Lock()
	var ws unix.WaitStatus
	_, err = unix.Wait4(pid, &ws, 0, nil)
	for err == unix.EINTR {
		_, err = unix.Wait4(pid, &ws, 0, nil)
	}
	pid = 0
	group.Unlock()
	if err != nil {
		return fail(fmt.Errorf("wait for the command: %w", err))
	}
	out := Outcome{Exit: -1, Killed: killed}
	switch {
	case ws.Exited():
		out.Exit = ws.ExitStatus()
	case ws.Signaled():
		out.Signal = int(ws.Signal())
	}
	if err := kernel.Write(StatusFD, append(Status{Outcome: &out}.Marshal(), '\n')); err != nil {
		return ExitFailed
	}
	_ = status.Close()
	return 0
}

// The command's process group.
//
// The launcher calls setsid before it becomes the command, so the command
// leads a process group whose id is its pid, and every process it starts
// stays in that group unless it calls setsid or setpgid. kill(-pgid) reaches
// the whole group in one call, including a child still being forked (the
// kernel makes a fork that a group signal overlaps fail or receive it): a
// fork bomb cannot outrun it, as it can outrun killing its processes one at
// a time when the reaper gets little CPU against hundreds of forking
// processes. A group id can only be signalled safely while it cannot be
// reused: the reaper leaves the command's own exit status unreaped
// (awaitExit, reapOthers) until the sweep has ended, and a pid that is
// still a zombie is neither reused as a pid nor as a group id.

// awaitExit blocks until the command (the reaper's child pid) has exited,
// reaping every other child (orphans re-parented to the reaper) meanwhile
// but leaving pid a zombie.
func awaitExit(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if exited(pid) {
			return nil
		}
		reapOthers(pid)
	}
}

// exited reports whether the child pid has exited, without reaping it.
func exited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		// Signo is left zero when the child has not exited yet.
		return err == nil && info.Signo != 0
	}
}

// reapOthers reaps every child of the reaper that has exited, except keep,
// and returns how many children other than keep are left.
func reapOthers(keep int) (reaped bool, left int) {
	for _, k := range children() {
		if k == keep {
			continue
		}
		var ws unix.WaitStatus
		got, err := unix.Wait4(k, &ws, unix.WNOHANG, nil)
		for err == unix.EINTR {
			got, err = unix.Wait4(k, &ws, unix.WNOHANG, nil)
		}
		switch {
		case got == k:
			reaped = true
		case err == nil:
			left++ // not exited yet
		}
	}
	return reaped, left
}

// children lists the reaper's children, zombies included.
func children() []int {
	if kids, ok := childrenOf(os.Getpid()); ok {
		return kids
	}
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(pid); ok && ppid == os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

// onlyChild reports whether pid is the reaper's only child.
func onlyChild(pid int) bool {
	for _, k := range children() {
		if k != pid {
			return false
		}
	}
	return true
}

// sweep kills every descendant of the reaper and reaps them, until the
// command's own zombie (pid) is its only child; it returns how many
// processes it killed. A process that forks while the sweep runs is found
// in the next round: its parent dies, and the subreaper adopts it.
func sweep(pid int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	freeze(pid, time.Now().Add(freezeTimeout))
	killed := 0
	for {
		// The command's group first, all of it at once; then whatever
		// left the group.
		_ = unix.Kill(-pid, unix.SIGKILL)
		killed += killDescendants()
		reaped, left := reapOthers(pid)
		if left == 0 && onlyChild(pid) {
			// Every descendant is a child's descendant or an orphan
			// re-parented to the reaper: none is left.
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("processes of the command still exist after %s of SIGKILL: %v", timeout, descendants(os.Getpid()))
		}
		if !reaped {
			// Killed, not yet dead.
			time.Sleep(time.Millisecond)
		}
	}
}

// freezeTimeout bounds freeze; the sweep's kills follow either way.
const freezeTimeout = 5 * time.Second

// freeze stops every descendant of the reaper (SIGSTOP) until one round
// finds all of them stopped. A stopped process cannot fork, so the tree
// stops growing and the kills that follow reach all of it; a fork bomb
// killed without it re-forks faster than a round can list and kill it on
// a loaded machine, and outlived the sweep's bound.
func freeze(pid int, deadline time.Time) {
	for time.Now().Before(deadline) {
		_ = unix.Kill(-pid, unix.SIGSTOP)
		procs := descendants(os.Getpid())
		for _, p := range procs {
			_ = unix.Kill(p, unix.SIGSTOP)
		}
		all := true
		for _, p := range procs {
			if _, state, ok := procStat(p); ok && state != 'T' && state != 't' && state != 'Z' {
				all = false
				break
			}
		}
		if all {
			return
		}
		// Signalled, not yet stopped: let them be scheduled.
		time.Sleep(time.Millisecond)
	}
}

// killDescendants sends SIGKILL to every live descendant of the reaper
// and returns how many it signalled.
func killDescendants() int {
	n := 0
	for _, p := range descendants(os.Getpid()) {
		if unix.Kill(p, unix.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// descendants lists the processes below root that have not exited yet,
// parents before their children. It reads the kernel's child lists
// (/proc/<pid>/task/<tid>/children), and the parent of every process in
// /proc where the kernel has no such lists.
func descendants(root int) []int {
	var out []int
	todo := []int{root}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		kids, ok := childrenOf(p)
		if !ok {
			return descendantsByScan(root)
		}
		for _, k := range kids {
			if !zombie(k) {
				out = append(out, k)
			}
			todo = append(todo, k)
		}
	}
	return out
}

// childrenOf reads the children of every thread of pid; false when the
// kernel has no child lists (CONFIG_PROC_CHILDREN). A process that has
// gone has no children.
func childrenOf(pid int) ([]int, bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if os.IsNotExist(err) {
			if _, serr := os.Stat(dir + "/" + t.Name()); serr == nil {
				return nil, false
			}
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, true
}

// descendantsByScan is descendants from every process's parent in /proc.
func descendantsByScan(root int) []int {
	entries, _ := os.ReadDir("/proc")
	kids := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := procStat(pid); ok {
			if state != 'Z' {
				kids[ppid] = append(kids[ppid], pid)
			}
		}
	}
	var out []int
	todo := []int{root}
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		out = append(out, kids[p]...)
		todo = append(todo, kids[p]...)
	}
	return out
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	_, state, ok := procStat(pid)
	return ok && state == 'Z'
}

// procStat reads the parent and the state of pid from /proc/<pid>/stat
// ("pid (comm) S ppid …"; comm may hold spaces and parentheses).
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0][0], err == nil
}
