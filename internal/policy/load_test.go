package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
)

// loadErr parses src and returns the load error text, failing the test if
// the policy loads.
func loadErr(t *testing.T, src string, opt Options) string {
	t.Helper()
	if opt.GOOS == "" {
		opt.GOOS = "linux"
	}
	p, err := Parse("p.toml", []byte(src), opt)
	if err == nil {
		t.Fatalf("policy loaded (%s); want a load error\n--- source:\n%s", p.Name(), src)
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("error %T %v; want *LoadError", err, err)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if !strings.HasPrefix(line, "p.toml:") {
			t.Errorf("error line %q does not start with the file name", line)
		}
	}
	return err.Error()
}

// TestLoadErrors covers every load-error class of
// docs/design/checks.md#policy-loading and
// docs/design/checks.md#approval-gates, with the exact "<file>:<line>: <key
// path>: <problem>" output.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		// docs/design/checks.md#acceptance-cases case 42.
		{"42 unknown key on line 3", "name = \"x\"\nversion = \"1\"\ngoal = \"x\"\n",
			"p.toml:3: goal: unknown key"},
		{"42 bad regex in a gate", "name = \"x\"\napproval_gates = [\n  { id = \"g\", when = \"command_matches('[')\" },\n]\n",
			"p.toml:3: approval_gates[0].when: column 17: command_matches: bad regex: error parsing regexp: missing closing ]: `[`"},
		{"42 unknown function in a gate", "name = \"x\"\n\n[[approval_gates]]\nid = \"g\"\nwhen = \"foo('x')\"\n",
			"p.toml:5: approval_gates[0].when: column 1: unknown function \"foo\" (known: command_contains, command_matches, program_is, path_matches, url_host_in_cidr)"},

		// Syntax.
		{"syntax error", "name = \"x\"\nmax_steps = = 3\n", "p.toml:2: syntax: unexpected character U+003D '=' at start of value (column 13)"},
		{"duplicate key", "name = \"x\"\nname = \"y\"\n", "p.toml:2: name: key name is already defined"},
		{"unterminated string", "name = 'x\n", "p.toml:1: syntax: literal strings cannot have new lines (column 10)"},
		{"mixed array styles", "name = \"x\"\ncommand_rules = []\n[[command_rules]]\nprogram = \"ls\"\n",
			"p.toml:3: command_rules: key command_rules already exists as a value, but should be an array table"},

		// Unknown keys, at every depth, with full key paths.
		{"unknown key in an array-of-tables block", "name = \"x\"\n[[command_rules]]\nprogram = \"ls\"\ndecision = \"allow\"\n[[command_rules]]\nprogram = \"ls\"\nargz = \"x\"\ndecision = \"deny\"\n",
			"p.toml:7: command_rules[1].argz: unknown key"},
		{"unknown key in a multi-line inline array", "name = \"x\"\npath_rules = [\n  { glob = \"*.pem\", decision = \"deny\" },\n  { glob = \"*.key\",\n    decison = \"deny\", decision = \"deny\" },\n]\n",
			"p.toml:5: path_rules[1].decison: unknown key"},
		{"unknown keys everywhere at once", "name = \"x\"\nnmae = 1\napproval_gates = [{ id = \"g\", timeout = 3 }]\n[extra]\nz = 1\n",
			"p.toml:2: nmae: unknown key\np.toml:3: approval_gates[0].timeout: unknown key\np.toml:4: extra: unknown key"},
		{"unknown sub-table of a rule", "name = \"x\"\n[[command_rules]]\nprogram = \"ls\"\ndecision = \"allow\"\n[command_rules.extra]\nq = 1\n",
			"p.toml:5: command_rules[0].extra: unknown key"},
		{"key differing only in case", "name = \"x\"\nMax_Steps = 3\ncommand_rules = [{ program = \"ls\", Decision = \"allow\" }]\n",
			"p.toml:2: Max_Steps: unknown key (keys are case-sensitive: did you mean \"max_steps\"?)\n" +
				"p.toml:3: command_rules[0].Decision: unknown key (keys are case-sensitive: did you mean \"decision\"?)"},

		// Wrong types.
		{"wrong scalar types", "name = 1\nmax_steps = \"3\"\napproval_timeout_seconds = 1.5\nversion = true\ndescription = 1979-05-27\n",
			"p.toml:1: name: expected string, got integer\np.toml:2: max_steps: expected integer, got string\n" +
				"p.toml:3: approval_timeout_seconds: expected integer, got float\np.toml:4: version: expected string, got boolean\n" +
				"p.toml:5: description: expected string, got datetime"},
		{"wrong list element types", "name = \"x\"\nallowed_actions = [\"complete\", 3]\ncommand_rules = [{ program = [\"ls\", { a = 1 }], decision = \"allow\" }]\n",
			"p.toml:2: allowed_actions[1]: expected string, got integer\np.toml:3: command_rules[0].program[1]: expected string, got table"},
		{"rule list as a string", "name = \"x\"\ncommand_rules = \"ls\"\n",
			"p.toml:2: command_rules: expected an array of tables, got string"},
		{"rule list as a table", "name = \"x\"\n[command_rules]\nprogram = \"ls\"\ndecision = \"allow\"\n",
			"p.toml:2: command_rules: expected an array of tables ([[command_rules]] or command_rules = [{ … }]), got a table"},
		{"rule list as an inline table", "name = \"x\"\ncommand_rules = { program = \"ls\", decision = \"allow\" }\n",
			"p.toml:2: command_rules: expected an array of tables, got an inline table (wrap it in [ ])"},
		{"rule list as a dotted key", "name = \"x\"\ncommand_rules.program = \"ls\"\n",
			"p.toml:2: command_rules: expected an array of tables ([[command_rules]] or command_rules = [{ … }]), got a table\n" +
				"p.toml:2: command_rules[0].decision: required"},
		{"rule list element not a table", "name = \"x\"\ncontrols = [\n  { id = \"a\", title = \"b\", evidence = \"c\" },\n  \"d\",\n]\n",
			"p.toml:4: controls[1]: expected a table ({ … }), got string"},

		// Required keys.
		{"empty file", "", "p.toml:1: name: required"},
		{"missing rule keys", "name = \"x\"\ncommand_rules = [{ id = \"a\" }]\npath_rules = [{ decision = \"deny\" }]\ndomain_rules = [{ decision = \"deny\" }]\n",
			"p.toml:2: command_rules[0].decision: required\np.toml:2: command_rules[0].program: required\n" +
				"p.toml:3: path_rules[0]: set exactly one of glob or prefix\np.toml:4: domain_rules[0]: set exactly one of host or cidr"},
		{"missing gate, observation and control keys", "name = \"x\"\napproval_gates = [{ when = \"action == 'read_file'\" }]\nobservation_rules = [{ id = \"o\" }]\ncontrols = [{ id = \"c\" }]\n",
			"p.toml:2: approval_gates[0].id: required\np.toml:3: observation_rules[0].label: required\np.toml:3: observation_rules[0].pattern: required\n" +
				"p.toml:3: observation_rules[0].action: required\np.toml:4: controls[0].title: required\np.toml:4: controls[0].evidence: required"},

		// Out-of-range values, at both sides of each boundary.
		{"max_steps 0", "name = \"x\"\nmax_steps = 0\n", "p.toml:2: max_steps: must be from 1 to 1000 (got 0)"},
		{"max_steps 1001", "name = \"x\"\nmax_steps = 1001\n", "p.toml:2: max_steps: must be from 1 to 1000 (got 1001)"},
		{"approval timeout 0", "name = \"x\"\napproval_timeout_seconds = 0\n", "p.toml:2: approval_timeout_seconds: must be from 1 to 86400 (got 0)"},
		{"gate timeout 86401", "name = \"x\"\napproval_gates = [{ id = \"g\", timeout_seconds = 86401 }]\n",
			"p.toml:2: approval_gates[0].timeout_seconds: must be from 1 to 86400 (got 86401)"},
		{"name too long", "name = \"" + strings.Repeat("é", 129) + "\"\n", "p.toml:1: name: is 129 characters (max 128)"},
		{"name empty", "name = \"  \"\n", "p.toml:1: name: must not be empty"},
		{"name with a newline", "name = \"a\\nb\"\n", "p.toml:1: name: must not contain control characters"},
		{"unknown decision", "name = \"x\"\ndefault_path_decision = \"ask\"\n",
			"p.toml:2: default_path_decision: unknown decision \"ask\" (allowed: allow, deny, require_approval)"},
		{"unknown on_timeout", "name = \"x\"\napproval_gates = [{ id = \"g\", on_timeout = \"approve\" }]\n",
			"p.toml:2: approval_gates[0].on_timeout: unknown value \"approve\" (allowed: deny, allow)"},

		// Actions.
		{"delete_file is not an action", "name = \"x\"\nallowed_actions = [\"run_command\", \"delete_file\", \"complete\"]\nforbidden_actions = [\"delete_file\"]\n",
			"p.toml:2: allowed_actions[1]: unknown action \"delete_file\" (allowed: run_command, read_file, http_get, complete, write_file)\n" +
				"p.toml:3: forbidden_actions[0]: unknown action \"delete_file\" (allowed: run_command, read_file, http_get, complete, write_file)"},
		{"allowed without complete", "name = \"x\"\nallowed_actions = [\"read_file\"]\n", "p.toml:2: allowed_actions: must contain \"complete\""},
		{"allowed empty", "name = \"x\"\nallowed_actions = []\n", "p.toml:2: allowed_actions: must not be empty (it must contain \"complete\")"},
		{"complete forbidden", "name = \"x\"\nforbidden_actions = [\"complete\"]\n",
			"p.toml:2: forbidden_actions[0]: \"complete\" cannot be forbidden: a session must be able to finish"},
		{"overlap", "name = \"x\"\nallowed_actions = [\"http_get\", \"complete\"]\nforbidden_actions = [\"read_file\", \"http_get\"]\n",
			"p.toml:3: forbidden_actions[1]: \"http_get\" is also in allowed_actions"},
		{"duplicate action", "name = \"x\"\nforbidden_actions = [\"http_get\", \"http_get\"]\n", "p.toml:2: forbidden_actions[1]: duplicate action \"http_get\""},

		// Regexes, globs, CIDRs, hosts.
		{"bad args regex", "name = \"x\"\ncommand_rules = [{ program = \"ls\", args = '(', decision = \"deny\" }]\n",
			"p.toml:2: command_rules[0].args: bad regex: error parsing regexp: missing closing ): `(`"},
		{"bad observation pattern", "name = \"x\"\nobservation_rules = [{ label = \"l\", pattern = 'a{2,1}', action = \"flag\" }]\n",
			"p.toml:2: observation_rules[0].pattern: bad regex: error parsing regexp: invalid repeat count: `{2,1}`"},
		{"bad program glob", "name = \"x\"\ncommand_rules = [{ program = [\"ls\", \"[\"], decision = \"deny\" }]\n",
			"p.toml:2: command_rules[0].program[1]: bad glob \"[\": syntax error in pattern"},
		{"program glob with a directory", "name = \"x\"\ncommand_rules = [{ program = \"/usr/bin/ls\", decision = \"deny\" }]\n",
			"p.toml:2: command_rules[0].program: glob \"/usr/bin/ls\" contains /: programs are matched by basename"},
		{"bad path globs", "name = \"x\"\npath_rules = [\n  { glob = [\"{a,b\", \"a**\", \"a//b\", 'a\\*', \"[]\", \"../x\"], decision = \"deny\" },\n]\n",
			"p.toml:3: path_rules[0].glob[0]: glob \"{a,b\": unterminated { alternatives\n" +
				"p.toml:3: path_rules[0].glob[1]: glob \"a**\": ** must be a whole path component\n" +
				"p.toml:3: path_rules[0].glob[2]: glob \"a//b\": empty path component\n" +
				"p.toml:3: path_rules[0].glob[3]: glob \"a\\\\*\": backslashes are not allowed (use / as the separator and [*] for a literal *)\n" +
				"p.toml:3: path_rules[0].glob[4]: glob \"[]\": unterminated [ character class\n" +
				"p.toml:3: path_rules[0].glob[5]: glob \"../x\": \"..\" components never match a resolved path"},
		{"relative prefix", "name = \"x\"\npath_rules = [{ prefix = [\"/ok\", \"etc\"], decision = \"deny\" }]\n",
			"p.toml:2: path_rules[0].prefix[1]: prefix \"etc\" is not an absolute path"},
		{"both glob and prefix", "name = \"x\"\npath_rules = [{ glob = \"*\", prefix = \"/\", decision = \"deny\" }]\n",
			"p.toml:2: path_rules[0]: set exactly one of glob or prefix"},
		{"unknown path action", "name = \"x\"\npath_rules = [{ glob = \"*\", actions = [\"write\"], decision = \"deny\" }]\n",
			"p.toml:2: path_rules[0].actions[0]: unknown path action \"write\" (allowed: read_file, redirect_read, redirect_write, write_file)"},
		{"bad CIDRs", "name = \"x\"\ndomain_rules = [{ cidr = [\"10.0.0.0/33\", \"10.0.0.1/8\", \"10.0.0.0\"], decision = \"deny\" }]\n",
			"p.toml:2: domain_rules[0].cidr[0]: \"10.0.0.0/33\" is not a CIDR: netip.ParsePrefix(\"10.0.0.0/33\"): prefix length out of range\n" +
				"p.toml:2: domain_rules[0].cidr[1]: \"10.0.0.1/8\" has host bits set (did you mean 10.0.0.0/8?)\n" +
				"p.toml:2: domain_rules[0].cidr[2]: \"10.0.0.0\" is not a CIDR: netip.ParsePrefix(\"10.0.0.0\"): no '/'"},
		{"bad hosts", "name = \"x\"\ndomain_rules = [{ host = [\"https://example.com\", \"*.example.com\"], decision = \"deny\" }]\n",
			"p.toml:2: domain_rules[0].host[0]: host \"https://example.com\" is not a host name (no scheme, port, path or wildcard: subdomains always match)\n" +
				"p.toml:2: domain_rules[0].host[1]: host \"*.example.com\" is not a host name (no scheme, port, path or wildcard: subdomains always match)"},
		{"unknown executables list", "name = \"x\"\nexecutables = [\"@base\", \"@all\"]\n",
			"p.toml:2: executables[1]: unknown list \"@all\" (known: @base)"},
		{"empty program list", "name = \"x\"\ncommand_rules = [{ program = [], decision = \"deny\" }]\n",
			"p.toml:2: command_rules[0].program: must not be empty"},

		// Gates and references.
		{"unknown gate reference", "name = \"x\"\ncommand_rules = [{ program = \"nmap\", decision = \"require_approval\", gate = \"scan\" }]\n",
			"p.toml:2: command_rules[0].gate: no approval gate has id \"scan\""},
		{"gate on a deny rule", "name = \"x\"\napproval_gates = [{ id = \"g\" }]\ncommand_rules = [{ program = \"nmap\", decision = \"deny\", gate = \"g\" }]\n",
			"p.toml:3: command_rules[0].gate: a gate is allowed only with decision = \"require_approval\""},
		{"bad and duplicate gate ids", "name = \"x\"\napproval_gates = [{ id = \"Scan\" }, { id = \"g\" }, { id = \"g\" }, { id = \"policy-default\" }]\n",
			"p.toml:2: approval_gates[0].id: \"Scan\" does not match ^[a-z0-9][a-z0-9_-]{0,63}$\n" +
				"p.toml:2: approval_gates[2].id: duplicate gate id \"g\"\n" +
				"p.toml:2: approval_gates[3].id: \"policy-default\" is reserved for the implicit gate of rules that name none"},
		{"duplicate rule ids", "name = \"x\"\ncommand_rules = [{ id = \"a\", program = \"ls\", decision = \"deny\" }, { id = \"a\", program = \"cat\", decision = \"deny\" }]\n",
			"p.toml:2: command_rules[1].id: duplicate rule id \"a\" in command_rules"},
		{"bad label and action", "name = \"x\"\nobservation_rules = [{ label = \"Pass-Word\", pattern = 'p', action = \"drop\" }]\n",
			"p.toml:2: observation_rules[0].label: \"Pass-Word\" does not match ^[a-z0-9_]{1,64}$\n" +
				"p.toml:2: observation_rules[0].action: unknown action \"drop\" (allowed: redact, flag, abort)"},

		// Gate expressions (docs/design/checks.md#approval-gates): each error names
		// the line.
		{"gate expression errors", "name = \"x\"\napproval_gates = [\n" +
			"  { id = \"a\", when = \"\" },\n" +
			"  { id = \"b\", when = \"command_contains('x', 'y')\" },\n" +
			"  { id = \"c\", when = \"action == 'delete_file'\" },\n" +
			"  { id = \"d\", when = \"program_is('[')\" },\n" +
			"  { id = \"e\", when = \"url_host_in_cidr('10.0.0.0')\" },\n" +
			"  { id = \"f\", when = \"action == 'http_get' )\" },\n" +
			"  { id = \"g\", when = \"path_matches('a**')\" },\n" +
			"]\n",
			"p.toml:3: approval_gates[0].when: empty expression\n" +
				"p.toml:4: approval_gates[1].when: column 1: command_contains takes exactly 1 argument, got 2\n" +
				"p.toml:5: approval_gates[2].when: column 11: unknown action 'delete_file' (known: run_command, read_file, http_get, complete, write_file)\n" +
				"p.toml:6: approval_gates[3].when: column 12: program_is: bad glob \"[\": syntax error in pattern\n" +
				"p.toml:7: approval_gates[4].when: column 18: url_host_in_cidr: \"10.0.0.0\" is not a CIDR: netip.ParsePrefix(\"10.0.0.0\"): no '/'\n" +
				"p.toml:8: approval_gates[5].when: column 22: unexpected \")\" after the end of the expression\n" +
				"p.toml:9: approval_gates[6].when: column 14: path_matches: glob \"a**\": ** must be a whole path component"},

		// Several problems are all reported, in line order.
		{"all problems at once", "name = \"x\"\nmax_steps = 0\ncommand_rules = [\n  { program = \"ls\", decision = \"maybe\" },\n]\nbogus = 1\n",
			"p.toml:2: max_steps: must be from 1 to 1000 (got 0)\np.toml:4: command_rules[0].decision: unknown decision \"maybe\" (allowed: allow, deny, require_approval)\np.toml:6: bogus: unknown key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := loadErr(t, tc.src, Options{}); got != tc.want {
				t.Errorf("load error:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestLoadBoundaries: the accepted side of every limit loads.
func TestLoadBoundaries(t *testing.T) {
	src := "name = \"" + strings.Repeat("é", MaxNameRunes) + "\"\nmax_steps = 1000\napproval_timeout_seconds = 86400\n" +
		"approval_gates = [{ id = \"" + strings.Repeat("a", 64) + "\", timeout_seconds = 1, on_timeout = \"allow\" }]\n" +
		"observation_rules = [{ label = \"" + strings.Repeat("a", 64) + "\", pattern = 'x', action = \"abort\" }]\n"
	p := mustParse(t, src)
	if n, ok := p.MaxSteps(); !ok || n != 1000 {
		t.Errorf("MaxSteps = %d, %v; want 1000, true", n, ok)
	}
	if p.ApprovalTimeoutSeconds() != 86400 {
		t.Errorf("ApprovalTimeoutSeconds = %d; want 86400", p.ApprovalTimeoutSeconds())
	}
	if g := p.Gates()[0]; g.TimeoutSeconds != 1 || g.OnTimeout != OnTimeoutAllow {
		t.Errorf("gate = %+v; want timeout 1, on_timeout allow", g)
	}
	over := "name = \"x\"\napproval_gates = [{ id = \"" + strings.Repeat("a", 65) + "\" }]\nobservation_rules = [{ label = \"" + strings.Repeat("a", 65) + "\", pattern = 'x', action = \"flag\" }]\n"
	want := "p.toml:2: approval_gates[0].id: \"" + strings.Repeat("a", 65) + "\" does not match ^[a-z0-9][a-z0-9_-]{0,63}$\n" +
		"p.toml:3: observation_rules[0].label: \"" + strings.Repeat("a", 65) + "\" does not match ^[a-z0-9_]{1,64}$"
	if got := loadErr(t, over, Options{}); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestDefaultsWhenUnset(t *testing.T) {
	p := mustParse(t, `name = "minimal"`)
	if _, ok := p.MaxSteps(); ok {
		t.Error("max_steps set; want unset")
	}
	if got := p.AllowedActions(); !slices.Equal(got, intent.Actions) {
		t.Errorf("allowed actions = %v; want all of %v", got, intent.Actions)
	}
	if _, on := p.Executables(); on {
		t.Error("executables on; want off")
	}
	if p.ApprovalTimeoutSeconds() != DefaultTimeoutSeconds {
		t.Errorf("approval timeout = %d; want %d", p.ApprovalTimeoutSeconds(), DefaultTimeoutSeconds)
	}
	g, ok := p.Gate(DefaultGateID)
	if !ok || g.TimeoutSeconds != DefaultTimeoutSeconds || g.OnTimeout != OnTimeoutDeny {
		t.Errorf("implicit gate = %+v, %v; want 300 s, deny", g, ok)
	}
	for k := itemKind(0); k < numKinds; k++ {
		if p.defaults[k] != "allow" {
			t.Errorf("%s = %q; want allow", k.defaultKey(), p.defaults[k])
		}
	}
}

// TestExampleLoads loads the complete example of
// docs/design/checks.md#policy-example and checks what it compiled.
func TestExampleLoads(t *testing.T) {
	p, err := Load("testdata/example.toml", Options{GOOS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "web-audit" || p.Version() != "2.1.0" || p.File() != "testdata/example.toml" {
		t.Errorf("name %q version %q file %q", p.Name(), p.Version(), p.File())
	}
	if n, _ := p.MaxSteps(); n != 30 {
		t.Errorf("max_steps = %d; want 30", n)
	}
	exe, _ := p.Executables()
	if len(exe) != 36+3 {
		t.Errorf("executables = %d entries; want the 36 of @base plus 3", len(exe))
	}
	if got := len(p.ObservationRules()); got != 3 {
		t.Errorf("observation rules = %d; want 3", got)
	}
	if c := p.Controls(); len(c) != 1 || c[0] != (Control{"CC6.1", "Logical access", "check_verdict events"}) {
		t.Errorf("controls = %+v", c)
	}
	g, _ := p.Gate("big-grep")
	if g.when == nil || g.when.String() != `action == 'run_command' && (command_contains('-r /') || command_matches('grep\\s+-R'))` {
		t.Errorf("big-grep compiled to %v", g.when)
	}
}

func TestHashAndPin(t *testing.T) {
	src := []byte("name = \"pinned\"\n")
	const otherPin = "8c0fb6ec6fb7b2a5c50ba4ad8d34c8aa93e0b5b85bb25d8bbd0ab2bbff8b2c8c"
	p := mustParse(t, string(src))
	if p.SHA256() != Hash(src) || len(p.SHA256()) != 64 || strings.ToLower(p.SHA256()) != p.SHA256() {
		t.Fatalf("hash %q; want lowercase hex SHA-256 %q", p.SHA256(), Hash(src))
	}
	if _, err := Parse("p.toml", src, Options{SHA256: p.SHA256()}); err != nil {
		t.Errorf("matching pin: %v", err)
	}
	if _, err := Parse("p.toml", src, Options{SHA256: strings.ToUpper(p.SHA256())}); err != nil {
		t.Errorf("matching upper-case pin: %v", err)
	}
	if got := loadErr(t, string(src), Options{SHA256: otherPin}); got != "p.toml: --policy-sha256: policy hash "+p.SHA256()+" does not match the pinned "+otherPin+": the file changed, or the pin is for another policy" {
		t.Errorf("mismatch: %s", got)
	}
	if got := loadErr(t, string(src), Options{SHA256: "abc"}); got != `p.toml: --policy-sha256: "abc" is not a hex SHA-256 (64 hex digits)` {
		t.Errorf("malformed pin: %s", got)
	}
	// One byte more (a trailing newline) is another policy.
	if _, err := Parse("p.toml", append(src, '\n'), Options{SHA256: p.SHA256()}); err == nil {
		t.Error("a changed file loaded under the old pin")
	}
}

func TestFileTooLarge(t *testing.T) {
	src := "name = \"x\"\n#" + strings.Repeat("x", MaxFileBytes) + "\n"
	if got := loadErr(t, src, Options{}); got != "p.toml: file is larger than 1048576 bytes" {
		t.Errorf("got %q", got)
	}
	at := "name = \"x\"\n#"
	at += strings.Repeat("x", MaxFileBytes-len(at))
	if _, err := Parse("p.toml", []byte(at), Options{}); err != nil {
		t.Errorf("a file of exactly MaxFileBytes: %v", err)
	}
}

// TestLoadByName resolves --policy values: paths, pack names and data-dir
// names.
func TestLoadByName(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local := write("team.toml", "name = \"Team policy\"\n")
	write("soc2-audit.toml", "name = \"Shadow\"\n")
	if err := os.Mkdir(filepath.Join(dir, "dir.toml"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		ref, title, file string
		err              error
	}{
		{ref: "iso42001", title: "ISO/IEC 42001 AI Management System", file: "iso42001.toml"},
		{ref: "pci-dss-audit.toml", title: "PCI DSS v4.0.1 Audit", file: "pci-dss-audit.toml"},
		{ref: "team", title: "Team policy", file: local},
		{ref: "team.toml", title: "Team policy", file: local},
		{ref: local, title: "Team policy", file: local},
		{ref: "soc2-audit", err: ErrAmbiguous},
		{ref: "nope", err: ErrNotFound},
		{ref: "../policies/team", err: os.ErrNotExist},
		{ref: filepath.Join(dir, "dir.toml")},
	}
	for _, tc := range cases {
		t.Run(tc.ref, func(t *testing.T) {
			p, err := Load(tc.ref, Options{DataDir: data})
			switch {
			case tc.title == "" && err == nil:
				t.Fatalf("loaded %q; want an error", p.Name())
			case tc.title == "":
				if tc.err != nil && !errors.Is(err, tc.err) {
					t.Errorf("error %v; want %v", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case p.Name() != tc.title || p.File() != tc.file:
				t.Errorf("loaded %q from %q; want %q from %q", p.Name(), p.File(), tc.title, tc.file)
			}
		})
	}
	// Without a data dir, pack names still resolve.
	if _, err := Load("owasp-top10", Options{}); err != nil {
		t.Errorf("pack without data dir: %v", err)
	}
	// A file in the working directory that shares a pack's name (one an
	// agent could have written into its workspace) never stands in for the
	// pack.
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, name := range []string{"soc2-audit", "mine.toml"} {
		if err := os.WriteFile(filepath.Join(cwd, name), []byte("name = \"Planted\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := Load("soc2-audit", Options{}); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("cwd file named like a pack: %v, %v; want ErrAmbiguous", p, err)
	}
	if p, err := Load("./soc2-audit", Options{}); err != nil || p.Name() != "Planted" {
		t.Errorf("explicit ./ path: %v, %v", p, err)
	}
	if p, err := Load("mine.toml", Options{}); err != nil || p.Name() != "Planted" {
		t.Errorf("bare file name in the working directory: %v, %v", p, err)
	}
}

func TestList(t *testing.T) {
	data := t.TempDir()
	entries, err := List(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("empty data dir: %d entries; want the 4 packs", len(entries))
	}
	for _, e := range entries {
		b, _ := PackBytes(e.Name)
		if e.Source != SourceEmbedded || e.SHA256 != Hash(b) || e.Err != nil || e.Title == "" {
			t.Errorf("pack entry %+v", e)
		}
	}
	dir := filepath.Join(data, "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"team.toml":     "name = \"Team\"\n",
		"broken.toml":   "name = \"Broken\"\ngoal = 1\n",
		"iso42001.toml": "name = \"Copy\"\n",
		"notes.txt":     "not a policy",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err = List(data)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != "iso42001 owasp-top10 pci-dss-audit soc2-audit broken iso42001 team" {
		t.Fatalf("names %q", got)
	}
	broken, copyOfPack, team := entries[4], entries[5], entries[6]
	if broken.Err == nil || !strings.Contains(broken.Err.Error(), "broken.toml:2: goal: unknown key") || broken.SHA256 != Hash([]byte("name = \"Broken\"\ngoal = 1\n")) {
		t.Errorf("broken entry %+v", broken)
	}
	if !errors.Is(copyOfPack.Err, ErrAmbiguous) {
		t.Errorf("shadowing entry error %v; want ErrAmbiguous", copyOfPack.Err)
	}
	if team.Err != nil || team.Title != "Team" || team.Source != filepath.Join(dir, "team.toml") {
		t.Errorf("team entry %+v", team)
	}
}

// TestLoadLookupOrder: a bare name also finds ./<name>.toml, a path without
// an extension also finds <path>.toml, and a name that names nothing lists
// every place looked at, in order, with the fix.
func TestLoadLookupOrder(t *testing.T) {
	data := t.TempDir()
	cwd, _ := filepath.EvalSymlinks(t.TempDir())
	t.Chdir(cwd)
	for name, body := range map[string]string{"team.toml": "name = \"Team\"\n", "sub/deep.toml": "name = \"Deep\"\n", "owasp-top10.toml": "name = \"Planted\"\n"} {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for ref, title := range map[string]string{
		"team": "Team", "team.toml": "Team", "./team": "Team", "sub/deep": "Deep",
		filepath.Join(cwd, "team"): "Team", filepath.Join(cwd, "sub", "deep.toml"): "Deep", "./owasp-top10.toml": "Planted",
	} {
		if p, err := Load(ref, Options{DataDir: data}); err != nil || p.Name() != title {
			t.Errorf("Load(%q) = %v, %v; want %q", ref, p, err, title)
		}
	}
	// ./owasp-top10.toml shares the pack's name: the bare name is refused.
	if _, err := Load("owasp-top10", Options{DataDir: data}); !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "./owasp-top10.toml") {
		t.Errorf("owasp-top10: %v; want ErrAmbiguous naming ./owasp-top10.toml", err)
	}
	_, err := Load("nope", Options{DataDir: data})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("nope: %v; want ErrNotFound", err)
	}
	msg := err.Error()
	places := []string{"1. the shipped packs (", "2. " + filepath.Join(data, "policies", "nope.toml"), "3. ./nope (working directory)", "4. ./nope.toml (working directory)", "fix: "}
	last := -1
	for _, p := range places {
		i := strings.Index(msg, p)
		if i <= last {
			t.Fatalf("message lacks %q after the previous place:\n%s", p, msg)
		}
		last = i
	}
	_, err = Load("./sub/none", Options{})
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, os.ErrNotExist) ||
		!strings.Contains(err.Error(), "1. ./sub/none ("+filepath.Join(cwd, "sub", "none")+")") || !strings.Contains(err.Error(), "2. ./sub/none.toml") {
		t.Errorf("missing path: %v", err)
	}
}
