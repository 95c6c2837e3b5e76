// Command ironvise-exec is `ironvise exec` as a program of its own, for
// agents that run their commands one by one through `ironvise serve`.
//
// With the daemon's work down to one sandboxed command and a group commit,
// the largest part left of a daemon exec was the client's start: the Go
// runtime reads the interface tables, type and function metadata of the
// whole binary before main, and ironvise is about 40 MB. This program
// holds only exec's thin path (internal/execclient), about 1.7 MB, and
// starts several milliseconds sooner (docs/operate/performance-log.md#exec-2026-12-04).
//
// It takes exactly what `ironvise exec` takes. What the thin path handles
// it sends to the daemon as ironvise itself does, so the output and the
// exit code are the same; everything else — no daemon answering, a .env
// in the working directory, a configuration variable the thin path does
// not read, --help — it hands to `ironvise exec` with the same arguments,
// replacing itself with the ironvise next to it (make install puts them
// side by side) or else the first one on PATH. Nothing was sent to the
// daemon before a hand-over, so a command is never run twice.
package main

import (
	"errors"
	"os"

	"github.com/ironvise/ironvise/internal/execclient"
	"github.com/ironvise/ironvise/internal/handoff"
	"github.com/ironvise/ironvise/internal/progname"
)

func main() {
	full, err := fullBinary()
	// The command line ironvise would get: the hints the thin path prints
	// name the program by its first word, and that program is ironvise.
	invoked := full
	if err != nil {
		invoked = progname.Default
	}
	args := append([]string{invoked, "exec"}, os.Args[1:]...)
	if handled, code := execclient.Thin(args); handled {
		os.Exit(code)
	}
	if err != nil {
		os.Stderr.WriteString("ironvise-exec: " + err.Error() + "\n")
		os.Exit(execclient.ExitUsage)
	}
	err = handoff.Exec(full, args)
	os.Stderr.WriteString("ironvise-exec: hand the command to " + full + ": " + err.Error() + "; nothing was run\n")
	os.Exit(execclient.ExitUsage)
}

// fullBinary is the ironvise this program hands a command line to: the one
// in its own directory, or else the first in an absolute PATH directory
// (package handoff).
func fullBinary() (string, error) {
	p, err := handoff.Find(progname.Default)
	if err != nil {
		return "", errors.New("no ironvise next to this program or on PATH to hand the command to, and no daemon took it; nothing was run (fix: install ironvise beside ironvise-exec, as make install does, or run ironvise exec)")
	}
	return p, nil
}
