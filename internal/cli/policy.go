package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/policy"
)

// policyEntry is one line of `ironvise policy list --json`.
type policyEntry struct {
	Name   string `json:"name"`
	Title  string `json:"title"`
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	Valid  bool   `json:"valid"`
	Error  string `json:"error,omitempty"`
}

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with policies (the shipped packs and <data dir>/policies/*.toml)",
		Long: `A policy is a TOML file that narrows what an agent may do: allowed actions,
command, path and domain rules, approval gates and observation rules
(docs/policies.md). Pass one to audit, exec, check or replay with --policy, and
pin it with --policy-sha256.

--policy takes a path or a name. A value with a "/" is a path, relative to the
working directory or absolute; without an extension, <path>.toml is tried too.
A bare value is looked up, in order, among the shipped packs, in
<data dir>/policies/<name>.toml, and as ./<value> and ./<name>.toml. Exactly
one place may hold it: a name found in two places is refused as ambiguous
(pass a path such as ./team.toml to choose the file), so a file an agent wrote
into its workspace never stands in for a pack. When nothing is found, the error
lists every place looked at.`,
		Example: `  ironvise policy list
  ironvise check --policy soc2-audit < intent.json
  ironvise check --policy ./team.toml < intent.json
  ironvise check --policy team < intent.json   # ./team.toml, when no pack or data-dir policy is named team`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(a.policyListCommand())
	return cmd
}

func (a *app) policyListCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the shipped policy packs and the policies in the data dir",
		Long: `Lists the policy packs shipped inside the binary (always, even when the data
dir has no policies folder) and every <data dir>/policies/*.toml, with the name
that --policy accepts, where it comes from and its SHA-256 (the value
--policy-sha256 pins). A policy file that does not load is listed as invalid,
and its errors are printed on stderr.`,
		Example: `  ironvise policy list
  ironvise policy list --json | jq -r '.[] | select(.valid) | .name'
  ironvise audit "review nginx TLS settings" --policy soc2-audit --policy-sha256 <sha256 from the list>`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			entries, err := policy.List(cfg.DataDir)
			if err != nil {
				return exitCode(ExitUsage, fmt.Errorf("%w (check the permissions of %s)", err, filepath.Join(cfg.DataDir, "policies")))
			}
			out := make([]policyEntry, len(entries))
			for i, e := range entries {
				out[i] = policyEntry{Name: e.Name, Title: e.Title, Source: e.Source, SHA256: e.SHA256, Valid: e.Err == nil}
				if e.Err != nil {
					out[i].Error = e.Err.Error()
				}
			}
			if asJSON {
				return a.printJSON(out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSOURCE\tSHA256\tPOLICY")
			for _, e := range out {
				title := e.Title
				if !e.Valid {
					title = "invalid (see stderr)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, e.Source, e.SHA256, title)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, e := range out {
				if !e.Valid {
					fmt.Fprintf(a.stderr, "ironvise: policy %s is invalid:\n%s\n", e.Name, indentPolicyErrors(e.Error))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// indentPolicyErrors prefixes every line with two spaces.
func indentPolicyErrors(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
