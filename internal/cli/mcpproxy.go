//go:build !noserver

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/mcpproxy"
)

type mcpProxyOptions struct {
	mcpOptions
	Name string
}

func (a *app) mcpProxyCommand() *cobra.Command {
	var o mcpProxyOptions
	cmd := &cobra.Command{
		Use:   "proxy --name NAME [flags] -- COMMAND [ARG...]",
		Short: "Wrap a stdio MCP server: pin and scan its tools, check and record every call",
		Long: `Starts COMMAND, an MCP server speaking on its stdin and stdout, and serves its
tools on this process's stdin and stdout, checked:

  - each tool definition (name, description, input schema) is pinned on first
    sight, by SHA-256, in the ledger under --name; a tool whose definition
    later changes is withheld until 'ironvise mcp pins approve' accepts it;
  - a description that looks like a prompt injection withholds the tool;
  - every call passes the policy's mcp_tool_rules, and the tripwire and the
    policy on its path-, URL- and command-shaped arguments, and is recorded
    before it is forwarded; a denial is a tool error naming the check;
  - results are scanned: credentials are replaced by placeholders, suspected
    injections withheld, content that cannot be scanned (images) withheld.

Everything is recorded in one session per run, sealed at exit. When the
wrapped server exits or fails, calls fail; nothing passes unchecked. The
wrapped server itself runs unconfined, as its own MCP client would run it.`,
		Example: `  ironvise mcp proxy --name github -- npx -y @modelcontextprotocol/server-github
  claude mcp add fs -- ironvise mcp proxy --name fs --workspace "$PWD" -- npx -y @modelcontextprotocol/server-filesystem "$PWD"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 {
				return exitCode(ExitUsage, errors.New("mcp proxy: put the wrapped server's command after --: ironvise mcp proxy --name NAME -- COMMAND [ARG...]"))
			}
			return a.runMCPProxy(o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the wrapped server's name: pins and mcp_tool_rules are keyed by it (required)")
	f.StringVar(&o.Workspace, "workspace", "", "workspace directory: path arguments are checked against it (default: the current directory)")
	f.StringVar(&o.Policy, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	f.StringVar(&o.PolicySHA256, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}

func (a *app) runMCPProxy(o mcpProxyOptions, command []string) error {
	r, err := a.loadRules(o.Workspace, o.Policy, o.PolicySHA256)
	if err != nil {
		return err
	}
	sc, err := a.scanner(r.cfg)
	if err != nil {
		return err
	}
	l, err := a.openLedgerForWrite()
	if err != nil {
		return err
	}
	defer closeLedger(l)
	up := exec.Command(command[0], command[1:]...)
	up.Stderr = a.stderr
	up.Env = os.Environ()
	p, err := mcpproxy.Open(a.ctx, mcpproxy.Options{Name: o.Name, Command: up, Ledger: l, Scanner: sc, Tripwire: r.tw,
		Policy: r.pol, Version: version, Logger: a.logger()})
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	fmt.Fprintf(a.stderr, "ironvise: MCP proxy for %q on stdio; recording in session %s\n", o.Name, p.ID)
	runErr := p.Server.Run(a.ctx, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}})
	if err := p.Close(context.WithoutCancel(a.ctx)); err != nil {
		return exitCode(ExitUsage, err)
	}
	fmt.Fprintf(a.stderr, "ironvise: session %s sealed (verify: %s)\n", p.ID, a.command("verify-session", p.ID.String()))
	if runErr != nil && a.ctx.Err() == nil {
		return exitCode(ExitUsage, fmt.Errorf("mcp proxy: %w", runErr))
	}
	return nil
}

func (a *app) mcpPinsCommand() *cobra.Command {
	var name string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pins --name NAME",
		Short: "List the pinned tool definitions of a wrapped MCP server",
		Long: `Lists the tools 'ironvise mcp proxy --name NAME' has pinned, from the newest
session that recorded them: each tool's status (first_seen, match, changed,
approved, absent), whether it is withheld and why, and the pinned and last
seen SHA-256. 'ironvise mcp pins approve' accepts a changed definition.`,
		Example: `  ironvise mcp pins --name github
  ironvise mcp pins approve --name github create_issue`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := a.openLedger()
			if err != nil {
				return err
			}
			defer closeLedger(l)
			t, err := mcpproxy.LoadPins(a.ctx, l, name)
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			if asJSON {
				return a.printJSON(map[string]any{"server": name, "session_id": t.Session, "pins": t.Sorted()})
			}
			if len(t.Pins) == 0 {
				fmt.Fprintf(a.stdout, "no pins recorded for MCP server %q\n", name)
				return nil
			}
			fmt.Fprintf(a.stdout, "MCP server %q (pins from session %s)\n", name, t.Session)
			w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOOL\tSTATUS\tOFFERED\tPINNED\tSEEN\tREASON")
			for _, p := range t.Sorted() {
				fmt.Fprintf(w, "%s\t%s\t%v\t%.12s\t%.12s\t%s\n", p.Tool, p.Status, !p.Withheld && p.Status != mcpproxy.PinAbsent, p.Pinned, p.SHA256, p.Reason)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the wrapped server's name, as given to mcp proxy --name (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	_ = cmd.MarkFlagRequired("name")
	cmd.AddCommand(a.mcpPinsApproveCommand())
	return cmd
}

func (a *app) mcpPinsApproveCommand() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "approve --name NAME TOOL...",
		Short: "Accept the last seen definition of changed tools",
		Long: `Pins the definition last seen of each TOOL (one whose status is changed, or a
first sight that was not pinned), recorded in a new sealed session under the
server's name. The next 'ironvise mcp proxy --name NAME' offers the tool again
if its definition is still the approved one and its description passes the
scanner.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, tools []string) error {
			l, err := a.openLedgerForWrite()
			if err != nil {
				return err
			}
			defer closeLedger(l)
			id, err := mcpproxy.Approve(a.ctx, l, name, tools, "operator:cli")
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			fmt.Fprintf(a.stdout, "approved %d tool(s) of %q; recorded in session %s\n", len(tools), name, id)
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "the wrapped server's name (required)")
	_ = cmd.MarkFlagRequired("name")
	return cmd
}
