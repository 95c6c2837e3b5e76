//go:build unix

package native

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// runInGroup runs cmd, made by exec.CommandContext and not started, as the
// leader of a process group of its own, and kills the whole group as soon as the
// leader has exited: the macOS tier's only way to take a command's
// background processes down with it (macOS has no PID namespace; it is
// built for every unix so that the same POSIX calls are tested on Linux).
// The end of cmd's context (the wall-clock timeout) kills the group too.
//
// stdout and stderr receive the command's output through pipes that this
// function owns, so that waiting for the command does not also wait for
// every process still holding a pipe: after the group is killed, output is
// read for at most drain more, which bounds how long a process that left
// the group (setsid) can keep Run waiting.
//
// The error is cmd.Wait's, or the one that kept cmd from starting; the
// caller tells them apart by cmd.ProcessState.
func runInGroup(cmd *exec.Cmd, stdout, stderr io.Writer, drain time.Duration) error {
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	defer outR.Close()
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	err = cmd.Start()
	// The command holds its own copies; ours must go so that the readers
	// see end-of-file once every process of the command has exited.
	outW.Close()
	errW.Close()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{outR, stdout}, {errR, stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A read error ends the copy: end-of-file, or the drain
			// deadline set below.
			_, _ = io.Copy(c.w, c.r)
		}()
	}
	waitErr := cmd.Wait()
	// Security: a background process of the command (`sleep 999 &`) would
	// otherwise outlive it and could write the workspace between the
	// agent's steps. The group's id cannot name anyone else here: a
	// process group id is not reused while one member of the group lives
	// (POSIX), which is the case this kill is for; when none is left the
	// kill fails with ESRCH, unless in the instants since Wait the pid
	// allocator came round to the same id and a new process made itself a
	// group leader with it. A process that called setsid or setpgid has
	// left the group and is not reached (docs/reference/sandboxing.md, macOS).
	_ = killGroup(cmd.Process.Pid)
	deadline := time.Now().Add(drain)
	_ = outR.SetReadDeadline(deadline)
	_ = errR.SetReadDeadline(deadline)
	wg.Wait()
	return waitErr
}

// killGroup sends SIGKILL to the process group pgid; a group that no longer
// exists is not an error.
func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
