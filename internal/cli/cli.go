// Package cli holds the ironvise commands: flags, terminal output and exit
// codes. It reads the configuration and the command's files; the sessions
// that audit, exec and demo record are composed, run and sealed by
// internal/session, the same package `serve` uses.
//
// # Design
//
// [Run] takes the arguments and the three standard streams and returns the
// exit code, so every command is testable in-process; only cmd/ironvise calls
// os.Exit. Each command lives in its own file and returns an error; an
// [exitError] carries a specific exit code (docs/design/cli.md#exit-codes: 0
// success, 1 denial or failed verification, 2 usage or configuration error,
// pass-through for exec).
//
// # Limitations
//
// Commands that need the environment read it through config, which Run loads
// lazily per command so that `ironvise --help` works with a broken
// environment.
package cli

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/sandbox/native"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/waitline"
	"github.com/ironvise/ironvise/internal/webhook"
)

// Build metadata, set with -ldflags "-X ...cli.version=... -X ...cli.commit=...".
var (
	version = "0.1.0-dev"
	commit  = "unknown"
)

// Exit codes shared by several commands (docs/design/cli.md#exit-codes).
const (
	ExitOK     = 0
	ExitDenied = 1 // a denial, a failed verification, a high finding
	ExitUsage  = 2 // usage or configuration error
)

// exitError makes a command exit with a specific code. A nil err means exit
// silently (the command already printed what it had to say).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode returns an error that makes Run exit with code, printing err
// (when non-nil) on stderr.
func exitCode(code int, err error) error { return &exitError{code: code, err: err} }

// commandError is an error a command's own code returned, as opposed to one
// cobra returned for the command line itself (an unknown command or flag,
// a missing flag value, the wrong number of arguments), which is what the
// usage hint is for. markCommandErrors wraps every command's RunE so the
// two are told apart by type, not by the text cobra happens to use.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }

func (e *commandError) Unwrap() error { return e.err }

// markCommandErrors wraps the RunE of c and its subcommands so their
// errors are *commandError.
func markCommandErrors(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := run(cmd, args); err != nil {
				return &commandError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		markCommandErrors(sub)
	}
}

// app is the state shared by the commands of one Run.
type app struct {
	ctx context.Context
	// oneCommand is set by a command that runs one sandboxed command and
	// exits (standalone exec): its tier keeps no launcher ready after it.
	oneCommand bool
	// oneShot is set by a process that handles one command or one hook
	// event and exits (shortLived).
	oneShot bool
	// exits is set by Main: the process exits as soon as the command
	// returns.
	exits bool
	// invoked is args[0] of the command line, how the user ran this
	// binary: hints name it (see program).
	invoked string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	// lookup reads the environment; tests replace it.
	lookup config.Lookup
	// enclaveRoots replaces the pinned AWS Nitro root when a remote guard
	// enclave is attested. Tests only: no command or variable sets it.
	enclaveRoots *x509.CertPool

	cfg *config.Config
	// protect is the run's protected-path list, computed once (see
	// protection) and shared by the tripwire and the sandbox tier.
	protect *secretpaths.List
	// timing is zero outside tests, which shorten it to make a command
	// outlast the ledger's lease and a step's write deadline.
	timing ledgerTiming
	// hooks is the SIEM dispatcher of the running command (attachEvidence),
	// fed the checkpoints the ledger commits; nil when there is none.
	hooks atomic.Pointer[webhook.Dispatcher]
	// daemonRequest marks the app that runs one exec request inside serve:
	// the request's policy name was looked up in the client's directory,
	// never the daemon's (loadPolicy).
	daemonRequest bool
	// hookRequest marks a hook's run: its working directory is the
	// agent's, so neither its .env nor a policy file there is read
	// (Run, loadPolicy, hook.go).
	hookRequest bool
	// hintProgram, when set, is how hints name the program: the client
	// of an exec request says how its own hints name it.
	hintProgram string
	// jsonWritten is set once a JSON value went to stdout, so a failing
	// --json command prints its error object only if it printed nothing
	// (printFailureJSON).
	jsonWritten bool
}

// ledgerTiming overrides the ledger's session lease
// (docs/design/ledger.md#session-lifecycle) and the deadline of each ledger
// write of a step; zero fields keep the defaults.
type ledgerTiming struct {
	lease, write time.Duration
	// owner, when set, is the ledger's lease owner id: a hook's session
	// outlives each hook process, so its processes share one owner
	// (hook.go).
	owner string
}

// config loads and validates the environment once per run.
func (a *app) config() (*config.Config, error) {
	if a.cfg != nil {
		return a.cfg, nil
	}
	cfg, err := config.Load(a.lookup)
	if err != nil {
		return nil, exitCode(ExitUsage, fmt.Errorf("configuration error:\n%w", err))
	}
	a.cfg = cfg
	return cfg, nil
}

// printJSON writes v to standard output as indented JSON: the --json
// form of every command.
func (a *app) printJSON(v any) error {
	a.jsonWritten = true
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Run executes the ironvise command line args (args[0] is the program name)
// and returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCommandLine(ctx, args, stdin, stdout, stderr, false)
}

// Main is Run for the ironvise process itself, which exits with the code
// Main returns as soon as it returns. A command that handles one command
// or hook event may then leave to that exit what costs only time to clean
// up: a SQLite ledger's small WAL (ledgerdb.OpenBeforeExit).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runCommandLine(ctx, args, stdin, stdout, stderr, true)
}

func runCommandLine(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, exits bool) int {
	// The native sandbox re-executes this binary as its launcher; it must
	// run before any other work (sandbox/native).
	if native.IsLauncher(args) {
		return native.LauncherMain(args)
	}
	// Security: an agent hook runs in the agent's working directory,
	// which the agent writes: a .env there must not configure the gate
	// that checks it.
	dotenv := ".env"
	if isHookEvent(args) {
		dotenv = ""
	}
	look, err := config.OSLookup(dotenv)
	if err != nil {
		fmt.Fprintf(stderr, "ironvise: %v\n", err)
		return ExitUsage
	}
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, lookup: look, exits: exits}
	return a.run(args)
}

// run is Run with the environment injected.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, look config.Lookup) int {
	a := &app{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, lookup: look}
	return a.run(args)
}

// run executes args on a prepared app.
func (a *app) run(args []string) int {
	ctx, stdin, stdout, stderr := a.ctx, a.stdin, a.stdout, a.stderr
	root := a.rootCommand()
	if len(args) > 0 {
		a.invoked, args = args[0], args[1:]
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "ironvise: %s\n", a.withHintsOf(ee.err))
		}
		a.printFailureJSON(cmd, args, err, ee.code)
		return ee.code
	}
	a.printFailureJSON(cmd, args, err, ExitUsage)
	// Any other error is a usage error; one cobra returned for the command
	// line itself (unknown flag, missing argument) gets the usage hint.
	fmt.Fprintf(stderr, "ironvise: %s\n", a.withHintsOf(err))
	if ce := (*commandError)(nil); !errors.As(err, &ce) {
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", a.command("--help"))
	}
	return ExitUsage
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "ironvise",
		Short: "An emergency brake and a flight recorder for AI agents",
		Long: `IronVise sits between an autonomous AI agent and the machine it acts on.
Every action the agent proposes passes four checks (schema, policy, tripwire,
guard LLM), runs — if allowed — inside a sandbox tier that fails closed, and is
recorded in a signed, hash-chained ledger that an auditor can verify offline.`,
		Example: `  # Check one intent without running anything
  echo '{"action":"run_command","params":{"command":"ls -la"},"justification":"list files"}' | ironvise check

  # Show the version and the sandbox tiers this build supports
  ironvise version

  # Tab completion in this bash (see 'ironvise completion --help' for zsh, fish, PowerShell)
  source <(ironvise completion bash)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// cobra's `completion bash|zsh|fish|powershell`: the scripts ask the
	// binary itself (its hidden __complete command) what to offer, so
	// hidden commands (guard-worker) and the sandbox launcher's argument,
	// which is no command at all, are never offered.
	root.CompletionOptions.HiddenDefaultCmd = false
	root.AddCommand(
		a.versionCommand(),
		a.checkCommand(),
		a.execCommand(),
		a.auditCommand(),
		a.demoCommand(),
		a.replayCommand(),
		a.diffAuditCommand(),
		a.diffCommand(),
		a.applyCommand(),
		a.discardCommand(),
		a.policyCommand(),
		a.sandboxCommand(),
		a.sessionsCommand(),
		a.verifySessionCommand(),
		a.reportCommand(),
		a.verifyCertificateCommand(),
		a.verifyVCCommand(),
		a.issuerKeyCommand(),
		a.checkpointCommand(),
		a.guardWorkerCommand(),
		a.serveCommand(),
		a.hookCommand(),
		a.mcpCommand(),
	)
	markCommandErrors(root)
	return root
}

// isTerminal reports whether w is a character device (a TTY), for colour
// and progress output.
func isTerminal(w io.Writer) bool { return waitline.IsTerminal(w) }
