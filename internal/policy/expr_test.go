package policy

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/tripwire"
)

func TestExprParse(t *testing.T) {
	cases := []struct{ src, canonical string }{
		{"action == 'read_file'", "action == 'read_file'"},
		{`action=="read_file"`, "action == 'read_file'"},
		{"  program_is( 'nmap' )  ", "program_is('nmap')"},
		// && binds tighter than ||.
		{"action == 'run_command' || action == 'read_file' && path_matches('*.pem')",
			"action == 'run_command' || action == 'read_file' && path_matches('*.pem')"},
		{"(action == 'run_command' || action == 'read_file') && path_matches('*.pem')",
			"(action == 'run_command' || action == 'read_file') && path_matches('*.pem')"},
		{"((program_is('a')))", "program_is('a')"},
		// Escapes \\ \' \" only; any other backslash is literal, so regexes
		// keep their escapes.
		{`command_contains('it\'s')`, `command_contains('it\'s')`},
		{`command_contains("say \"hi\"")`, `command_contains('say "hi"')`},
		{`command_contains('a\\b')`, `command_contains('a\\b')`},
		{`command_matches('grep\s+-R')`, `command_matches('grep\\s+-R')`},
		{"url_host_in_cidr('fd00::/8')", "url_host_in_cidr('fd00::/8')"},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			e, err := compileExpr(tc.src, false, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tc.canonical {
				t.Errorf("String() = %q; want %q", got, tc.canonical)
			}
		})
	}
}

func TestExprStringValues(t *testing.T) {
	for src, want := range map[string]string{
		`command_contains('it\'s')`:     `it's`,
		`command_contains("say \"x\"")`: `say "x"`,
		`command_contains('a\\b')`:      `a\b`,
		`command_contains('a\nb')`:      `a\nb`,
		`command_contains("it's")`:      `it's`,
	} {
		e, err := compileExpr(src, false, false)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if e.arg != want {
			t.Errorf("%s: argument %q; want %q", src, e.arg, want)
		}
	}
}

func TestExprErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{"", "empty expression"},
		{"   \t ", "empty expression"},
		{"foo('x')", `column 1: unknown function "foo"`},
		{"action('x')", `column 7: expected "==" after action, got "("`},
		{"command_contains()", "column 1: command_contains takes exactly 1 argument, got 0"},
		{"program_is('a', 'b')", "column 1: program_is takes exactly 1 argument, got 2"},
		{"program_is('a',)", `column 16: program_is: expected a quoted string argument, got ")"`},
		{"program_is(a)", `column 12: program_is: expected a quoted string argument, got "a"`},
		{"action == 'delete_file'", "column 11: unknown action 'delete_file'"},
		{"action == read_file", `column 11: expected a quoted action name after ==, got "read_file"`},
		{"command_matches('(')", "column 17: command_matches: bad regex"},
		{"path_matches('{a')", "column 14: path_matches: glob \"{a\": unterminated { alternatives"},
		{"url_host_in_cidr('10.0.0.1/8')", `column 18: url_host_in_cidr: "10.0.0.1/8" has host bits set (did you mean 10.0.0.0/8?)`},
		{"action == 'complete' action == 'complete'", `column 22: unexpected "action" after the end of the expression`},
		{"program_is('a') )", `column 17: unexpected ")" after the end of the expression`},
		{"(program_is('a')", `column 17: expected ")" to close the "(" at column 1, got end of expression`},
		{"program_is('a') &&", "column 19: expression ends where a condition is expected"},
		{"program_is('a') & program_is('b')", "column 17: unexpected character '&' (did you mean &&?)"},
		{"program_is('a') | program_is('b')", "column 17: unexpected character '|' (did you mean ||?)"},
		{"action = 'read_file'", "column 8: unexpected character '=' (did you mean ==?)"},
		{"!program_is('a')", "column 1: unexpected character '!' (there is no negation"},
		{"program_is('a", "column 12: unterminated string"},
		{`program_is('a\')`, "column 12: unterminated string"},
		{"1 == 1", "column 1: unexpected character '1'"},
		{"&& program_is('a')", `column 1: expected "(", "action ==" or a function call, got "&&"`},
		{strings.Repeat("(", MaxExprDepth+1) + "program_is('a')" + strings.Repeat(")", MaxExprDepth+1), "parentheses nested deeper than 32"},
		{"program_is('" + strings.Repeat("a", MaxExprBytes) + "')", "expression is 4110 bytes (max 4096)"},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			_, err := compileExpr(tc.src, false, false)
			if err == nil {
				t.Fatalf("compiled; want error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to contain %q", err, tc.want)
			}
		})
	}
	// At the depth limit it still compiles.
	deep := strings.Repeat("(", MaxExprDepth) + "program_is('a')" + strings.Repeat(")", MaxExprDepth)
	if _, err := compileExpr(deep, false, false); err != nil {
		t.Errorf("depth %d: %v", MaxExprDepth, err)
	}
}

// TestExprEval evaluates every function against real views. A function
// whose input is absent is false.
func TestExprEval(t *testing.T) {
	e := newEnv(t, "linux")
	e.write(t, "certs/server.key", "k")
	views := map[string]*tripwire.View{
		"rc grep":    e.rc("grep -R TODO / 2>/dev/null | head"),
		"rc nmap":    e.rc("timeout 9 nmap -sV 10.0.0.1 > scan.txt"),
		"rc dynamic": e.rc("$X -la"),
		"rf key":     e.rf("certs/server.key"),
		"hg public":  e.hg("https://example.com/"),
		"hg private": e.hg("https://internal.example.com/"),
		"hg literal": e.hg("https://10.9.9.9/"),
		"hg failed":  e.hg("https://fail.example.com/"),
		"hg refused": e.hg("http://internal.example.com/"),
		"complete":   e.complete(),
	}
	cases := []struct {
		expr string
		true []string // the views where it is true; false everywhere else
	}{
		{"action == 'run_command'", []string{"rc grep", "rc nmap", "rc dynamic"}},
		{"action == 'complete'", []string{"complete"}},
		{"command_contains('-R TODO /')", []string{"rc grep"}},
		{"command_contains('-r todo')", nil}, // case-sensitive
		{"command_matches('grep\\s+-R')", []string{"rc grep"}},
		{"command_matches('10\\.0\\.0\\.1')", []string{"rc nmap"}},
		{"program_is('nmap')", []string{"rc nmap"}},  // a derived program
		{"program_is('time*')", []string{"rc nmap"}}, // the wrapper itself
		{"program_is('head')", []string{"rc grep"}},
		{"program_is('*')", []string{"rc grep", "rc nmap", "rc dynamic"}},
		{"path_matches('*.key')", []string{"rf key"}},
		{"path_matches('/**/scan.txt')", []string{"rc nmap"}}, // a redirection target
		{"path_matches('/dev/null')", nil},                    // always-permitted targets are not paths
		{"url_host_in_cidr('10.0.0.0/8')", []string{"hg private", "hg literal", "hg failed"}},
		{"url_host_in_cidr('93.184.0.0/16')", []string{"hg public", "hg failed"}},
		{"action == 'http_get' && url_host_in_cidr('0.0.0.0/0')", []string{"hg public", "hg private", "hg literal", "hg failed"}},
		{"program_is('nmap') || path_matches('*.key')", []string{"rc nmap", "rf key"}},
		{"program_is('nmap') && path_matches('*.key')", nil},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			x, err := compileExpr(tc.expr, false, false)
			if err != nil {
				t.Fatal(err)
			}
			p := &Policy{}
			for name, v := range views {
				want := false
				for _, n := range tc.true {
					want = want || n == name
				}
				if got := x.eval(p, v); got != want {
					t.Errorf("%s: %v; want %v", name, got, want)
				}
			}
		})
	}
}
