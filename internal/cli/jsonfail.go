package cli

import (
	"cmp"
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/jsonerror"
	"github.com/ironvise/ironvise/internal/ledger"
)

// failure adds what the JSON error object says about an error: its kind
// (jsonerror.Kind*) and the session it concerns. Either may be empty.
type failure struct {
	kind, session string
	err           error
}

func (f *failure) Error() string { return f.err.Error() }

func (f *failure) Unwrap() error { return f.err }

// failedWith wraps err with a kind and a session for the JSON error object;
// a nil err stays nil.
func failedWith(kind, session string, err error) error {
	if err == nil {
		return nil
	}
	return &failure{kind: kind, session: session, err: err}
}

// usageError is a command line the command does not accept (exit 2, kind
// usage).
func usageError(err error) error {
	return exitCode(ExitUsage, failedWith(jsonerror.KindUsage, "", err))
}

// kindOf is KindNotFound for a ledger lookup that found nothing, else ""
// (the kind follows from the exit status).
func kindOf(err error) string {
	if errors.Is(err, ledger.ErrNotFound) {
		return jsonerror.KindNotFound
	}
	return ""
}

// printFailureJSON keeps the promise of --json: a command run with it that
// fails prints exactly one JSON value on standard output. A command that
// printed its own result (a failed verification, an unusable sandbox) has
// said it; any other failure — a command-line error, a configuration
// error, an unknown session — prints the jsonerror object here. The
// message still goes to stderr too, for a person watching.
func (a *app) printFailureJSON(cmd *cobra.Command, args []string, err error, code int) {
	var ce *commandError
	ran := errors.As(err, &ce)
	if a.jsonWritten || !wantsJSON(cmd, args, ran) {
		return
	}
	if !ran {
		// cobra's: the command line itself
		err = failedWith(jsonerror.KindUsage, "", err)
	}
	d, session := failureDetail(err, code)
	a.jsonWritten = true
	_ = jsonerror.Write(a.stdout, jsonerror.Failure{Command: commandName(cmd), SessionID: session, Error: d})
}

// failureDetail is what err, ending the process with code, says in a JSON
// result: its kind (as the command marked it with failedWith, else from
// the error's type or the code), the code and the message printed on
// stderr; and the session it concerns, when the command named one.
func failureDetail(err error, code int) (jsonerror.Detail, string) {
	d := jsonerror.Detail{Kind: jsonerror.KindOfCode(code), Code: code, Message: err.Error()}
	var (
		ee *exitError
		f  *failure
		ve *config.Error
	)
	if errors.As(err, &ee) {
		d.Message = ""
		if ee.err != nil {
			d.Message = ee.err.Error()
		}
	}
	if errors.As(err, &ve) {
		d.Kind = jsonerror.KindConfig
	}
	// A command may wrap twice (the session on the outside, the kind
	// inside): the outermost non-empty value of each wins.
	session, kind := "", ""
	for e := err; errors.As(e, &f); e = f.err {
		session = cmp.Or(session, f.session)
		kind = cmp.Or(kind, f.kind)
	}
	d.Kind = cmp.Or(kind, d.Kind)
	if d.Message == "" {
		d.Message = "exit status " + strconv.Itoa(code)
	}
	return d, session
}

// wantsJSON reports whether cmd was run with --json. A command-line error
// can stop flag parsing before --json is reached, so then the arguments
// themselves are read; once the command ran (ran), its flags were parsed
// and say it alone: an argument "--json" was then another flag's value
// (--justification --json).
func wantsJSON(cmd *cobra.Command, args []string, ran bool) bool {
	if cmd == nil {
		return false
	}
	f := cmd.Flags().Lookup("json")
	if f == nil || f.Value.Type() != "bool" {
		return false
	}
	if f.Changed || ran {
		return f.Value.String() == "true"
	}
	return jsonArg(args)
}

// jsonArg reports whether args hold --json (or --json=true) before "--".
func jsonArg(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json":
			return true
		case strings.HasPrefix(a, "--json="):
			v, err := strconv.ParseBool(strings.TrimPrefix(a, "--json="))
			return err == nil && v
		}
	}
	return false
}

// commandName is cmd's path without the program name: "policy list".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}
