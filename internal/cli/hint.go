package cli

import (
	"errors"
	"strings"

	"github.com/ironvise/ironvise/internal/progname"
)

// program is how the hints this run prints name the binary: the path the
// user ran when the ironvise on the command's PATH is missing or another
// file (see internal/progname).
func (a *app) program() string {
	if a.hintProgram != "" {
		return a.hintProgram
	}
	path, _ := a.lookup("PATH")
	return progname.Name(a.invoked, path)
}

// command is the command line of a hint: the program, then args.
func (a *app) command(args ...string) string {
	return strings.Join(append([]string{a.program()}, args...), " ")
}

// withHints makes the hints in msg, an error that may come from another
// package, name the program.
func (a *app) withHints(msg string) string {
	return progname.Rewrite(msg, a.program())
}

// verbatimError marks an error whose text quotes the user's own data (the
// lines of a policy file that does not load): withHintsOf leaves that text
// as it is, so a quoted 'ironvise …' in it is never taken for a hint.
type verbatimError struct{ err error }

func (e *verbatimError) Error() string { return e.err.Error() }

func (e *verbatimError) Unwrap() error { return e.err }

// withHintsOf is withHints for the text of err, sparing the text of a
// verbatimError inside it; what surrounds that text is rewritten as usual.
func (a *app) withHintsOf(err error) string {
	msg := err.Error()
	var v *verbatimError
	if !errors.As(err, &v) {
		return a.withHints(msg)
	}
	data := v.Error()
	i := strings.Index(msg, data)
	if i < 0 {
		return msg // no way to tell the hints from the data: change nothing
	}
	return a.withHints(msg[:i]) + data + a.withHints(msg[i+len(data):])
}
