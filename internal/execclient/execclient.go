// Package execclient is the client of the exec socket
// (docs/api.md#the-exec-socket): it builds the request of one `ironvise
// exec`, sends it to the `ironvise serve` answering on the data
// directory's socket, and writes what the daemon answers. Both ways of
// reaching the daemon use it: the full command line (internal/cli's
// execViaDaemon) and the thin path below, so the request and the rendering
// of the answer cannot drift apart.
//
// # The thin path
//
// A daemon exec costs the daemon one sandboxed command and a group commit;
// most of what remained was the client process itself: the Go runtime
// initialising every package of a 33 MB binary (the HTTP server,
// Prometheus, protobuf, SQLite, the scanner's tables, cobra) before main.
// Thin runs from the initialiser of package execclient/early, which
// cmd/ironvise imports, before those packages are initialised — Go
// initialises a package as soon as everything it imports is, picking the
// first by import path among those ready, and this package imports only
// packages initialised at the very start (no reflect, fmt, strings, net or
// path/filepath; the tests check the import graph and, with
// GODEBUG=inittrace=1, what the real binary initialises) — and handles
// `ironvise exec` itself when all of this holds:
//
//   - the arguments are ones it reads exactly as cobra would: exec's string
//     flags as --name=value or --name value, then the command after "--"
//     or as the first plain argument (args.go; the tests enumerate exec's
//     cobra flags and compare both parsers);
//   - the data directory is one it resolves exactly as internal/config
//     does: no .env in the working directory, none of the configuration
//     variables set that could make the configuration invalid, and
//     ECTO_DATA_DIR, XDG_DATA_HOME or HOME in a plain absolute form
//     (datadir.go);
//   - the daemon's socket accepts the connection.
//
// Otherwise Thin returns and the process goes on to be the full ironvise
// command line, which may still use the daemon (or run in-process); such a
// fall-through costs at most a refused connect, and nothing Thin did is
// visible to it. Once connected, the outcome is final, as in the full
// command line: a request that may have reached the daemon is never run
// again in-process.
//
// # Limitations
//
// The thin path is conservative about configuration: a shell that sets,
// say, ECTO_SANDBOX_TIER for serve's sake, or a .env in the working
// directory, sends every exec through the full command line (still to the
// daemon, at the full start-up cost); unset what exec does not need, or
// keep it in serve's environment. The daemon path, and so the thin path,
// is Linux only.
package execclient

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/localsock/wire"
	"github.com/ironvise/ironvise/internal/progname"
	"github.com/ironvise/ironvise/internal/sandbox/callerenv"
)

// Exit codes of exec that this package produces itself
// (docs/design/cli.md#exit-codes); internal/cli's tests hold them equal to
// its own.
const (
	ExitUsage   = 2
	ExitAborted = 125
)

// DefaultJustification is the value of exec's --justification when it is
// not given.
const DefaultJustification = "operator command run with ironvise exec"

// Options is one exec command line as parsed, by cobra or by ParseArgs.
type Options struct {
	Command, Session, Workspace, Policy, PolicySHA256, Justification string
	// WorkspaceMode is --workspace-mode: "", "ro" or "overlay".
	WorkspaceMode string
	NoDaemon      bool
	// JSON and Quiet are --json and --quiet: the result on stdout as one
	// JSON object, or the session id only. Only the full command line
	// reads them (args.go).
	JSON, Quiet bool
}

// JoinCommand turns exec's arguments into one sh command line: one
// argument is a script as written; several are single-quoted where needed.
func JoinCommand(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	var b []byte
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendQuoted(b, a)
	}
	return string(b)
}

// appendQuoted appends s single-quoted for sh, unless it is a non-empty
// word of characters that need no quoting.
func appendQuoted(b []byte, s string) []byte {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		plain = wordByte(s[i])
	}
	if plain {
		return append(b, s...)
	}
	b = append(b, '\'')
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			b = append(b, `'\''`...)
		} else {
			b = append(b, s[i])
		}
	}
	return append(b, '\'')
}

// wordByte reports whether c needs no quoting in a word for sh.
func wordByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	switch c {
	case '_', '-', '.', '/', '=', ':', ',', '+', '@', '%':
		return true
	}
	return false
}

// NewRequest is o as the daemon needs it: the workspace and a policy file
// resolved against this process's working directory, and the candidate
// sandbox environment of look (the command runs with the caller's
// allowlisted variables either way). The configuration itself is the
// daemon's: it serves the same data directory.
func NewRequest(o Options, look func(string) (string, bool)) (*wire.Request, error) {
	ws := o.Workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		ws = wd
	}
	ws, err := abs(ws)
	if err != nil {
		return nil, err
	}
	pol := o.Policy
	switch {
	case pol == "":
	case containsSeparator(pol):
		// A path, taken from this working directory and not cleaned, so
		// that the daemon opens the file an in-process exec opens; the
		// daemon applies the same .toml fallback to the absolute form.
		if pol, err = absAsOpened(pol); err != nil {
			return nil, err
		}
	case namesLocalFile(pol):
		// A bare name may also be a pack or a data-dir policy, and such a
		// name is refused as ambiguous (docs/policies.md). Only the
		// in-process lookup sees this directory and those places at once.
		return nil, ErrLocalPolicy
	}
	req := &wire.Request{
		Command: o.Command, Session: o.Session, Workspace: ws, Policy: pol, PolicySHA256: o.PolicySHA256, WorkspaceMode: o.WorkspaceMode,
		Justification: o.Justification, Env: callerenv.Candidates(look),
	}
	// Paths and variables the daemon would read as other ones
	// (ErrNotUTF8). The command and the justification need no check: an
	// in-process exec records them as JSON too, with the same U+FFFD.
	if !utf8.ValidString(ws) || !utf8.ValidString(pol) {
		return nil, ErrNotUTF8
	}
	for _, kv := range req.Env {
		if !utf8.ValidString(kv) {
			return nil, ErrNotUTF8
		}
	}
	switch {
	case o.JSON && o.Quiet:
		return nil, errors.New("--json and --quiet exclude each other")
	case o.JSON:
		req.Output = wire.OutputJSON
	case o.Quiet:
		req.Output = wire.OutputQuiet
	}
	return req, nil
}

// SetProgram makes the hints the daemon writes for req name prog, how the
// client's hints name this program (progname.Name), as an in-process
// exec's do; the word ironvise is the daemon's default and is not sent.
func SetProgram(req *wire.Request, prog string) {
	if prog != progname.Default {
		req.Program = prog
	}
}

// ErrNotUTF8 is NewRequest's answer for a workspace, a policy path or a
// sandbox variable that is not valid UTF-8: the daemon's JSON decoder
// would read it as U+FFFD, another directory, file or value, so the
// command runs in-process, which takes them as they are.
var ErrNotUTF8 = errors.New("execclient: a path or variable is not valid UTF-8")

// ErrLocalPolicy is NewRequest's answer for a bare --policy name that
// names a file in the working directory: the command runs in-process.
var ErrLocalPolicy = errors.New("execclient: --policy names a file in the working directory")

// namesLocalFile reports whether the bare policy name ref names a regular
// file in the working directory, as itself or with .toml.
func namesLocalFile(ref string) bool {
	for _, f := range []string{ref, ref + ".toml"} {
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// Exchange sends req on conn, writes the daemon's output to stdout and
// stderr, and returns exec's exit code and the message to print as
// "ironvise: MESSAGE" (nil: none). When ctx ends (Ctrl-C), conn is closed:
// the daemon takes the hang-up as the client's interrupt, stops the
// command and records the session aborted, as an interrupted in-process
// exec does. Any failure after the request may have been sent is exec's
// aborted exit: the daemon may have started the command.
func Exchange(ctx context.Context, conn *Conn, req *wire.Request, stdout, stderr io.Writer) (int, error) {
	return exchangeThen(conn, req, stdout, stderr, func() context.Context { return ctx })
}

// exchangeThen is Exchange with the context that ends the wait taken from
// sent, which is called once the request is written (or failed to be).
func exchangeThen(conn *Conn, req *wire.Request, stdout, stderr io.Writer, sent func() context.Context) (int, error) {
	werr := conn.send(req)
	ctx := sent()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	resp, err := conn.receive(werr)
	if err != nil {
		if ctx.Err() != nil {
			return ExitAborted, errors.New("interrupted: " + ctx.Err().Error() + "; the daemon was told to stop the command")
		}
		return ExitAborted, errors.New("the daemon at " + conn.path + " failed mid-request (" + err.Error() + "); the command may have run, so it is not run again (see 'ironvise sessions')")
	}
	stdout.Write(resp.Stdout)
	stderr.Write(resp.Stderr)
	if resp.Error != "" {
		return resp.Code, errors.New(resp.Error)
	}
	return resp.Code, nil
}

// AbortedIfInterrupted is exec's rule for a usage error (code ExitUsage)
// that comes while ctxErr says the process was interrupted: it is reported
// as exec's aborted exit, not a usage error — the operator's command line
// was fine, and nothing ran. Any other outcome passes unchanged. err is
// the usage error's message, nil when it has none.
func AbortedIfInterrupted(ctxErr error, code int, err error) (int, error) {
	if ctxErr == nil || code != ExitUsage {
		return code, err
	}
	if err == nil {
		err = errors.New("exit " + strconv.Itoa(code))
	}
	return ExitAborted, &wrapError{"interrupted before the command ran (" + ctxErr.Error() + "); nothing was run: " + err.Error(), err}
}

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

// Thin is exec's thin path (see the package documentation): it handles
// the command line args (os.Args, or the command line cmd/ironvise-exec
// hands on) when it can and returns handled and the exit code; handled is
// false when the full command line must run. The hints it prints name the
// program as args[0] does.
func Thin(args []string) (handled bool, code int) {
	if !daemonPath {
		return false, 0
	}
	o, ok := ParseArgs(args)
	if !ok {
		return false, 0
	}
	dataDir, ok := DataDir(os.LookupEnv, os.Stat)
	if !ok {
		return false, 0
	}
	req, err := NewRequest(o, os.LookupEnv)
	if err != nil {
		return false, 0 // the full command line reports it
	}
	conn, err := Dial(context.Background(), dataDir)
	if err != nil {
		return false, 0
	}
	prog := progname.Name(args[0], os.Getenv("PATH"))
	SetProgram(req, prog)
	// The full command line catches these two signals from the start of
	// main; here from the moment the request is sent, the first one at
	// which the daemon may act on it. Catching them makes the runtime
	// start a thread and wait for it (0.57 and 0.65 ms in two rounds of 500
	// runs against a socket that answers at once): done after the send,
	// that runs beside the daemon's work instead of before it. A signal
	// in the few microseconds between the two ends the client by its
	// default action, which the daemon takes as the same hang-up; the
	// command is stopped and recorded aborted either way.
	ctx := context.Background()
	code, msg := exchangeThen(conn, req, os.Stdout, os.Stderr, func() context.Context {
		// Never released: the process exits when Thin returns, and
		// releasing them would cost the same round trip again.
		ctx, _ = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		return ctx
	})
	conn.Close()
	code, msg = AbortedIfInterrupted(ctx.Err(), code, msg)
	if msg != nil {
		os.Stderr.WriteString("ironvise: " + progname.Rewrite(msg.Error(), prog) + "\n")
	}
	return true, code
}
