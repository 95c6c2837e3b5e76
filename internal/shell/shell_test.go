package shell

import (
	"fmt"
	"strings"
	"testing"
)

func progs(a *Analysis) string {
	var out []string
	for _, c := range a.Commands {
		p := c.Program
		if c.AssignOnly {
			p = "="
		}
		if c.Dynamic {
			p = "?" + p
		}
		if c.Derived {
			p = c.Wrapper + ">" + p
		}
		out = append(out, fmt.Sprintf("%s@%d", p, c.PipePos))
	}
	return strings.Join(out, " ")
}

// wantProgs checks, for each case, that src parses and its commands (in
// the notation of progs) are want.
func wantProgs(t *testing.T, cases []struct{ src, want string }) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			a := Analyze(tc.src, Options{})
			if a.ParseError != nil || a.TooComplex != "" {
				t.Fatalf("unexpected failure: %v %s", a.ParseError, a.TooComplex)
			}
			if got := progs(a); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestAnalyzeCommands(t *testing.T) {
	cases := []struct{ src, want string }{
		{"ls -la", "ls@0"},
		{"a | b | c", "a@0 b@1 c@2"},
		{"a | { b; c; } | d", "a@0 b@1 c@1 d@2"},
		{"x | (y | z)", "x@0 y@1 z@1"},
		{"echo $(id) `whoami`", "echo@0 id@0 whoami@0"},
		{"timeout 5 env A=1 nice -n 3 ls", "timeout@0 timeout>env@0 env>nice@0 nice>ls@0"},
		{"sh -c 'a; b | c' x", "sh@0 sh -c>a@0 sh -c>b@0 sh -c>c@1"},
		{"find . -exec a {} \\; -execdir b {} +", "find@0 find>a@0 find>b@0"},
		{"xargs", "xargs@0 xargs>echo@0"},
		{"X=1", "=@0"},
		{"$X y", "?@0"},
		{"eval ls", "?eval@0"},
		{"if a; then b; elif c; then d; else e; fi", "a@0 b@0 c@0 d@0 e@0"},
		{"while a; do b; done; for i in $(c); do d; done", "a@0 b@0 c@0 d@0"},
		{"case $(a) in x) b;; esac", "a@0 b@0"},
		{"f() { g; }; f", "g@0 f@0"},
	}
	wantProgs(t, cases)
}

func TestStaticWords(t *testing.T) {
	cases := []struct {
		src    string
		static bool
		value  string
		match  string
	}{
		{`'a b'`, true, "a b", "a b"},
		{`"a\$b\x"`, true, `a$b\x`, `a$b\x`},
		{`s\udo`, true, "sudo", "sudo"},
		{`"su""do"`, true, "sudo", "sudo"},
		{`a\*`, true, "a*", "a*"},
		{`a*`, false, "", "a*"},
		{`"$HOME"/*`, false, "", "$HOME/*"},
		{`~/x`, false, "", "~/x"},
		{`$'x'`, false, "", "$x"},
		{`"$(id)"`, false, "", "$(id)"},
	}
	for _, tc := range cases {
		a := Analyze("echo "+tc.src, Options{})
		if a.ParseError != nil {
			t.Fatalf("%s: %v", tc.src, a.ParseError)
		}
		w := a.Commands[0].Args[0]
		if w.Static != tc.static || w.Value != tc.value || w.Match != tc.match {
			t.Errorf("%s: got static=%v value=%q match=%q; want %v %q %q", tc.src, w.Static, w.Value, w.Match, tc.static, tc.value, tc.match)
		}
	}
}

func TestLimits(t *testing.T) {
	many := strings.Repeat("a;", MaxCommands) + "a"
	if a := Analyze(many, Options{}); a.TooComplex == "" {
		t.Fatalf("%d commands: want too complex", MaxCommands+1)
	}
	if a := Analyze(strings.Repeat("a;", MaxCommands-1)+"a", Options{}); a.TooComplex != "" {
		t.Fatalf("%d commands: %s", MaxCommands, a.TooComplex)
	}
	deep := strings.Repeat("{ ", MaxDepth+1) + "a" + strings.Repeat("; }", MaxDepth+1)
	if a := Analyze(deep, Options{}); a.TooComplex == "" {
		t.Fatalf("depth %d: want too complex", MaxDepth+1)
	}
	ok := strings.Repeat("{ ", MaxDepth) + "a" + strings.Repeat("; }", MaxDepth)
	if a := Analyze(ok, Options{}); a.TooComplex != "" || a.ParseError != nil {
		t.Fatalf("depth %d: %s %v", MaxDepth, a.TooComplex, a.ParseError)
	}
}

func TestGlob(t *testing.T) {
	g, err := CompileGlob("{nc,ncat,nc.*}")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"nc": true, "ncat": true, "nc.openbsd": true, "netcat": false, "NC": false} {
		if got := g.Match(name, false); got != want {
			t.Errorf("Match(%q) = %v; want %v", name, got, want)
		}
	}
	if !g.Match("NC", true) {
		t.Error("folded match failed")
	}
	if _, err := CompileGlob("["); err == nil {
		t.Error("bad glob accepted")
	}
}

// TestGlobPrefixFastPath: a trailing-* glob decides as path.Match does.
func TestGlobPrefixFastPath(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"python*", "python3.12", true}, {"python*", "python", true}, {"python*", "xpython", false},
		{"mkfs*", "mkfs.ext4", true}, {"{nc,nc.*}", "nc.openbsd", true}, {"{nc,nc.*}", "ncat", false},
		{"a\\*", "a*", true}, {"a\\*", "ab", false}, {"a?*", "ab", true}, {"a?*", "a", false},
	} {
		g, err := CompileGlob(tc.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Match(tc.name, false); got != tc.want {
			t.Errorf("%s ~ %s = %v; want %v", tc.glob, tc.name, got, tc.want)
		}
	}
}
