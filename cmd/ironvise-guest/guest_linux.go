package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox/guestproto"
)

// Defaults of the guest, as PID 1 in the microVM.
const (
	defaultIntent  = "/dev/vdb"
	defaultConsole = "/dev/ttyS0"
	// defaultWorkdir is the command's working directory: an empty,
	// read-only directory of the rootfs (there is no workspace in the VM),
	// "/" when the rootfs has none. defaultScratch is HOME and TMPDIR.
	defaultWorkdir = "/workspace"
	defaultScratch = "/tmp"
	// defaultTimeout applies when the intent carries none.
	defaultTimeout = 30 * time.Second
	// nobody is the uid and gid the command runs as when the guest is root.
	nobody = 65534
	// launcherArg makes the binary act as the command's launcher: apply
	// the rlimits and no_new_privs, then exec the shell.
	launcherArg = "__ironvise-guest-exec"
)

// config is one guest run.
type config struct {
	intent, console, workdir, scratch string
	pid1                              bool
}

// run is main without the exit.
func run(args []string) int {
	if len(args) >= 2 && args[1] == launcherArg {
		return launcherMain(args[2:])
	}
	defaults := config{intent: defaultIntent, console: defaultConsole, workdir: defaultWorkdir, scratch: defaultScratch, pid1: os.Getpid() == 1}
	cfg := defaults
	fs := flag.NewFlagSet("ironvise-guest", flag.ContinueOnError)
	fs.StringVar(&cfg.intent, "intent", defaultIntent, "the intent image (the VM's /dev/vdb)")
	fs.StringVar(&cfg.console, "console", defaultConsole, "where the framed result goes (the VM's /dev/ttyS0)")
	fs.StringVar(&cfg.workdir, "workdir", defaultWorkdir, "the command's working directory")
	fs.StringVar(&cfg.scratch, "scratch", defaultScratch, "the command's HOME and TMPDIR")
	if cfg.pid1 {
		fs.SetOutput(io.Discard)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if !cfg.pid1 {
			return 2
		}
		// As init, the arguments come from the kernel command line: a
		// parameter the kernel did not know is not a reason to stop.
		cfg = defaults
	}
	// As PID 1, a panic would become a kernel panic and a VM without a
	// result: the host aborts anyway, but a frame says why.
	defer func() {
		if r := recover(); r != nil {
			reportPanic(cfg, fmt.Sprintf("guest: internal error: %v\n%s", r, debug.Stack()))
		}
	}()
	if cfg.pid1 {
		if err := setupPID1(); err != nil {
			// Without /dev there is no intent and no console: say it on
			// the kernel console (our stdout) and power off.
			fmt.Fprintf(os.Stdout, "ironvise-guest: %v\n", err)
			powerOff()
			return 1
		}
	}
	if _, err := os.Stat(cfg.workdir); err != nil {
		cfg.workdir = "/"
	}
	console, err := openConsole(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ironvise-guest: %v\n", err)
		if cfg.pid1 {
			powerOff()
		}
		return 1
	}
	nonce, res := execute(cfg)
	werr := guestproto.WriteFrame(console, nonce, res)
	drain(console)
	_ = console.Close()
	if cfg.pid1 {
		powerOff()
	}
	if werr != nil {
		fmt.Fprintf(os.Stderr, "ironvise-guest: write the result: %v\n", werr)
		return 1
	}
	return 0
}

// execute reads the intent and runs it; it always returns a result to frame
// and the nonce to frame it with.
func execute(cfg config) (string, guestproto.Result) {
	in, err := readIntent(cfg.intent)
	if err != nil {
		return guestproto.NoNonce, failed(guestproto.StatusError, err)
	}
	nonce := in.Nonce()
	if nonce == "" {
		// An intent without the host's part did not come from IronVise.
		return guestproto.NoNonce, failed(guestproto.StatusError, errors.New("guest: the intent carries no run nonce"))
	}
	command, err := in.Command()
	if errors.Is(err, guestproto.ErrUnsupported) {
		return nonce, failed(guestproto.StatusUnsupported, err)
	}
	if err != nil {
		return nonce, failed(guestproto.StatusError, err)
	}
	timeout := time.Duration(in.Run.TimeoutSecs) * time.Second
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return nonce, runCommand(cfg, command, in.Run, timeout)
}

func failed(status string, err error) guestproto.Result {
	return guestproto.Result{Status: status, Reason: err.Error()}
}

// readIntent reads the raw intent image (a block device in the VM).
func readIntent(path string) (*guestproto.Intent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("guest: open the intent image: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, guestproto.MaxIntentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("guest: read the intent image %s: %w", path, err)
	}
	return guestproto.DecodeIntent(b)
}

// reportPanic writes an error frame, best effort.
func reportPanic(cfg config, msg string) {
	if c, err := openConsole(cfg); err == nil {
		_ = guestproto.WriteFrame(c, guestproto.NoNonce, guestproto.Result{Status: guestproto.StatusError, Reason: msg})
		drain(c)
		_ = c.Close()
	}
	if cfg.pid1 {
		powerOff()
	}
}
