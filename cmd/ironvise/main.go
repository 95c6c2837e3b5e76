// Command ironvise is the IronVise security layer between an AI agent and the
// machine it acts on. All behaviour lives in internal/cli; main only wires
// the process to it and owns the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ironvise/ironvise/internal/cli"
	"github.com/ironvise/ironvise/internal/pidone"
	// exec's thin path runs from this package's initialisation when the
	// daemon answers, before the rest of the binary is initialised (see
	// its documentation).
	_ "github.com/ironvise/ironvise/internal/execclient/early"
	// The sandbox launcher runs from this package's initialisation, before
	// the rest of the binary is initialised (see its documentation).
	_ "github.com/ironvise/ironvise/internal/sandbox/native/launch/early"
)

func main() {
	// As a container's first process IronVise runs as a child of a small
	// init of its own, which reaps the orphans every pid 1 inherits.
	if code, ran := pidone.Run(os.Stderr); ran {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
