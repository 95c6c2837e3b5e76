// Package early runs the sandbox launcher during package initialisation,
// before the rest of the ironvise binary is initialised. cmd/ironvise
// imports it for that side effect alone; nothing else may.
//
// # Why an init side effect
//
// The house rule is no init() side effects beyond registering, and this
// package is the one exception. The native Linux tier re-executes the
// ironvise binary as its launcher for every command, and a Go program
// initialises every package it links before main runs: the checks' regular
// expressions and tables, the SQLite and PostgreSQL drivers, the TLS, HTTP
// and LLM stacks — about 130 packages, none of which the launcher uses.
// Go initialises a package as soon as everything it imports is, so
// dispatching here instead of in cli.Run means the launcher waits only for
// its own dependencies (package launch: the kernel wrappers, go-landlock,
// strconv) and whatever happens to be initialised alongside them: about
// 70 small packages and 0.3 ms of initialisation instead of about 130
// packages and 1.6 ms. Measured with hyperfine on the static ironvise
// binary (2 cores, Linux 6.18, other jobs running), starting the launcher
// until it gives up for want of a specification takes 1.7 ms instead of
// 4.0 ms, against 1.3 ms for a Go program that does nothing. With the
// launcher's other changes (docs/reference/sandboxing.md has the breakdown), a
// command through the native tier takes 4.6 ms instead of 7.1 ms. cli.Run
// still dispatches the launcher too, for binaries that do
// not import this package.
//
//	import _ "github.com/ironvise/ironvise/internal/sandbox/native/launch/early"
//
// # Limitations
//
// Only os.Args[1] is looked at; any other invocation of the binary is
// untouched. Go initialises packages in dependency order and, among those
// whose dependencies are ready, in import-path order, so some small
// packages unrelated to the launcher still run their initialisation first;
// a new dependency of package launch that sorts late (path/filepath did)
// can pull many more in, which the launcher's start-up time in the
// benchmark shows.
package early

import (
	"os"

	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

func init() {
	if launch.IsLauncher(os.Args) {
		// launch.Main execs the sandboxed command or reports the failure
		// to the parent; either way this process must not go on to be
		// an ironvise command.
		os.Exit(launch.Main(os.Args))
	}
}
