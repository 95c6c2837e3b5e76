//go:build !noserver

package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/mcpserver"
	"github.com/ironvise/ironvise/internal/session"
)

// mcpOptions is the command line of `ironvise mcp`.
type mcpOptions struct {
	Workspace, Policy, PolicySHA256 string
}

func (a *app) mcpCommand() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [flags]",
		Short: mcpShort,
		Long: `Speaks the Model Context Protocol on stdin and stdout. It offers the tools
run_command, read_file and http_get; each call is one intent (the tool's
parameter plus its justification) that passes the checks (schema, policy,
tripwire, approval; the guard when GUARD_LLM_BACKEND is configured), runs in
the sandbox tier and is recorded in the ledger, exactly as 'ironvise exec' runs
a command.

One IronVise session records the connection; it is sealed when the client
disconnects. A denied call is a tool error naming the check and its reason;
output is scanned and redacted before the client sees it. The session's
verification is the resource ironvise://session/<id>/verification.

Nothing but the protocol is written on stdout; messages go to stderr.
See docs/integrations.md#mcp for client configuration.`,
		Example: `  ironvise mcp --workspace ./repo --policy soc2-audit
  claude mcp add ironvise -- ironvise mcp --workspace "$PWD"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runMCP(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Workspace, "workspace", "", "workspace directory, read-only inside the sandbox (default: the current directory)")
	f.StringVar(&o.Policy, "policy", "", "policy file or shipped pack name (see 'ironvise policy list')")
	f.StringVar(&o.PolicySHA256, "policy-sha256", "", "refuse the policy unless its SHA-256 is this hex value")
	cmd.AddCommand(a.mcpProxyCommand(), a.mcpPinsCommand())
	return cmd
}

func (a *app) runMCP(o mcpOptions) error {
	r, err := a.loadRules(o.Workspace, o.Policy, o.PolicySHA256)
	if err != nil {
		return err
	}
	rt, done, err := a.sessionRuntime(r.cfg, a.logger())
	if err != nil {
		return err
	}
	defer done()
	g, err := a.optionalGuard(r.cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	if r.cfg.Sandbox.Permissive {
		fmt.Fprintln(a.stderr, "ironvise: WARNING: ECTO_SANDBOX_PERMISSIVE=true — commands run WITHOUT OS confinement (recorded as permissive)")
	}
	svc := mcpserver.New(mcpserver.Options{Transport: "stdio", Version: version,
		Runtime: func() *session.Runtime { return rt },
		Spec: func(context.Context, *mcp.RequestExtra) (session.Spec, func(), error) {
			return session.Spec{Workspace: r.ws, Tripwire: r.tw, Policy: r.pol, Guard: g}, func() {}, nil
		}})
	ss, err := svc.Server.Connect(a.ctx, &mcp.IOTransport{Reader: io.NopCloser(a.stdin), Writer: nopWriteCloser{a.stdout}}, nil)
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("mcp: %w", err))
	}
	// The session is recorded at once, so its id is known before the
	// first call.
	c, err := svc.Conn(a.ctx, ss, nil)
	if err != nil {
		ss.Close()
		return exitCode(ExitUsage, err)
	}
	fmt.Fprintf(a.stderr, "ironvise: MCP server on stdio; recording in session %s\n", c.ID)
	waitErr := make(chan error, 1)
	go func() { waitErr <- ss.Wait() }()
	select {
	case <-waitErr:
	case <-a.ctx.Done():
		ss.Close()
		<-waitErr
	}
	if err := svc.Close(context.WithoutCancel(a.ctx)); err != nil {
		return exitCode(ExitUsage, fmt.Errorf("%w (the session's end could not be recorded; '%s' shows its state)", err, a.command("verify-session", c.ID.String())))
	}
	fmt.Fprintf(a.stderr, "ironvise: session %s sealed (verify: %s)\n", c.ID, a.command("verify-session", c.ID.String()))
	return nil
}

// nopWriteCloser keeps the command's stdout open when the transport closes.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
