package tripwire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// testCommands are the commands the tests of this package check: every
// rc("…") literal of its test files.
func testCommands(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lit := regexp.MustCompile("rc\\((\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`)\\)")
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			if s, err := strconv.Unquote(m[1]); err == nil {
				out = append(out, s)
			}
		}
	}
	if len(out) < 200 {
		t.Fatalf("found %d commands in the tests; the pattern no longer reads them", len(out))
	}
	return out
}

// TestBuiltinArgRules: the built-in rules, compiled on first use, decide
// every command of the tests as the same rules loaded from a file (and so
// compiled and checked at load) do, and pass every check a file's rules
// get.
func TestBuiltinArgRules(t *testing.T) {
	ws := workspace(t)
	lazy := setup(t, ws, nil)
	eager := setup(t, ws, map[string]any{"banned_arg_rules": defaultArgRules})
	banned := 0
	for _, cmd := range testCommands(t) {
		want, got := check(t, eager, rc(cmd)), check(t, lazy, rc(cmd))
		if got.Code != want.Code || got.Rule != want.Rule || got.Message != want.Message {
			t.Errorf("%q: built-in rules give %s %s %q; the same rules from a file %s %s %q", cmd, got.Code, got.Rule, got.Message, want.Code, want.Rule, want.Message)
		}
		if want.Code == verdict.CmdBannedArgs {
			banned++
		}
	}
	if banned < 50 {
		t.Fatalf("only %d commands hit an argument rule", banned)
	}
	for _, r := range builtinArgRules() {
		if _, err := r.match(); err != nil {
			t.Errorf("built-in rule %s: %v", r.ID, err)
		}
	}
}

// TestBrokenBuiltinArgRuleFiresClosed: a built-in rule whose conditions
// cannot be compiled denies the commands of its program, and only those.
func TestBrokenBuiltinArgRuleFiresClosed(t *testing.T) {
	ws := workspace(t)
	cfg, err := LoadConfigBytes(nil, LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.BannedArgRules {
		if cfg.BannedArgRules[i].ID == "chmod_world_writable" {
			cfg.BannedArgRules[i].match = func() (*argMatch, error) { return nil, errors.New("broken") }
		}
	}
	tw := New(cfg, Options{Workspace: ws, Resolver: publicDNS})
	if v := check(t, tw, rc("chmod 644 notes.txt")); v.Code != verdict.CmdBannedArgs || v.Rule != "chmod_world_writable" {
		t.Errorf("a broken rule let its program run: %s %s", v.Code, v.Rule)
	}
	if v := check(t, tw, rc("ls -la")); v.Code != verdict.OK {
		t.Errorf("a broken rule denied another program: %s %s", v.Code, v.Rule)
	}
	// The shared built-in set is untouched by the change above.
	if v := check(t, setup(t, ws, nil), rc("chmod 644 notes.txt")); v.Code != verdict.OK {
		t.Errorf("a change to one configuration reached the shared built-in rules: %s %s", v.Code, v.Rule)
	}
}

// TestChangedRuleFileIsCompiledAgain: rules are reused only for the same
// bytes. A file changed between two loads (as between two exec requests
// to serve) is honoured at once, whatever its time stamp, and a bad file
// reports its problems on every load.
func TestChangedRuleFileIsCompiledAgain(t *testing.T) {
	ws := workspace(t)
	load := func(rule map[string]any) (*Tripwire, error) {
		b, err := json.Marshal(map[string]any{"extra_banned_arg_rules": []map[string]any{rule}})
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfigBytes(b, LoadOptions{Workspace: ws})
		if err != nil {
			return nil, err
		}
		return New(cfg, Options{Workspace: ws, Resolver: publicDNS}), nil
	}
	for range 2 {
		a, err := load(map[string]any{"id": "deploy_prod", "program": "deploy", "operand": "prod"})
		if err != nil {
			t.Fatal(err)
		}
		if v := check(t, a, rc("deploy prod")); v.Rule != "deploy_prod" {
			t.Fatalf("first file: %s %s", v.Code, v.Rule)
		}
		b, err := load(map[string]any{"id": "deploy_prod", "program": "deploy", "operand": "staging"})
		if err != nil {
			t.Fatal(err)
		}
		if v := check(t, b, rc("deploy prod")); v.Code != verdict.OK {
			t.Fatalf("changed file: the old rule still fired: %s %s", v.Code, v.Rule)
		}
		if v := check(t, b, rc("deploy staging")); v.Rule != "deploy_prod" {
			t.Fatalf("changed file: the new rule did not fire: %s %s", v.Code, v.Rule)
		}
		var ce *ConfigError
		if _, err := load(map[string]any{"id": "bad", "program": "deploy", "operand": "("}); !errors.As(err, &ce) {
			t.Fatalf("a bad rule was accepted: %v", err)
		}
	}
}

// BenchmarkLoadDefaults: loading the configuration without a file, as
// every standalone exec does. "first" is the first load of a process (the
// built-in set built afresh each time); "later" every other one, which
// shares the set (a daemon's).
func BenchmarkLoadDefaults(b *testing.B) {
	ws := b.TempDir()
	for _, fresh := range []bool{true, false} {
		name := map[bool]string{true: "first", false: "later"}[fresh]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := LoadConfigBytes(nil, LoadOptions{Workspace: ws}); err != nil {
					b.Fatal(err)
				}
				if fresh {
					buildBuiltinArgRules()
				}
			}
		})
	}
}

// BenchmarkLoadFile: loading the same tripwire.json again, as serve does
// for each exec request.
func BenchmarkLoadFile(b *testing.B) {
	ws := b.TempDir()
	data, err := json.Marshal(map[string]any{"banned_arg_rules": defaultArgRules, "extra_banned_arg_rules": []map[string]any{{"id": "x", "program": "x", "operand": "y"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LoadConfigBytes(data, LoadOptions{Workspace: ws}); err != nil {
			b.Fatal(err)
		}
	}
}
