package policy

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// fuzzViews are the views every policy that loads is evaluated on.
func fuzzViews(f *testing.F) []*tripwire.View {
	e := newEnv(f, "linux")
	e.write(f, "certs/a.key", "k")
	return []*tripwire.View{
		e.rc("ls -la | grep x > out.txt"), e.rc("nmap -sV 10.0.0.1; $X; eval \"$y\""), e.rc("cat < certs/a.key"),
		e.rc("echo 'unterminated"), e.rf("certs/a.key"), e.rf("/etc/shadow"), e.rf("../x"),
		e.hg("https://internal.example.com/"), e.hg("https://fail.example.com/"), e.hg("https://[::ffff:10.0.0.1]/"), e.hg("ftp://x"),
		e.complete(), e.rc("rm -vr /x; curl -sd@f https://example.com/; npm --registry r i x; yarn; git -c a=b log -c"),
	}
}

// FuzzLoad feeds arbitrary bytes to the policy loader. It must never
// panic; a rejected file must give a *LoadError with one problem per
// output line, each naming the file and a line inside it; a loaded policy
// must hash to its bytes and evaluate every view to a valid verdict.
func FuzzLoad(f *testing.F) {
	for _, n := range Packs() {
		b, _ := PackBytes(n)
		f.Add(b) // the shipped packs: the largest valid inputs, every rule kind
	}
	if b, err := os.ReadFile("testdata/example.toml"); err == nil {
		f.Add(b) // the complete example of docs/design/checks.md#policy-example
	}
	f.Add([]byte(""))                                                                                                                                                     // empty file: missing name
	f.Add([]byte("name = \"x\"\ngoal = 1\n"))                                                                                                                             // unknown top-level key
	f.Add([]byte("name = \"x\"\r\ncommand_rules = [\r\n { program = \"ls\", decision = \"allow\", x = 1 },\r\n]\r\n"))                                                    // CRLF lines, unknown key in an inline array
	f.Add([]byte("name = \"x\"\n[[command_rules]]\nprogram = \"ls\"\ndecision = \"deny\"\n[command_rules.sub]\na = 1\n"))                                                 // sub-table of an array-of-tables element
	f.Add([]byte("name = \"x\"\ncommand_rules = []\n[[command_rules]]\n"))                                                                                                // inline array then [[ ]]: a decoder error
	f.Add([]byte("Name = \"x\"\nname = \"y\"\n"))                                                                                                                         // keys differing only in case
	f.Add([]byte("name = \"x\"\n\"a\\nb\" = 1\n\"c.d\".e = 2\n"))                                                                                                         // quoted keys with a newline and a dot
	f.Add([]byte("name = \"x\"\ncommand_rules.program = \"ls\"\n"))                                                                                                       // dotted key into a rule list
	f.Add([]byte("name = \"x\"\napproval_gates = [{ id = \"g\", when = \"((program_is('a') || action == 'complete') && path_matches('**/x'))\" }]\n"))                    // nested gate expression
	f.Add([]byte("name = \"x\"\ncommand_rules = [{ program = \"x\", args = \"(\\n\", decision = \"deny\" }]\n"))                                                          // regex error echoing a newline
	f.Add([]byte("name = \"x\"\npath_rules = [{ glob = [\"{a,b}/**/[!x]*\", \"C:/x\"], prefix = \"/\", decision = \"deny\" }]\n"))                                        // glob syntax and both match keys
	f.Add([]byte("name = \"x\"\ndomain_rules = [{ cidr = \"::ffff:10.0.0.0/104\", decision = \"deny\" }, { host = \"xn--bcher-kva.example\", decision = \"allow\" }]\n")) // mapped prefix, IDNA host
	f.Add([]byte("name = \"x\"\nmax_steps = 9223372036854775807\napproval_timeout_seconds = -1\n"))                                                                       // integer extremes
	f.Add([]byte("name = \"x\"\na = [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]\n"))                                                                                                // deep nesting in an unknown key
	f.Add([]byte("name = \"\xff\"\n"))                                                                                                                                    // invalid UTF-8
	f.Add([]byte("name = \"x\"\ncommand_rules = [{ program = \"x\", options = [\"-r\", \"r\", 1], option_value = \"(\", subcommand = \"\", decision = \"deny\" }]\n"))    // option keys: a bad name, a non-string, a bad regex, an empty subcommand
	f.Add([]byte("name = \"x\"\n[network]\nmode = \"none\"\nallowed_domains = [\"*.B\u00fccher.example.\", \"*\", \"a.*.b\", \"2130706433\", 1]\n"))                      // [network]: IDNA wildcard, bare and inner wildcards, a numeric IPv4 form, a non-string, none with hosts
	f.Add([]byte("name = \"x\"\nnetwork.Mode = \"x\"\n[network.sub]\n"))                                                                                                  // dotted [network] key in the wrong case, an unknown sub-table
	views := fuzzViews(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.toml", data, Options{GOOS: "linux"})
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || len(le.Problems) == 0 {
				t.Fatalf("error %T %q; want a *LoadError with problems", err, err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(le.Problems) {
				t.Fatalf("%d output lines for %d problems:\n%s", len(lines), len(le.Problems), err)
			}
			maxLine := bytes.Count(data, []byte("\n")) + 1
			for i, pr := range le.Problems {
				if !strings.HasPrefix(lines[i], "f.toml") || pr.Line < 0 || pr.Line > maxLine || pr.Message == "" {
					t.Fatalf("problem %+v (line %q) outside the file's %d lines", pr, lines[i], maxLine)
				}
			}
			return
		}
		if p.SHA256() != Hash(data) {
			t.Fatalf("hash %s; want %s", p.SHA256(), Hash(data))
		}
		for _, v := range views {
			pv := p.Evaluate(v)
			switch pv.Decision {
			case verdict.Allow, verdict.Deny, verdict.RequireApproval:
			default:
				t.Fatalf("decision %q", pv.Decision)
			}
			if pv.Decision == verdict.RequireApproval && len(pv.Gates) == 0 {
				t.Fatalf("require_approval without gates: %+v", pv)
			}
			if req, ok := p.TriggeredGates(v, pv); ok && (len(req.Gates) != len(req.Reasons) || req.TimeoutSeconds < 1) {
				t.Fatalf("bad request %+v", req)
			}
		}
	})
}

// FuzzGateExpr feeds arbitrary text to the gate expression compiler. It
// must never panic, and an expression that compiles must print a canonical
// form that compiles to the same canonical form and the same results.
func FuzzGateExpr(f *testing.F) {
	f.Add("action == 'run_command'")                                                                // the simplest comparison
	f.Add("action == 'run_command' && (command_contains('-r /') || command_matches('grep\\s+-R'))") // the example of docs/design/checks.md#policy-example
	f.Add("action == 'http_get' && url_host_in_cidr('10.0.0.0/8')")                                 // the shipped packs' gates
	f.Add("a || b && c")                                                                            // bare identifiers: unknown functions
	f.Add("program_is('a') || program_is('b') && path_matches('*.{pem,key}')")                      // precedence without parentheses
	f.Add("((((program_is('*')))))")                                                                // redundant parentheses
	f.Add(`command_contains('it\'s \"q\" \\ \n')`)                                                  // every escape and a literal backslash
	f.Add(`command_contains("say \"hi\"")`)                                                         // double-quoted string
	f.Add("command_contains('a', 'b')")                                                             // wrong arity
	f.Add("command_contains(")                                                                      // truncated call
	f.Add("action == 'complete' )")                                                                 // trailing token
	f.Add("url_host_in_cidr('::ffff:0:0/96')")                                                      // IPv4-mapped prefix
	f.Add("path_matches('/a/**/b/[!c]?')")                                                          // every glob feature
	f.Add("action == 'r\u00e9ad'")                                                                  // non-ASCII in a string
	f.Add(strings.Repeat("(", 40) + "program_is('a')" + strings.Repeat(")", 40))                    // nesting past the limit
	views := fuzzViews(f)
	p := &Policy{}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := compileExpr(s, false, false)
		if err != nil {
			return
		}
		c := e.String()
		if len(c) > MaxExprBytes {
			return // escaping can lengthen a maximal expression
		}
		e2, err := compileExpr(c, false, false)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not compile: %v", c, s, err)
		}
		if e2.String() != c {
			t.Fatalf("canonical form is not stable: %q then %q", c, e2.String())
		}
		for _, v := range views {
			if e.eval(p, v) != e2.eval(p, v) {
				t.Fatalf("%q and its canonical form %q disagree", s, c)
			}
		}
	})
}
