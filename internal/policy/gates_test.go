package policy

import (
	"slices"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// TestTriggeredGates covers docs/design/checks.md#approval-gates evaluation
// on the complete example of docs/design/checks.md#policy-example and on
// policies built for one property each.
func TestTriggeredGates(t *testing.T) {
	example, err := Load("testdata/example.toml", Options{GOOS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	mixed := mustParse(t, `name = "t"
approval_timeout_seconds = 45
command_rules = [
  { id = "a", program = "nmap", decision = "require_approval", gate = "slow-allow" },
  { id = "b", program = "masscan", decision = "require_approval", gate = "fast-allow" },
  { id = "c", program = "zmap", decision = "require_approval" },
]
approval_gates = [
  { id = "slow-allow", timeout_seconds = 600, on_timeout = "allow" },
  { id = "fast-allow", timeout_seconds = 30, on_timeout = "allow", reason = "quick look" },
  { id = "keys", when = "path_matches('*.key')", timeout_seconds = 90 },
  { id = "http-any", when = "action == 'http_get'", on_timeout = "allow" },
]
`)
	cases := []struct {
		name    string
		p       *Policy
		view    func(*testEnv) *tripwire.View
		gates   []string
		reasons []string
		timeout int
		onTO    string
	}{
		{name: "named gate with a reason", p: example, view: rc("nmap -sV h"),
			gates: []string{"net-scan"}, reasons: []string{"active scanning"}, timeout: 120, onTO: "deny"},
		{name: "when gate alone", p: example, view: rc("grep -R x /srv"),
			gates: []string{"big-grep"}, reasons: []string{"when action == 'run_command' && (command_contains('-r /') || command_matches('grep\\s+-R'))"}, timeout: 300, onTO: "deny"},
		{name: "named gate then when gate, minimum timeout", p: example, view: rc("nmap -r / h"),
			gates: []string{"net-scan", "big-grep"}, timeout: 120, onTO: "deny"},
		{name: "path gate without a reason quotes the verdict", p: example, view: rf("certs/a.pem"),
			gates: []string{"secrets"}, reasons: []string{"rule keys requires approval (gates: secrets)"}, timeout: 180, onTO: "deny"},
		{name: "nothing triggers", p: example, view: rc("ls -la")},
		{name: "on_timeout allow only if every gate allows", p: mixed, view: rc("nmap h; masscan h"),
			gates: []string{"slow-allow", "fast-allow"}, reasons: []string{"rule a requires approval (gates: slow-allow, fast-allow)", "quick look"}, timeout: 30, onTO: "allow"},
		{name: "one deny gate makes the request deny", p: mixed, view: rc("nmap h > a.key"),
			gates: []string{"slow-allow", "keys"}, timeout: 90, onTO: "deny"},
		{name: "implicit gate", p: mixed, view: rc("zmap h"),
			gates: []string{DefaultGateID}, timeout: 45, onTO: "deny"},
		{name: "implicit gate with an allow gate denies", p: mixed, view: rc("zmap h; masscan h"),
			gates: []string{"fast-allow", DefaultGateID}, timeout: 30, onTO: "deny"},
		{name: "when gate with on_timeout allow", p: mixed, view: hg("https://example.com/"),
			gates: []string{"http-any"}, timeout: 300, onTO: "allow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "linux")
			v := tc.view(e)
			pv := tc.p.Evaluate(v)
			req, ok := tc.p.TriggeredGates(v, pv)
			if tc.gates == nil {
				if ok {
					t.Fatalf("triggered %+v; want none", req)
				}
				return
			}
			if !ok {
				t.Fatalf("no gate triggered; want %v (policy verdict %+v)", tc.gates, pv)
			}
			if !slices.Equal(req.Gates, tc.gates) {
				t.Errorf("gates %q; want %q", req.Gates, tc.gates)
			}
			if len(req.Reasons) != len(req.Gates) {
				t.Errorf("%d reasons for %d gates", len(req.Reasons), len(req.Gates))
			}
			if tc.reasons != nil && !slices.Equal(req.Reasons, tc.reasons) {
				t.Errorf("reasons %q; want %q", req.Reasons, tc.reasons)
			}
			if req.TimeoutSeconds != tc.timeout || req.OnTimeout != tc.onTO {
				t.Errorf("timeout %d on_timeout %s; want %d %s", req.TimeoutSeconds, req.OnTimeout, tc.timeout, tc.onTO)
			}
			if req.Timeout().Seconds() != float64(tc.timeout) {
				t.Errorf("Timeout() = %v", req.Timeout())
			}
		})
	}
}

func TestTriggeredGatesAfterDeny(t *testing.T) {
	p := mustParse(t, `name = "t"
command_rules = [{ program = "rm", decision = "deny" }]
approval_gates = [{ id = "all", when = "action == 'run_command'" }]
`)
	e := newEnv(t, "linux")
	v := e.rc("rm x")
	pv := p.Evaluate(v)
	if pv.Decision != verdict.Deny {
		t.Fatalf("verdict %+v; want deny", pv)
	}
	if req, ok := p.TriggeredGates(v, pv); ok {
		t.Errorf("a denied step triggered %+v", req)
	}
	// The same view after an allow does trigger the when gate.
	if _, ok := p.TriggeredGates(e.rc("ls"), verdict.Pass(verdict.CheckPolicy)); !ok {
		t.Error("when gate did not trigger")
	}
}

// TestTriggeredGatesFailClosed: a require_approval verdict naming no gate,
// or a gate the policy lacks, still opens a request that denies on
// timeout.
func TestTriggeredGatesFailClosed(t *testing.T) {
	p := mustParse(t, "name = \"t\"\napproval_timeout_seconds = 77\n")
	e := newEnv(t, "linux")
	v := e.rc("ls")
	for _, gates := range [][]string{nil, {"ghost"}} {
		pv := verdict.New(verdict.CheckPolicy, verdict.RequireApproval, verdict.PolicyRequiresApproval, "x")
		pv.Gates = gates
		req, ok := p.TriggeredGates(v, pv)
		if !ok || req.TimeoutSeconds != 77 || req.OnTimeout != string(OnTimeoutDeny) || len(req.Gates) != 1 {
			t.Errorf("gates %v: request %+v, %v; want one gate, 77 s, deny", gates, req, ok)
		}
	}
}

// TestWriteFileGate: a policy gates write_file by path, a path rule for
// reads leaves writes alone, and a path rule without actions covers
// writes too.
func TestWriteFileGate(t *testing.T) {
	e := newEnv(t, "linux")
	p := mustParse(t, `name = "w"
path_rules = [
  { id = "manual-review", glob = "**/manual/**", actions = ["write_file"], decision = "require_approval" },
  { id = "no-read-keys", glob = "**/*.key", actions = ["read_file"], decision = "deny" },
  { id = "no-lock", glob = "**/*.lock", decision = "deny" },
]
`)
	wf := func(path string) *tripwire.View {
		return e.view(&intent.Intent{Action: intent.WriteFile, Path: path, Justification: "valid reason"})
	}
	cases := []struct {
		name string
		v    *tripwire.View
		want verdict.Decision
		code verdict.Code
	}{
		{"gated write", wf("manual/guide.md"), verdict.RequireApproval, verdict.PolicyRequiresApproval},
		{"gated path read", e.rf("manual/guide.md"), verdict.Allow, verdict.OK},
		{"read rule leaves writes", wf("server.key"), verdict.Allow, verdict.OK},
		{"rule without actions", wf("go.lock"), verdict.Deny, verdict.PolicyPathRule},
		{"plain write", wf("main.go"), verdict.Allow, verdict.OK},
	}
	for _, tc := range cases {
		v := p.Evaluate(tc.v)
		if v.Decision != tc.want || v.Code != tc.code {
			t.Errorf("%s: %s %s (%s); want %s %s", tc.name, v.Decision, v.Code, v.Message, tc.want, tc.code)
		}
	}
	req, ok := p.TriggeredGates(wf("manual/guide.md"), verdict.New(verdict.CheckPolicy, verdict.RequireApproval, verdict.PolicyRequiresApproval, ""))
	if !ok || len(req.Gates) != 1 {
		t.Errorf("gates %+v %v; want the default gate", req, ok)
	}
}
