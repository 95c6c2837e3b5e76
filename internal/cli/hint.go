package cli

import (
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
