package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/handoff"
)

// serverProgram holds serve and mcp when this binary was built without
// them (the noserver build tag, noserver.go): `make build` builds ironvise
// so, for a faster start of every other command
// (docs/operate/performance-log.md#exec-2026-12-04-lite), and ironvise-server
// beside it with every command.
const serverProgram = "ironvise-server"

// The one-line descriptions of serve and mcp, shared by the commands and
// their stand-ins in a build without the server, so that `ironvise --help`
// reads the same in both builds.
const (
	serveShort = "Serve the HTTP API, the live event stream, Prometheus metrics and the dashboard"
	mcpShort   = "Serve IronVise's actions as MCP tools over stdio (and wrap other MCP servers: mcp proxy)"
)

// The hand-off's two steps, replaced by the tests: the process is replaced
// on success.
var (
	findProgram = handoff.Find
	execProgram = handoff.Exec
)

// serverCommand is command use of serverProgram: it takes every argument
// and flag as they are and hands them to serverProgram, which replaces
// this process. Its help is serverProgram's (use --help).
func (a *app) serverCommand(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + ".\n\nThis ironvise is built without the server: the command runs in " + serverProgram +
			", installed beside it (make install does), which prints its full help for '" + use + " --help'.",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.handToServer(use, args)
		},
	}
}

// handToServer hands `use args...` to serverProgram; it returns only when
// that program is missing or cannot be started.
func (a *app) handToServer(use string, args []string) error {
	full, err := findProgram(serverProgram)
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("%s runs in %s, which was %v; nothing was run (fix: install %s beside this program, as make install does)",
			use, serverProgram, err, serverProgram))
	}
	// The server is told the name it was invoked by, as the command line
	// was: the hints it prints then name the program the user runs.
	argv0 := a.invoked
	if argv0 == "" {
		argv0 = full
	}
	err = execProgram(full, append([]string{argv0, use}, args...))
	return exitCode(ExitUsage, fmt.Errorf("%s runs in %s, which could not be started: %w; nothing was run", use, full, err))
}
