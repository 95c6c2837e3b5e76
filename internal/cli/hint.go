package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Hints are the commands the CLI tells the user to run next ("verify:
// ironvise verify-session ID", "'ironvise sessions' lists what is there",
// "Run 'ironvise --help' for usage."). They are meant to be copied and
// pasted, so they name the binary the user actually ran: straight after
// `make build` that is ./bin/ironvise, and a hint saying `ironvise` would
// then fail with "command not found" or, worse, run an older installed
// ironvise against the same data directory. The word `ironvise` is kept
// when the typed name already resolves to this executable.

// program is how hints name this binary: args[0] as the user typed it
// when it is a bare name (the shell found it on PATH), "ironvise" when
// args[0] is a path to the same file as the `ironvise` on PATH, else the
// path itself, quoted for the shell when it needs it.
func (a *app) program() string {
	typed := a.invoked
	if typed == "" {
		return "ironvise"
	}
	if !strings.ContainsRune(typed, '/') && !strings.ContainsRune(typed, filepath.Separator) {
		return typed
	}
	if onPath := a.onPath("ironvise"); onPath != "" && sameFile(onPath, typed) {
		return "ironvise"
	}
	quoted, err := syntax.Quote(typed, syntax.LangPOSIX)
	if err != nil {
		// Only a path no POSIX shell can quote (a NUL or invalid UTF-8)
		// gets here; the plain name is the better hint than nothing.
		return "ironvise"
	}
	return quoted
}

// command is the command line of a hint: the program, then args.
func (a *app) command(args ...string) string {
	return strings.Join(append([]string{a.program()}, args...), " ")
}

// withHints makes the hints in msg, an error text that may come from
// another package, name the program: those packages write a hint as
// 'ironvise …' or `ironvise …`, quoted, and only that form is rewritten,
// so "ironvise" in any other sense is left alone.
func (a *app) withHints(msg string) string {
	prog := a.program()
	if prog == "ironvise" {
		return msg
	}
	return strings.NewReplacer("'ironvise ", "'"+prog+" ", "`ironvise ", "`"+prog+" ").Replace(msg)
}

// onPath returns the file name would run as, searched in the PATH of the
// command's environment, or "" when there is none.
func (a *app) onPath(name string) string {
	path, _ := a.lookup("PATH")
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			// A relative PATH entry depends on the directory the hint is
			// run from; it is not where "ironvise" will be found.
			continue
		}
		f := filepath.Join(dir, name)
		st, err := os.Stat(f)
		if err == nil && st.Mode().IsRegular() && (runtime.GOOS == "windows" || st.Mode()&0o111 != 0) {
			return f
		}
	}
	return ""
}

// sameFile reports whether a and b name the same file (through symbolic
// links and hard links alike).
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
