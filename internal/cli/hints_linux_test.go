//go:build linux

package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/config"
)

// flagWord is a long flag named in text.
var flagWord = regexp.MustCompile(`--[a-z][a-z0-9-]*`)

// programWord is a word that names a program: ironvise (however it was
// reached: ./bin/ironvise), or another one whose flags a hint may name (a
// provisioning script, the standalone verifier).
var programWord = regexp.MustCompile(`^(?:\S*/)?(ironvise|verify-cert|[\w.-]+\.sh|podman|docker|git|go|make)$`)

// clauseEnd ends the reach of a program named in a hint: a flag after one
// of these belongs to the command that printed the text again.
const clauseEnd = "'\"`;()"

// namedFlag is a flag a text names and the command it names it for.
type namedFlag struct {
	cmd  *cobra.Command // nil: another program's flag
	flag string
	line string
}

// namedFlags extracts the flags text names: each belongs to the command a
// preceding "ironvise CMD ..." in the same clause names, to nobody when
// another program precedes it there, and otherwise to printer, the command
// that printed the text.
func namedFlags(root, printer *cobra.Command, text string) []namedFlag {
	var out []namedFlag
	for _, line := range strings.Split(text, "\n") {
		clauses := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(clauseEnd, r) })
		for _, clause := range clauses {
			owner := printer
			words := strings.FieldsFunc(clause, func(r rune) bool { return r == ' ' || r == '\t' || r == '=' || r == ',' })
			for i := 0; i < len(words); i++ {
				// "ironvise:" starts a message; "ironvise report" names a
				// command.
				w := strings.TrimRight(words[i], ".")
				if m := programWord.FindStringSubmatch(w); m != nil {
					owner = nil
					if m[1] == "ironvise" {
						owner = root
						for i+1 < len(words) {
							sub, _, err := owner.Find([]string{words[i+1]})
							if err != nil || sub == owner {
								break
							}
							owner = sub
							i++
						}
					}
					continue
				}
				if f := flagWord.FindString(w); f != "" && strings.HasPrefix(w, f) {
					out = append(out, namedFlag{owner, f[2:], line})
				}
			}
		}
	}
	return out
}

// accepts reports whether cmd takes --name.
func accepts(cmd *cobra.Command, name string) bool {
	if name == "help" {
		return true
	}
	return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
}

// leafCommands lists the commands that run something.
func leafCommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	if c.RunE != nil || c.Run != nil {
		out = append(out, c)
	}
	for _, sub := range c.Commands() {
		out = append(out, leafCommands(sub)...)
	}
	return out
}

// positionals returns arguments cmd's argument check accepts: none if it
// can, else one or more session-shaped ids.
func positionals(cmd *cobra.Command) []string {
	id := "00000000-0000-4000-8000-000000000001"
	for n := 0; n <= 3; n++ {
		args := make([]string, n)
		for i := range args {
			args[i] = id
		}
		if cmd.ValidateArgs(args) == nil {
			return args
		}
	}
	return nil
}

// requiredFlags gives each flag cobra requires of cmd an id-shaped value.
func requiredFlags(cmd *cobra.Command) []string {
	var out []string
	for _, name := range []string{"baseline", "current"} {
		if f := cmd.Flags().Lookup(name); f != nil {
			if _, req := f.Annotations[cobra.BashCompOneRequiredFlag]; req {
				out = append(out, "--"+name, "00000000-0000-4000-8000-000000000002")
			}
		}
	}
	return out
}

// TestHintsNameFlagsTheCommandAccepts runs every command in the ways that
// make commands print hints — the guard required but not configured, a
// guard switch without its confirmation, a workspace that does not
// exist, a policy pin without a policy — and checks that every flag the
// output names is one the command it names it for accepts: a hint must
// never send the operator to "unknown flag".
func TestHintsNameFlagsTheCommandAccepts(t *testing.T) {
	root := (&app{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, lookup: config.MapLookup(nil)}).rootCommand()
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, cmd := range leafCommands(root) {
		path := strings.Fields(cmd.CommandPath())[1:]
		base := append(append(append([]string{}, path...), requiredFlags(cmd)...), positionals(cmd)...)
		if cmd.Name() == "exec" {
			base = append(path, "--workspace", ws, "--", "true")
		}
		runs := [][]string{base}
		for _, extra := range [][]string{{"--no-guard"}, {"--workspace", missing}, {"--policy-sha256", "00"}} {
			if accepts(cmd, extra[0][2:]) {
				runs = append(runs, append(append(append([]string{}, path...), extra...), base[len(path):]...))
			}
		}
		for _, args := range runs {
			if cmd.Name() == "serve" && len(args) == len(path) {
				// serve with a valid configuration would listen: the
				// guard-less configuration below makes it stop at start.
				args = append(args, "--workspace", ws)
			}
			// The guard is required (the default) and no guard backend is
			// named: audit and serve refuse to start, with a hint.
			env := cliEnv(t, "LLM_BACKEND", "openai", "OPENAI_MODEL", "m", "OPENAI_BASE_URL", "http://127.0.0.1:9/v1",
				"ECTO_BIND_PORT", "0", "ECTO_SANDBOX_TIMEOUT_SECS", "5")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			var out, errb lockedBuffer
			code := run(ctx, append([]string{"ironvise"}, args...), strings.NewReader(""), &out, &errb, config.MapLookup(env))
			cancel()
			text := out.String() + errb.String()
			for _, nf := range namedFlags(root, cmd, text) {
				checked++
				if nf.cmd != nil && !accepts(nf.cmd, nf.flag) {
					t.Errorf("ironvise %s (exit %d) names --%s, which %q does not accept:\n  %s", strings.Join(args, " "), code, nf.flag, nf.cmd.CommandPath(), nf.line)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no command named any flag: the scenarios no longer reach a hint")
	}
}

// TestNamedFlags pins the extraction the test above relies on.
func TestNamedFlags(t *testing.T) {
	root := (&app{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, lookup: config.MapLookup(nil)}).rootCommand()
	audit, _, _ := root.Find([]string{"audit"})
	report, _, _ := root.Find([]string{"report"})
	text := "ironvise: guard: set GUARD_REQUIRED=false, or pass --no-guard --no-guard-confirmed\n" +
		"  export: ./bin/ironvise report ID --format html --output report.html\n" +
		"fix: scripts/provision-firecracker.sh --rootfs busybox (then run 'ironvise sessions') --workspace"
	got := namedFlags(root, audit, text)
	want := []struct {
		cmd  *cobra.Command
		flag string
	}{{audit, "no-guard"}, {audit, "no-guard-confirmed"}, {report, "format"}, {report, "output"}, {nil, "rootfs"}, {audit, "workspace"}}
	if len(got) != len(want) {
		t.Fatalf("got %d flags %+v; want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].cmd != w.cmd || got[i].flag != w.flag {
			t.Errorf("flag %d: --%s for %s; want --%s for %s", i, got[i].flag, pathOf(got[i].cmd), w.flag, pathOf(w.cmd))
		}
	}
}

func pathOf(c *cobra.Command) string {
	if c == nil {
		return "another program"
	}
	return c.CommandPath()
}
