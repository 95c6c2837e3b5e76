package cli

import (
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/execclient"
)

// TestExecThinExitCodes: the codes the thin path produces are exec's.
func TestExecThinExitCodes(t *testing.T) {
	if execclient.ExitAborted != ExitExecAborted || execclient.ExitUsage != ExitUsage {
		t.Fatalf("execclient's exit codes %d/%d; exec's %d/%d", execclient.ExitAborted, execclient.ExitUsage, ExitExecAborted, ExitUsage)
	}
}

// TestExecThinKnowsEveryFlag enumerates exec's cobra flags: each is one
// the thin path reads the same way (a string flag with the same default)
// or one that makes it leave the command line to cobra.
func TestExecThinKnowsEveryFlag(t *testing.T) {
	a := &app{ctx: context.Background(), stdout: io.Discard, stderr: io.Discard, lookup: config.MapLookup(nil)}
	root := a.rootCommand()
	cmd, _, err := root.Find([]string{"exec"})
	if err != nil || cmd.Name() != "exec" {
		t.Fatalf("find exec: %v", err)
	}
	cmd.InitDefaultHelpFlag()
	thin := map[string]execclient.Flag{}
	for _, f := range execclient.Flags() {
		thin[f.Name] = f
	}
	seen := map[string]bool{}
	check := func(f *pflag.Flag) {
		seen[f.Name] = true
		tf, ok := thin[f.Name]
		switch {
		case !ok:
			t.Errorf("exec's --%s is unknown to the thin path: list it in execclient's flags (read as a string flag, or one that falls through)", f.Name)
		case tf.String && (f.Value.Type() != "string" || f.DefValue != tf.Default || f.NoOptDefVal != ""):
			t.Errorf("--%s: cobra has a %s flag defaulting to %q; the thin path reads a string defaulting to %q", f.Name, f.Value.Type(), f.DefValue, tf.Default)
		}
	}
	cmd.LocalFlags().VisitAll(check)
	cmd.InheritedFlags().VisitAll(check)
	for name := range thin {
		if !seen[name] {
			t.Errorf("the thin path knows --%s; exec has no such flag", name)
		}
	}
}

// parseCobra parses args (os.Args form) with the real command line, exec's
// action replaced by a capture.
func parseCobra(args []string) (execOptions, bool) {
	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard, lookup: config.MapLookup(nil)}
	root := a.rootCommand()
	old, _, _ := root.Find([]string{"exec"})
	root.RemoveCommand(old)
	var got execOptions
	ran := false
	root.AddCommand(execCobra(func(o execOptions) error {
		got, ran = o, true
		return nil
	}))
	root.SetArgs(args[1:])
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	return got, err == nil && ran
}

// execWords are the pieces the parser comparison builds command lines
// from: every flag in each form, values that look like flags, and
// arguments that look like commands.
var execWords = []string{
	"--", "-", "", "ls", "-la", "echo hi", "help", "exec", "--session", "--session=s1", "--session=a=b", "--workspace", "/ws",
	"--workspace=", "--policy", "p.yaml", "--policy-sha256=ab", "--policy-sha256", "--justification", "--justification=",
	"why not", "--no-daemon", "--no-daemon=false", "-h", "--help", "--bogus", "--bogus=1", "---x", "--=x", "-s", "--Session=x",
}

// TestExecThinParsesAsCobra: every command line the thin path accepts,
// cobra accepts with the same options — over all lines of up to three of
// execWords and random longer ones.
func TestExecThinParsesAsCobra(t *testing.T) {
	var lines [][]string
	var grow func(prefix []string, n int)
	grow = func(prefix []string, n int) {
		lines = append(lines, prefix)
		if n == 0 {
			return
		}
		for _, w := range execWords {
			grow(append(append([]string(nil), prefix...), w), n-1)
		}
	}
	grow(nil, 3)
	if testing.Short() {
		lines = lines[:2000]
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		line := make([]string, 4+r.IntN(5))
		for i := range line {
			line[i] = execWords[r.IntN(len(execWords))]
		}
		lines = append(lines, line)
	}
	accepted := 0
	for _, line := range lines {
		args := append([]string{"ironvise", "exec"}, line...)
		thin, ok := execclient.ParseArgs(args)
		if !ok {
			continue
		}
		accepted++
		full, fullOK := parseCobra(args)
		if !fullOK || thin != full {
			t.Fatalf("%q: the thin path read %+v; cobra read %+v (ok %v)", line, thin, full, fullOK)
		}
	}
	if accepted < 500 {
		t.Fatalf("only %d of %d lines went the thin path", accepted, len(lines))
	}
	t.Logf("%d of %d command lines went the thin path, each as cobra reads it", accepted, len(lines))
}

// TestExecThinLeavesOthersToCobra: forms the thin path must not take.
func TestExecThinLeavesOthersToCobra(t *testing.T) {
	for _, line := range [][]string{
		{"ironvise"}, {"ironvise", "version"}, {"ironvise", "--help", "exec"}, {"ironvise", "exec"}, {"ironvise", "exec", "--"},
		{"ironvise", "exec", "--no-daemon", "--", "ls"}, {"ironvise", "exec", "--help"}, {"ironvise", "exec", "-h", "ls"},
		{"ironvise", "exec", "ls", "--workspace", "/w"}, {"ironvise", "exec", "--workspace"}, {"ironvise", "exec", "--workspace", "-w", "ls"},
		{"ironvise", "exec", "--bogus", "--", "ls"}, {"ironvise", "exec", "-", "ls"}, {"ironvise", "Exec", "--", "ls"},
	} {
		if o, ok := execclient.ParseArgs(line); ok {
			t.Errorf("%q went the thin path as %+v", line, o)
		}
	}
}
