package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/ledger"
)

func (a *app) checkpointCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Export signed checkpoints of the ledger's log (what auditors keep)",
		Long: `A checkpoint is the issuer's signed statement "the log had N entries and
this root hash" (a C2SP signed note). An auditor keeps one from time to time;
later, 'verify-cert --checkpoint FILE' proves that a certificate's log is the
same history, so a ledger rolled back or forked since is noticed.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.checkpointLatestCommand())
	return cmd
}

func (a *app) checkpointLatestCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "latest",
		Short: "Write the newest signed checkpoint",
		Long: `Writes the newest signed checkpoint of the ledger's log as a signed note
(origin, tree size, root hash and the issuer's signature). Keep the file
somewhere the operator cannot change it; verify certificates against it later
with 'verify-cert --checkpoint FILE' (or 'ironvise verify-certificate
--checkpoint FILE'). Any signed-note tool verifies it with the checkpoint
verifier key that 'ironvise issuer-key' prints.

Exit status: 0 written, 2 on an error.`,
		Example: `  ironvise checkpoint latest --output ironvise-2026-06-01.checkpoint
  ironvise report "$SESSION" --format certificate --checkpoint ironvise-2026-06-01.checkpoint -o audit.elc`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := a.openLedger()
			if err != nil {
				return err
			}
			defer closeLedger(l)
			cp, err := l.LatestCheckpoint(a.ctx)
			if errors.Is(err, ledger.ErrNotFound) {
				return exitCode(ExitUsage, errors.New("the ledger has no checkpoint yet (one is written at the first start)"))
			}
			if err != nil {
				return exitCode(ExitUsage, err)
			}
			if err := writeOutput(a.stdout, output, cp.Note); err != nil {
				return exitCode(ExitUsage, err)
			}
			if output != "" {
				fmt.Fprintf(a.stderr, "ironvise: wrote checkpoint %d (root %s) to %s\n", cp.TreeSize, cp.Root, output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of standard output")
	return cmd
}
