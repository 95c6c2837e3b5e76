//go:build noserver

package cli

import "github.com/spf13/cobra"

// A build with the noserver tag leaves serve and mcp (with mcp proxy) out:
// they are the only commands that link the HTTP server, Prometheus and the
// MCP SDK, whose initialisation every process of the binary pays before
// main — a standalone exec, each hook event, each verify. Each of the two
// is a command that hands its whole command line to ironvise-server
// (serverCommand); make build installs both programs side by side.

func (a *app) serveCommand() *cobra.Command {
	return a.serverCommand("serve", serveShort)
}

func (a *app) mcpCommand() *cobra.Command {
	return a.serverCommand("mcp", mcpShort)
}
