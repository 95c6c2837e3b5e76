package cli

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// openLedger opens the ledger of the configuration (DATABASE_URL, else
// <data dir>/ledger.db). The caller must Close it. Failures are exit 2:
// the configuration names a ledger this process cannot use.
func (a *app) openLedger() (*ledger.Ledger, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	lc := cfg.Ledger
	open := ledgerdb.Open
	switch {
	case a.oneShot && a.exits:
		open = ledgerdb.OpenBeforeExit
	case a.oneShot:
		open = ledgerdb.OpenForOneCommand
	}
	l, err := open(a.ctx, lc.DatabaseURL, lc.PoolSize, ledger.Options{
		DataDir:            cfg.DataDir,
		IssuerKeyFile:      lc.IssuerKeyFile,
		Passphrase:         ledger.Secret(lc.KeyPassphrase.Reveal()),
		CheckpointEvents:   lc.CheckpointEvents,
		CheckpointInterval: time.Duration(lc.CheckpointSecs) * time.Second,
		LeaseDuration:      a.timing.lease,
		OwnerID:            a.timing.owner,
		// A process that records one command (exec, a hook) would wait
		// at its exit for the remembered checkpoint's fsync: the fourth
		// of a standalone exec, past the budget of three.
		CheckpointFileUnsynced: a.oneShot,
		// Every checkpoint also goes to the SIEM, so a copy of each tree
		// head lives outside the operator's database (evidence.md).
		OnCheckpoint: func(_ ledger.Checkpoint, record ledger.Event) {
			if d := a.hooks.Load(); d != nil {
				d.Notify(record)
			}
		},
	})
	if err != nil {
		return nil, exitCode(ExitUsage, fmt.Errorf("open the ledger: %w", err))
	}
	return l, nil
}

// shortLivedGCPercent is the collector's target in a short-lived process
// (shortLived): four times the default, so that the first cycle falls due
// at 16 MiB.
const shortLivedGCPercent = 400

// shortLived marks this process as one that handles one command or one hook
// event and exits (standalone exec, hook): its SQLite ledger uses one
// connection (ledgerdb.OpenForOneCommand), and its collector a higher goal.
// Such a process allocates about 4 MiB in all, which is where the first
// cycle would fall due: 2–3 ms of CPU to free memory the process gives back
// when it exits a few milliseconds later. GOGC, when set, stays the user's
// choice. The returned function restores the collector's goal.
func (a *app) shortLived() (restore func()) {
	a.oneShot = true
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(shortLivedGCPercent)
	return func() { debug.SetGCPercent(old) }
}

func (a *app) sessionsCommand() *cobra.Command {
	var (
		limit  int
		status string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List sessions, newest first",
		Long: `Lists the sessions in the ledger (DATABASE_URL, else <data dir>/ledger.db),
newest first: id, status, whether the chain is sealed, event count, creation
time and goal. The reserved instance session is not listed.`,
		Example: `  ironvise sessions
  ironvise sessions --status aborted --limit 10
  ironvise sessions --json | jq -r '.[] | select(.sealed | not) | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 || limit > 10000 {
				return usageError(fmt.Errorf("--limit %d: use 1 to 10000", limit))
			}
			st := ledger.Status(strings.ToLower(status))
			if status != "" && !st.Valid() {
				return usageError(fmt.Errorf("--status %q: use running, completed, failed or aborted", status))
			}
			l, err := a.openLedger()
			if err != nil {
				return err
			}
			defer l.Close(a.ctx)
			list, err := l.Sessions(a.ctx, ledger.SessionFilter{Status: st, Limit: limit})
			if err != nil {
				return fmt.Errorf("list sessions: %w", err)
			}
			if asJSON {
				out := make([]ledger.SessionJSON, 0, len(list))
				for i := range list {
					out = append(out, list[i].JSON())
				}
				return a.printJSON(out)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "no sessions")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tSEALED\tEVENTS\tCREATED\tGOAL")
			for i := range list {
				s := &list[i]
				sealed := "no"
				if s.Sealed() {
					sealed = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Status, sealed, s.EventCount,
					s.CreatedAt.UTC().Format(time.DateTime), oneLine(s.Goal, 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "show at most `N` sessions")
	cmd.Flags().StringVar(&status, "status", "", "only sessions with status `S` (running, completed, failed, aborted)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON (the API's Session objects)")
	return cmd
}

// oneLine shortens s to at most n runes on one line, for tables.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
