package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// evalCase is one step evaluated against one policy.
type evalCase struct {
	name   string
	policy string
	view   func(e *testEnv) *tripwire.View
	// want is the decision and code; rule and gates are checked when set.
	decision verdict.Decision
	code     verdict.Code
	rule     string
	gates    []string
	message  string // substring of the message, when set
}

func runEvalCases(t *testing.T, goos string, cases []evalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, goos)
			p := mustParseOS(t, tc.policy, goos)
			got := p.Evaluate(tc.view(e))
			if got.Check != verdict.CheckPolicy {
				t.Errorf("check = %q; want policy", got.Check)
			}
			if got.Decision != tc.decision || got.Code != tc.code {
				t.Fatalf("got %s %s (%q, rule %q); want %s %s", got.Decision, got.Code, got.Message, got.Rule, tc.decision, tc.code)
			}
			if tc.rule != "" && got.Rule != tc.rule {
				t.Errorf("rule = %q; want %q (message %q)", got.Rule, tc.rule, got.Message)
			}
			if tc.gates != nil && !slices.Equal(got.Gates, tc.gates) {
				t.Errorf("gates = %q; want %q", got.Gates, tc.gates)
			}
			if tc.message != "" && !strings.Contains(got.Message, tc.message) {
				t.Errorf("message = %q; want it to contain %q", got.Message, tc.message)
			}
		})
	}
}

func rc(cmd string) func(*testEnv) *tripwire.View {
	return func(e *testEnv) *tripwire.View { return e.rc(cmd) }
}
func rf(path string) func(*testEnv) *tripwire.View {
	return func(e *testEnv) *tripwire.View { return e.rf(path) }
}
func hg(url string) func(*testEnv) *tripwire.View {
	return func(e *testEnv) *tripwire.View { return e.hg(url) }
}

const (
	allowNmap = `{ id = "nmap-ok", program = "nmap", decision = "allow" }`
	denyNmap  = `{ id = "nmap-no", program = "nmap", decision = "deny", reason = "no scanning" }`
	askNmap   = `{ id = "nmap-ask", program = "nmap", decision = "require_approval" }`
)

func commandPolicy(extra string, rules ...string) string {
	return "name = \"t\"\n" + extra + "\ncommand_rules = [\n  " + strings.Join(rules, ",\n  ") + ",\n]\n"
}

// TestSpecPolicyCases covers the policy side of
// docs/design/checks.md#acceptance-cases cases 37 and 38 (the pack cases
// 39–43 and 58 are in packs_test.go).
func TestSpecPolicyCases(t *testing.T) {
	runEvalCases(t, "linux", []evalCase{
		{name: "37 forbidden http_get", policy: "name = \"t\"\nforbidden_actions = [\"http_get\"]\n",
			view: hg("https://example.com/"), decision: verdict.Deny, code: verdict.PolicyActionForbidden,
			message: `action "http_get" is forbidden by policy t`},
		{name: "37 forbidden beats every rule", policy: "name = \"t\"\nforbidden_actions = [\"http_get\"]\ndomain_rules = [{ host = \"example.com\", decision = \"allow\" }]\n",
			view: hg("https://example.com/"), decision: verdict.Deny, code: verdict.PolicyActionForbidden},
		{name: "not in allowed_actions", policy: "name = \"t\"\nallowed_actions = [\"read_file\", \"complete\"]\n",
			view: rc("ls"), decision: verdict.Deny, code: verdict.PolicyActionNotAllowed, rule: "allowed_actions"},
		{name: "38 allow then deny", policy: commandPolicy("", allowNmap, denyNmap),
			view: rc("nmap -sV h"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "nmap-no", message: "rule nmap-no: no scanning"},
		{name: "38 deny then allow", policy: commandPolicy("", denyNmap, allowNmap),
			view: rc("nmap -sV h"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "nmap-no"},
	})
}

func TestNoPolicyLoaded(t *testing.T) {
	e := newEnv(t, "linux")
	var p *Policy
	for _, v := range []*tripwire.View{e.rc("sudo ls"), e.rf("/etc/shadow"), e.hg("https://evil.io/"), e.complete(), nil} {
		got := p.Evaluate(v)
		if got.Decision != verdict.Allow || got.Code != verdict.OK || got.Message != "no policy loaded" || got.Check != verdict.CheckPolicy {
			t.Errorf("nil policy: got %+v; want allow ok \"no policy loaded\"", got)
		}
		if _, ok := p.TriggeredGates(v, got); ok {
			t.Errorf("nil policy triggered a gate")
		}
	}
}

func TestNoViewDenies(t *testing.T) {
	p := mustParse(t, `name = "t"`)
	if got := p.Evaluate(nil); got.Decision != verdict.Deny || got.Code != verdict.CheckInternalError {
		t.Errorf("Evaluate(nil) = %s %s; want deny check_internal_error", got.Decision, got.Code)
	}
}

// TestPrecedence checks docs/design/checks.md#policy-precedence: the most
// restrictive decision wins for every permutation of the rules, allow rules
// lift a deny default but never a matching deny rule, and denies are reported
// in the documented order.
func TestPrecedence(t *testing.T) {
	rules := []string{allowNmap, denyNmap, askNmap}
	var cases []evalCase
	for _, perm := range permutations(len(rules)) {
		var rs []string
		for _, i := range perm {
			rs = append(rs, rules[i])
		}
		name := strings.ReplaceAll(strings.Join(rs, " "), `"`, "")
		cases = append(cases,
			evalCase{name: "allow+deny+approval " + name, policy: commandPolicy("", rs...), view: rc("nmap -sV h"),
				decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "nmap-no"},
			evalCase{name: "allow+approval " + name, policy: commandPolicy("", without(rs, denyNmap)...), view: rc("nmap -sV h"),
				decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval, rule: "nmap-ask", gates: []string{DefaultGateID}},
		)
	}
	cases = append(cases, []evalCase{
		{name: "allow lifts a deny default", policy: commandPolicy(`default_command_decision = "deny"`, `{ program = ["ls", "cat"], decision = "allow" }`),
			view: rc("ls -la; cat notes.txt"), decision: verdict.Allow, code: verdict.OK},
		{name: "default deny for an unmatched program", policy: commandPolicy(`default_command_decision = "deny"`, `{ program = "ls", decision = "allow" }`),
			view: rc("ls -la | head -5"), decision: verdict.Deny, code: verdict.PolicyDefaultDeny, rule: "default_command_decision",
			message: `no command rule allows program "head"`},
		{name: "narrower deny is the exception", policy: commandPolicy("", `{ id = "git", program = "git", decision = "allow" }`, `{ id = "no-push", program = "git", args = '(^|\s)push(\s|$)', decision = "deny" }`),
			view: rc("git push origin main"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "no-push"},
		{name: "narrower deny leaves the rest", policy: commandPolicy("", `{ id = "git", program = "git", decision = "allow" }`, `{ id = "no-push", program = "git", args = '(^|\s)push(\s|$)', decision = "deny" }`),
			view: rc("git status"), decision: verdict.Allow, code: verdict.OK},
		{name: "step takes the most restrictive item", policy: commandPolicy("", askNmap, `{ id = "rm", program = "rm", decision = "deny" }`),
			view: rc("nmap h; ls; rm x"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "rm"},
		{name: "approval when no item denies", policy: commandPolicy("", askNmap),
			view: rc("ls; nmap h"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval},
		{name: "reported deny is the first rule in file order, not in script order",
			policy: commandPolicy("", `{ id = "first", program = "cat", decision = "deny" }`, `{ id = "second", program = "ls", decision = "deny" }`),
			view:   rc("ls; cat x"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "first"},
		{name: "command rule deny reported before path rule deny",
			policy: "name = \"t\"\npath_rules = [{ id = \"p\", prefix = \"/etc\", decision = \"deny\" }]\ncommand_rules = [{ id = \"c\", program = \"cat\", decision = \"deny\" }]\n",
			view:   rc("cat < /etc/hostname"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "c"},
		{name: "rule deny reported before executables",
			policy: commandPolicy(`executables = ["ls"]`, `{ id = "py", program = "python3", decision = "deny" }`),
			view:   rc("perl x; python3 y"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "py"},
		{name: "executables reported before a default deny",
			policy: commandPolicy("default_command_decision = \"deny\"\nexecutables = [\"ls\"]", `{ program = "ls", decision = "allow" }`),
			view:   rc("python3 y"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed, rule: "executables",
			message: `program "python3" is not in policy executables`},
		{name: "executables deny outweighs an allow rule",
			policy: commandPolicy(`executables = ["ls"]`, `{ program = "python3", decision = "allow" }`),
			view:   rc("python3 y"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed},
		{name: "executables deny outweighs approval",
			policy: commandPolicy(`executables = ["ls"]`, askNmap),
			view:   rc("nmap h"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed},
		{name: "bare assignment has no program", policy: commandPolicy(`default_command_decision = "deny"`, `{ program = "ls", decision = "allow" }`),
			view: rc("X=1"), decision: verdict.Allow, code: verdict.OK},
		{name: "complete is never matched by rules", policy: commandPolicy(`default_command_decision = "deny"`, `{ program = "*", decision = "deny" }`) + "default_path_decision = \"deny\"\ndefault_domain_decision = \"deny\"\n",
			view: func(e *testEnv) *tripwire.View { return e.complete() }, decision: verdict.Allow, code: verdict.OK},
	}...)
	runEvalCases(t, "linux", cases)
}

func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(slices.Clone(p[:i]), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}

func without(list []string, s string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x == s })
}

func TestCommandMatching(t *testing.T) {
	nginx := `{ id = "no-signals", program = "nginx", args = '(^|\s)-s(\s|$)', decision = "deny" }`
	runEvalCases(t, "linux", []evalCase{
		{name: "args regex matches", policy: commandPolicy("", nginx), view: rc("nginx -s reload"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "args regex does not match", policy: commandPolicy("", nginx), view: rc("nginx -t"), decision: verdict.Allow, code: verdict.OK},
		{name: "args see quote-removed match texts", policy: commandPolicy("", nginx), view: rc(`nginx "-s" 're'load`), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "args are joined by single spaces", policy: commandPolicy("", `{ id = "r", program = "nginx", args = '^-s reload$', decision = "deny" }`),
			view: rc("nginx   -s     reload"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "args are unanchored", policy: commandPolicy("", `{ id = "r", program = "nginx", args = 'load', decision = "deny" }`),
			view: rc("nginx -s reload"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "args never match the program word", policy: commandPolicy("", `{ id = "r", program = "*", args = 'nginx', decision = "deny" }`),
			view: rc("nginx -t"), decision: verdict.Allow, code: verdict.OK},
		{name: "program matches the basename", policy: commandPolicy("", denyNmap), view: rc("/usr/bin/nmap h"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "program glob with braces", policy: commandPolicy("", `{ id = "nc", program = "{nc,ncat}", decision = "deny" }`), view: rc("ncat h 80"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "program glob with star", policy: commandPolicy("", `{ id = "mk", program = "mkfs*", decision = "deny" }`), view: rc("mkfs.ext4 x"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "program names are case-sensitive on linux", policy: commandPolicy("", denyNmap), view: rc("NMAP h"), decision: verdict.Allow, code: verdict.OK},
		{name: "derived command via timeout", policy: commandPolicy("", denyNmap), view: rc("timeout 5 nmap h"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "derived command via env", policy: commandPolicy("", denyNmap), view: rc("env A=1 nmap h"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "derived command via find -exec", policy: commandPolicy("", `{ id = "rm", program = "rm", decision = "deny" }`), view: rc(`find . -name x -exec rm {} \;`), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "command inside sh -c", policy: commandPolicy("", denyNmap), view: rc(`sh -c 'nmap h'`), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "command inside a substitution", policy: commandPolicy("", denyNmap), view: rc(`echo "$(nmap h)"`), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "command inside a function", policy: commandPolicy("", denyNmap), view: rc(`f() { nmap h; }; f`), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "obfuscated program name", policy: commandPolicy("", denyNmap), view: rc(`"nm""ap" h; n\map h`), decision: verdict.Deny, code: verdict.PolicyCommandRule},
		{name: "grep for the name is not the program", policy: commandPolicy("", denyNmap), view: rc(`grep nmap notes.txt`), decision: verdict.Allow, code: verdict.OK},
		{name: "dynamic program is not matched by a name", policy: commandPolicy("", `{ id = "ls", program = "ls", decision = "deny" }`),
			view: rc(`$X -la`), decision: verdict.Allow, code: verdict.OK},
		{name: "dynamic program matches star", policy: commandPolicy("", `{ id = "any", program = "*", decision = "deny" }`),
			view: rc(`$X -la`), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "any"},
		{name: "dynamic program takes the default", policy: commandPolicy(`default_command_decision = "deny"`, `{ program = "ls", decision = "allow" }`),
			view: rc(`ls; $(printf rm) -rf x`), decision: verdict.Deny, code: verdict.PolicyDefaultDeny},
		{name: "known program running dynamic code is matched by name", policy: commandPolicy("", `{ id = "no-eval", program = "eval", decision = "deny" }`),
			view: rc(`eval "$CMD"`), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "no-eval"},
		{name: "unparseable script has no command items", policy: commandPolicy(`default_command_decision = "deny"`, denyNmap),
			view: rc(`echo 'unterminated`), decision: verdict.Allow, code: verdict.OK},
	})
}

func TestCaseFolding(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		t.Run(goos, func(t *testing.T) {
			runEvalCases(t, goos, []evalCase{
				{name: "program folded", policy: commandPolicy("", denyNmap), view: rc("NMAP h"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
				{name: "rule glob folded", policy: commandPolicy("", `{ id = "x", program = "NMap", decision = "deny" }`), view: rc("nmap h"), decision: verdict.Deny, code: verdict.PolicyCommandRule},
				{name: "executables folded", policy: commandPolicy(`executables = ["LS"]`, allowNmap), view: rc("ls; Ls; nmap h"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed, message: `"nmap"`},
			})
		})
	}
}

func TestExecutables(t *testing.T) {
	runEvalCases(t, "linux", []evalCase{
		{name: "@base expands to the default allowlist", policy: `name = "t"` + "\nexecutables = [\"@base\"]\n",
			view: rc("ls -la | grep x | sort | uniq -c; curl -s https://example.com/"), decision: verdict.Allow, code: verdict.OK},
		{name: "@base does not include python", policy: `name = "t"` + "\nexecutables = [\"@base\"]\n",
			view: rc("python3 -c 'print(1)'"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed},
		{name: "builtins are not executables", policy: `name = "t"` + "\nexecutables = [\"ls\"]\n",
			view: rc("cd /tmp; echo hi; test -d x && ls; printf '%s' a; true"), decision: verdict.Allow, code: verdict.OK},
		{name: "functions are not executables, their bodies are checked", policy: `name = "t"` + "\nexecutables = [\"ls\"]\n",
			view: rc("f() { ls; }; f"), decision: verdict.Allow, code: verdict.OK},
		{name: "function body outside the list", policy: `name = "t"` + "\nexecutables = [\"ls\"]\n",
			view: rc("f() { python3 x; }; f"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed, message: `"python3"`},
		{name: "wrapper must be listed", policy: `name = "t"` + "\nexecutables = [\"ls\"]\n",
			view: rc("timeout 5 ls"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed, message: `"timeout"`},
		{name: "derived program must be listed", policy: `name = "t"` + "\nexecutables = [\"timeout\"]\n",
			view: rc("timeout 5 nmap h"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed, message: `"nmap"`},
		{name: "dynamic program", policy: `name = "t"` + "\nexecutables = [\"@base\"]\n",
			view: rc("$X -la"), decision: verdict.Deny, code: verdict.PolicyDynamicProgram, message: "program cannot be determined statically"},
		{name: "eval is dynamic even when listed", policy: `name = "t"` + "\nexecutables = [\"eval\"]\n",
			view: rc(`eval "$X"`), decision: verdict.Deny, code: verdict.PolicyDynamicProgram},
		{name: "empty list allows only builtins", policy: `name = "t"` + "\nexecutables = []\n",
			view: rc("echo hi"), decision: verdict.Allow, code: verdict.OK},
		{name: "unset is off", policy: `name = "t"`, view: rc("python3 x; $X"), decision: verdict.Allow, code: verdict.OK},
	})
}

func TestPathRules(t *testing.T) {
	keys := `path_rules = [{ id = "keys", glob = "*.{pem,key}", actions = ["read_file", "redirect_read"], decision = "require_approval" }]`
	runEvalCases(t, "linux", []evalCase{
		{name: "relative glob matches at any depth", policy: "name = \"t\"\n" + keys, view: rf("certs/deep/server.key"),
			decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval, rule: "keys", gates: []string{DefaultGateID}},
		{name: "relative glob matches a top-level file", policy: "name = \"t\"\n" + keys, view: rf("server.pem"),
			decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval},
		{name: "glob braces are literal alternatives", policy: "name = \"t\"\n" + keys, view: rf("server.pe"),
			decision: verdict.Allow, code: verdict.OK},
		{name: "redirect_read is in actions", policy: "name = \"t\"\n" + keys, view: rc("cat < a.key"),
			decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval},
		{name: "redirect_write is not in actions", policy: "name = \"t\"\n" + keys, view: rc("echo x > a.key"),
			decision: verdict.Allow, code: verdict.OK},
		{name: "append is redirect_write", policy: "name = \"t\"\npath_rules = [{ id = \"w\", glob = \"*.log\", actions = [\"redirect_write\"], decision = \"deny\" }]",
			view: rc("echo x >> out.log"), decision: verdict.Deny, code: verdict.PolicyPathRule, rule: "w"},
		{name: "read_file is not redirect_write", policy: "name = \"t\"\npath_rules = [{ id = \"w\", glob = \"*.log\", actions = [\"redirect_write\"], decision = \"deny\" }]",
			view: rf("out.log"), decision: verdict.Allow, code: verdict.OK},
		{name: "command arguments are not paths", policy: "name = \"t\"\npath_rules = [{ id = \"s\", prefix = \"/etc/shadow\", decision = \"deny\" }]",
			view: rc("cat /etc/shadow"), decision: verdict.Allow, code: verdict.OK},
		{name: "prefix matches the path itself", policy: "name = \"t\"\npath_rules = [{ id = \"s\", prefix = \"/etc/shadow\", decision = \"deny\", reason = \"password hashes\" }]",
			view: rf("/etc/shadow"), decision: verdict.Deny, code: verdict.PolicyPathRule, rule: "s", message: "rule s: password hashes"},
		{name: "prefix matches below it", policy: "name = \"t\"\npath_rules = [{ id = \"e\", prefix = \"/etc\", decision = \"deny\" }]",
			view: rf("/etc/ssl/openssl.cnf"), decision: verdict.Deny, code: verdict.PolicyPathRule},
		{name: "prefix compares whole components", policy: "name = \"t\"\npath_rules = [{ id = \"s\", prefix = \"/etc/shadow\", decision = \"deny\" }]",
			view: rf("/etc/shadow-"), decision: verdict.Allow, code: verdict.OK},
		{name: "prefix trailing slash is cleaned", policy: "name = \"t\"\npath_rules = [{ id = \"e\", prefix = \"/et/\", decision = \"deny\" }]",
			view: rf("/etc/hostname"), decision: verdict.Allow, code: verdict.OK},
		{name: "root prefix matches everything", policy: "name = \"t\"\npath_rules = [{ id = \"r\", prefix = \"/\", decision = \"deny\" }]",
			view: rf("notes.txt"), decision: verdict.Deny, code: verdict.PolicyPathRule},
		{name: "absolute double-star glob", policy: "name = \"t\"\npath_rules = [{ id = \"c\", glob = \"/etc/**/*.conf\", decision = \"deny\" }]",
			view: rf("/etc/a/b/c/x.conf"), decision: verdict.Deny, code: verdict.PolicyPathRule},
		{name: "double star matches zero components", policy: "name = \"t\"\npath_rules = [{ id = \"c\", glob = \"/etc/**/*.conf\", decision = \"deny\" }]",
			view: rf("/etc/x.conf"), decision: verdict.Deny, code: verdict.PolicyPathRule},
		{name: "double star respects component boundaries", policy: "name = \"t\"\npath_rules = [{ id = \"c\", glob = \"/etc/**/*.conf\", decision = \"deny\" }]",
			view: rf("/etcx/x.conf"), decision: verdict.Allow, code: verdict.OK},
		{name: "star does not cross a slash", policy: "name = \"t\"\npath_rules = [{ id = \"c\", glob = \"/etc/*.conf\", decision = \"deny\" }]",
			view: rf("/etc/a/x.conf"), decision: verdict.Allow, code: verdict.OK},
		{name: "default path deny", policy: "name = \"t\"\ndefault_path_decision = \"deny\"\npath_rules = [{ prefix = \"/srv/nothing\", decision = \"allow\" }]",
			view: rf("notes.txt"), decision: verdict.Deny, code: verdict.PolicyDefaultDeny, rule: "default_path_decision", message: "no path rule allows read_file"},
		{name: "dynamic redirection target has no path", policy: "name = \"t\"\ndefault_path_decision = \"deny\"\npath_rules = [{ prefix = \"/\", decision = \"allow\" }]",
			view: rc(`echo x > "$OUT"`), decision: verdict.Deny, code: verdict.PolicyDefaultDeny},
		{name: "fd duplications and /dev/null are not paths", policy: "name = \"t\"\ndefault_path_decision = \"deny\"",
			view: rc(`ls 2>/dev/null; echo x >&2`), decision: verdict.Allow, code: verdict.OK},
	})
}

// TestPathLexicalOrResolved: a rule matches the lexical or the resolved
// path, so a symlink neither hides a denied target nor a denied name.
func TestPathLexicalOrResolved(t *testing.T) {
	e := newEnv(t, "linux")
	target := e.write(t, "real/secret.txt", "x")
	if err := os.Symlink(target, filepath.Join(e.ws, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, rule, path string
		want             verdict.Decision
	}{
		{"resolved target matches", `{ id = "r", glob = "**/real/*", decision = "deny" }`, "innocent.txt", verdict.Deny},
		{"lexical name matches", `{ id = "r", glob = "innocent.*", decision = "deny" }`, "innocent.txt", verdict.Deny},
		{"prefix on the resolved path", `{ id = "r", prefix = "` + filepath.Join(e.ws, "real") + `", decision = "deny" }`, "innocent.txt", verdict.Deny},
		{"neither", `{ id = "r", glob = "*.key", decision = "deny" }`, "innocent.txt", verdict.Allow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParse(t, "name = \"t\"\npath_rules = ["+tc.rule+"]")
			if got := p.Evaluate(e.rf(tc.path)); got.Decision != tc.want {
				t.Errorf("got %s %s (%s); want %s", got.Decision, got.Code, got.Message, tc.want)
			}
			if got := p.Evaluate(e.rc("cat < " + tc.path)); got.Decision != tc.want {
				t.Errorf("redirect: got %s %s; want %s", got.Decision, got.Code, tc.want)
			}
		})
	}
}

func TestDomainRules(t *testing.T) {
	vendor := "name = \"t\"\ndefault_domain_decision = \"deny\"\ndomain_rules = [{ id = \"vendor\", host = [\"example.com\", \"nginx.org\"], decision = \"allow\" }]\n"
	internal := "name = \"t\"\ndomain_rules = [{ id = \"no-internal\", cidr = [\"10.0.0.0/8\", \"192.168.0.0/16\"], decision = \"deny\" }]\n"
	runEvalCases(t, "linux", []evalCase{
		{name: "host itself", policy: vendor, view: hg("https://example.com/x"), decision: verdict.Allow, code: verdict.OK},
		{name: "subdomain at a label boundary", policy: vendor, view: hg("https://api.example.com/x"), decision: verdict.Allow, code: verdict.OK},
		{name: "host is normalised", policy: vendor, view: hg("https://EXAMPLE.com./x"), decision: verdict.Allow, code: verdict.OK},
		{name: "suffix without a label boundary", policy: vendor, view: hg("https://evil-example.com/"), decision: verdict.Deny, code: verdict.PolicyDefaultDeny,
			rule: "default_domain_decision", message: "no domain rule allows host evil-example.com"},
		{name: "rule host as a prefix of another domain", policy: vendor, view: hg("https://example.com.evil.io/"), decision: verdict.Deny, code: verdict.PolicyDefaultDeny},
		{name: "IP literal is not a subdomain", policy: "name = \"t\"\ndomain_rules = [{ id = \"ip\", host = \"0.0.1\", decision = \"deny\" }]",
			view: hg("https://10.0.0.1/"), decision: verdict.Allow, code: verdict.OK},
		{name: "IP literal host rule matches itself", policy: "name = \"t\"\ndomain_rules = [{ id = \"ip\", host = \"10.0.0.1\", decision = \"deny\" }]",
			view: hg("https://10.0.0.1/"), decision: verdict.Deny, code: verdict.PolicyDomainRule},
		{name: "cidr on a resolved address", policy: internal, view: hg("https://internal.example.com/"), decision: verdict.Deny, code: verdict.PolicyDomainRule, rule: "no-internal"},
		{name: "cidr on a public address", policy: internal, view: hg("https://example.com/"), decision: verdict.Allow, code: verdict.OK},
		{name: "cidr on an IP literal", policy: internal, view: hg("https://192.168.3.4/"), decision: verdict.Deny, code: verdict.PolicyDomainRule},
		{name: "cidr on an IPv4-mapped literal", policy: internal, view: hg("https://[::ffff:10.1.2.3]/"), decision: verdict.Deny, code: verdict.PolicyDomainRule},
		{name: "cidr on a NAT64 literal", policy: internal, view: hg("https://[64:ff9b::a01:203]/"), decision: verdict.Deny, code: verdict.PolicyDomainRule},
		{name: "cidr deny matches when resolution failed", policy: internal, view: hg("https://fail.example.com/"), decision: verdict.Deny, code: verdict.PolicyDomainRule},
		{name: "cidr allow cannot lift a default on failed resolution",
			policy: "name = \"t\"\ndefault_domain_decision = \"deny\"\ndomain_rules = [{ cidr = \"0.0.0.0/0\", decision = \"allow\" }]",
			view:   hg("https://fail.example.com/"), decision: verdict.Deny, code: verdict.PolicyDefaultDeny},
		{name: "cidr approval matches when resolution failed",
			policy: "name = \"t\"\ndomain_rules = [{ id = \"ask\", cidr = \"10.0.0.0/8\", decision = \"require_approval\" }]",
			view:   hg("https://fail.example.com/"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval},
		{name: "a URL the tripwire refused was never resolved: no addresses, no failure", policy: internal,
			view: hg("http://internal.example.com/"), decision: verdict.Allow, code: verdict.OK},
		{name: "deny cidr beats allow host",
			policy: "name = \"t\"\ndomain_rules = [{ host = \"example.com\", decision = \"allow\" }, { id = \"no-internal\", cidr = \"10.0.0.0/8\", decision = \"deny\" }]",
			view:   hg("https://internal.example.com/"), decision: verdict.Deny, code: verdict.PolicyDomainRule, rule: "no-internal"},
		{name: "domain rules ignore commands", policy: internal, view: rc("curl https://10.0.0.1/"), decision: verdict.Allow, code: verdict.OK},
	})
}

func TestDefaultsPerKind(t *testing.T) {
	allDeny := "name = \"t\"\ndefault_command_decision = \"deny\"\n"
	runEvalCases(t, "linux", []evalCase{
		{name: "command default does not apply to paths", policy: allDeny, view: rf("notes.txt"), decision: verdict.Allow, code: verdict.OK},
		{name: "command default does not apply to hosts", policy: allDeny, view: hg("https://example.com/"), decision: verdict.Allow, code: verdict.OK},
		{name: "command default applies to commands", policy: allDeny, view: rc("ls"), decision: verdict.Deny, code: verdict.PolicyDefaultDeny},
		{name: "path default applies to redirections of a command", policy: "name = \"t\"\ndefault_path_decision = \"require_approval\"\n",
			view: rc("sort < notes.txt"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval, rule: "default_path_decision", gates: []string{DefaultGateID}},
		{name: "domain default approval", policy: "name = \"t\"\ndefault_domain_decision = \"require_approval\"\n",
			view: hg("https://example.com/"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval, rule: "default_domain_decision"},
		{name: "everything allowed by default", policy: "name = \"t\"\n", view: rc("anything --at all"), decision: verdict.Allow, code: verdict.OK},
	})
}

// TestApprovalGatesInVerdict: the verdict names the gates of every
// require_approval contribution, in file order, the implicit gate last.
func TestApprovalGatesInVerdict(t *testing.T) {
	src := `name = "t"
command_rules = [
  { id = "b", program = "nmap", decision = "require_approval", gate = "second" },
  { id = "a", program = "masscan", decision = "require_approval", gate = "first" },
  { id = "c", program = "zmap", decision = "require_approval" },
]
approval_gates = [{ id = "first" }, { id = "second" }]
`
	runEvalCases(t, "linux", []evalCase{
		{name: "one gate", policy: src, view: rc("nmap h"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "b", gates: []string{"second"}, message: "rule b requires approval (gates: second)"},
		{name: "gates in file order", policy: src, view: rc("nmap h; masscan h"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "b", gates: []string{"first", "second"}},
		{name: "implicit gate last", policy: src, view: rc("zmap h; masscan h"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "a", gates: []string{"first", DefaultGateID}},
		{name: "naming the implicit gate", policy: commandPolicy("", `{ id = "n", program = "nmap", decision = "require_approval", gate = "policy-default" }`),
			view: rc("nmap h"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval, rule: "n", gates: []string{DefaultGateID}},
	})
}
