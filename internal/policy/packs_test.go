package policy

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// goldenPackHashes reads testdata/packs.sha256 (sha256sum format). A pack
// edit must update it on purpose: the hash is what sessions record and
// operators pin.
func goldenPackHashes(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/packs.sha256")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		hash, file, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("bad golden line %q", line)
		}
		out[strings.TrimSuffix(file, ".toml")] = hash
	}
	return out
}

// TestPacksLoad is docs/design/checks.md#acceptance-cases case 43 and the
// pack rules of docs/design/checks.md#shipped-packs: each pack loads with
// zero errors, its hash is the SHA-256 of its bytes, and it has the header
// keys that page gives it.
func TestPacksLoad(t *testing.T) {
	golden := goldenPackHashes(t)
	want := []struct {
		name, title string
		maxSteps    int
		executables bool
	}{
		{"iso42001", "ISO/IEC 42001 AI Management System", 30, false},
		{"owasp-top10", "OWASP Top 10 Security Audit", 45, true},
		{"pci-dss-audit", "PCI DSS v4.0.1 Audit", 50, true},
		{"soc2-audit", "SOC 2 Compliance Audit", 40, true},
	}
	if got := Packs(); len(got) != len(want) {
		t.Fatalf("packs %v; want %d", got, len(want))
	}
	for i, w := range want {
		t.Run(w.name, func(t *testing.T) {
			if Packs()[i] != w.name {
				t.Fatalf("pack %d is %q; want %q", i, Packs()[i], w.name)
			}
			for _, goos := range []string{"linux", "darwin", "windows"} {
				if _, err := Load(w.name, Options{GOOS: goos}); err != nil {
					t.Fatalf("%s: %v", goos, err)
				}
			}
			p, err := Load(w.name, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := PackBytes(w.name)
			if p.SHA256() != Hash(b) || p.SHA256() != golden[w.name] {
				t.Errorf("hash %s; want %s (bytes) and %s (golden)", p.SHA256(), Hash(b), golden[w.name])
			}
			if _, err := Load(w.name, Options{SHA256: golden[w.name]}); err != nil {
				t.Errorf("pinned to its golden hash: %v", err)
			}
			if p.Name() != w.title || p.File() != w.name+".toml" {
				t.Errorf("name %q file %q", p.Name(), p.File())
			}
			if n, ok := p.MaxSteps(); !ok || n != w.maxSteps {
				t.Errorf("max_steps %d; want %d", n, w.maxSteps)
			}
			// The packs govern audits IronVise runs itself: write_file, an
			// agent's own write, is not among their actions.
			if want := []intent.Action{intent.RunCommand, intent.ReadFile, intent.HTTPGet, intent.Complete}; !slices.Equal(p.AllowedActions(), want) || len(p.ForbiddenActions()) != 0 {
				t.Errorf("actions %v / %v; want %v / none", p.AllowedActions(), p.ForbiddenActions(), want)
			}
			exe, on := p.Executables()
			if on != w.executables {
				t.Errorf("executables on = %v; want %v", on, w.executables)
			}
			// awk and sed run commands (system(), e): never in a pack's list.
			for _, bad := range []string{"awk", "sed", "gawk", "python3", "sh", "bash"} {
				if slices.Contains(exe, bad) {
					t.Errorf("executables contain %q", bad)
				}
			}
			if strings.Contains(string(b), "write_file") || strings.Contains(string(b), "delete_file") {
				t.Error("pack names an action that does not exist")
			}
			for _, r := range p.ObservationRules() {
				if r.Pattern == nil || !labelPattern().MatchString(r.Label) {
					t.Errorf("observation rule %+v", r)
				}
			}
		})
	}
}

func TestISOControls(t *testing.T) {
	p, err := Load("iso42001", Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Control{
		{"4.1", "context", "goal_hash_recorded"},
		{"4.2", "interested parties", "policy_hash_in_session"},
		{"5.1", "leadership", "session_certificate_signed"},
		{"5.2", "AI policy", "observation_policy_applied"},
		{"6.1", "risks", "tripwire_active"},
		{"6.1.2", "risk treatment", "red_team_findings_logged"},
		{"8.1", "operational control", "two_phase_commit_enforced"},
		{"8.2", "impact assessment", "compliance_report_available"},
		{"8.3", "lifecycle", "session_lifecycle_recorded"},
		{"8.4", "external AI", "llm_provenance_recorded"},
		{"9.1", "monitoring", "metrics_endpoint_active"},
		{"9.2", "internal audit", "snapshot_merkle_root_valid"},
		{"9.3", "management review", "report_export_available"},
		{"10.1", "improvement", "webhook_egress_configured"},
	}
	if got := p.Controls(); !slices.Equal(got, want) {
		t.Errorf("controls:\n%v\nwant:\n%v", got, want)
	}
}

// packCase is one step against a shipped pack: the policy verdict and,
// for require_approval, the approval request it opens.
type packCase struct {
	name     string
	view     func(e *testEnv) *tripwire.View
	decision verdict.Decision
	code     verdict.Code
	rule     string
	// gates, timeout and onTimeout describe TriggeredGates (nil: none).
	gates     []string
	timeout   int
	onTimeout string
}

func runPackCases(t *testing.T, pack string, cases []packCase) {
	t.Helper()
	p, err := Load(pack, Options{GOOS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, "linux")
			e.write(t, "certs/server.key", "-----BEGIN PRIVATE KEY-----")
			v := tc.view(e)
			pv := p.Evaluate(v)
			if pv.Decision != tc.decision || pv.Code != tc.code || (tc.rule != "" && pv.Rule != tc.rule) {
				t.Fatalf("got %s %s rule %q (%s); want %s %s rule %q", pv.Decision, pv.Code, pv.Rule, pv.Message, tc.decision, tc.code, tc.rule)
			}
			req, ok := p.TriggeredGates(v, pv)
			if tc.gates == nil {
				if ok {
					t.Errorf("triggered %+v; want no gate", req)
				}
				return
			}
			if !ok || !slices.Equal(req.Gates, tc.gates) || req.TimeoutSeconds != tc.timeout || req.OnTimeout != tc.onTimeout {
				t.Errorf("request %+v, %v; want gates %v, %d s, %s", req, ok, tc.gates, tc.timeout, tc.onTimeout)
			}
		})
	}
}

// TestSOC2Pack covers docs/design/checks.md#acceptance-cases cases 39, 40 and
// 41 (policy side) and more.
func TestSOC2Pack(t *testing.T) {
	runPackCases(t, "soc2-audit", []packCase{
		{name: "39 nmap needs approval", view: rc("nmap -sV 10.0.0.1"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "scan", gates: []string{"network-scan"}, timeout: 120, onTimeout: "deny"},
		{name: "40 tcpdump denied", view: rc("tcpdump -i any"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "scan-deny"},
		{name: "40 python3 not in executables", view: rc("python3 x.py"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed, rule: "executables"},
		{name: "41 key file needs approval", view: rf("certs/server.key"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "key-material", gates: []string{"key-material"}, timeout: 180, onTimeout: "deny"},
		{name: "allow read-only inspection", view: rc("ls -la /etc | grep ssh; netstat -tlnp; ss -s; openssl version"), decision: verdict.Allow, code: verdict.OK},
		{name: "allow a log read", view: rf("notes.txt"), decision: verdict.Allow, code: verdict.OK},
		{name: "recursive rm denied", view: rc("rm -rf ./build"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "rm-recursive"},
		{name: "plain rm is not recursive", view: rc("rm -f ./build/a.o"), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed},
		{name: "hping glob denied", view: rc("hping3 -S h"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "scan-deny"},
		{name: "mkfs denied before executables", view: rc("mkfs.ext4 /dev/sdb1"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "destructive"},
		{name: "awk is not allowed", view: rc(`awk 'BEGIN{system("id")}'`), decision: verdict.Deny, code: verdict.PolicyExecutableNotAllowed},
		{name: "internal http triggers a gate", view: hg("https://internal.example.com/"), decision: verdict.Allow, code: verdict.OK,
			gates: []string{"internal-http"}, timeout: 60, onTimeout: "deny"},
		{name: "public http triggers nothing", view: hg("https://example.com/"), decision: verdict.Allow, code: verdict.OK},
	})
}

func TestPCIPack(t *testing.T) {
	runPackCases(t, "pci-dss-audit", []packCase{
		{name: "allow firewall review", view: rc("iptables -L -n; ufw status; ip addr"), decision: verdict.Allow, code: verdict.OK},
		{name: "sqlmap denied as exploitation", view: rc("sqlmap -u https://example.com/?id=1"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "exploit"},
		{name: "hashcat denied", view: rc("hashcat -m 0 h.txt"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "exploit"},
		{name: "segmentation scan needs approval", view: rc("nmap -p 1-1024 10.1.0.0/24"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "segmentation-scan", gates: []string{"segmentation-scan"}, timeout: 300, onTimeout: "deny"},
		{name: "192.168 address triggers its gate", view: hg("https://lan.example.com/"), decision: verdict.Allow, code: verdict.OK,
			gates: []string{"rfc1918-192"}, timeout: 60, onTimeout: "deny"},
		{name: "key read needs approval", view: rc("openssl x509 -in x < certs/server.key"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			gates: []string{"key-material"}, timeout: 180, onTimeout: "deny"},
	})
}

// TestOWASPPack covers docs/design/checks.md#acceptance-cases case 58 (policy
// side) and the pack's rules.
func TestOWASPPack(t *testing.T) {
	runPackCases(t, "owasp-top10", []packCase{
		{name: "allow a dependency audit", view: rc("git log --oneline -5; npm audit --json; trivy fs ."), decision: verdict.Allow, code: verdict.OK},
		{name: "sqlmap extraction denied over approval", view: rc("sqlmap -u https://example.com/?id=1 --dump"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "sqlmap-extract"},
		{name: "sqlmap probe needs approval", view: rc("sqlmap -u https://example.com/?id=1"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "app-scanner", gates: []string{"app-scanner"}, timeout: 300, onTimeout: "deny"},
		{name: "git -c denied", view: rc("git -c core.sshCommand=id fetch"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "git-exec"},
		{name: "pip install denied", view: rc("pip install requests"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "pkg-install"},
		{name: "npm i denied", view: rc("npm i left-pad"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "pkg-install"},
		{name: "pip list allowed", view: rc("pip list --outdated"), decision: verdict.Allow, code: verdict.OK},
		{name: "internal 172 gate", view: hg("https://172.20.1.1/"), decision: verdict.Allow, code: verdict.OK,
			gates: []string{"internal-172"}, timeout: 60, onTimeout: "deny"},
	})
	p, err := Load("owasp-top10", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// docs/design/checks.md#acceptance-cases case 58: password=hunter2 is
	// redacted and the CVE id flagged.
	out := "config: password=hunter2\nvulnerable to CVE-2024-1234\n"
	byLabel := map[string]scan.ObservationRule{}
	for _, r := range p.ObservationRules() {
		byLabel[r.Label] = r
	}
	for label, want := range map[string]struct {
		action scan.RuleAction
		match  string
	}{
		"password":      {scan.RuleRedact, "password=hunter2"},
		"cve_reference": {scan.RuleFlag, "CVE-2024-1234"},
	} {
		r, ok := byLabel[label]
		if !ok || r.Action != want.action || r.Pattern.FindString(out) != want.match {
			t.Errorf("rule %s: %+v, match %q; want %s matching %q", label, r, r.Pattern.FindString(out), want.action, want.match)
		}
	}
	if r := byLabel["weak_crypto"]; r.Pattern.MatchString(out) {
		t.Errorf("weak_crypto matched %q", out)
	}
	// Applied by the output scanner as the pipeline does.
	res, abort := scan.ApplyRules(scan.Result{Sanitized: out, Labels: []string{}}, p.ObservationRules())
	if abort != "" || strings.Contains(res.Sanitized, "hunter2") || !strings.Contains(res.Sanitized, "[REDACTED:password]") ||
		!slices.Contains(res.Labels, "policy:cve_reference") || !strings.Contains(res.Sanitized, "CVE-2024-1234") {
		t.Errorf("ApplyRules: %q labels %v abort %q", res.Sanitized, res.Labels, abort)
	}
}

func TestISOPack(t *testing.T) {
	runPackCases(t, "iso42001", []packCase{
		{name: "allow without executables", view: rc("systemctl status nginx; journalctl -u nginx -n 50; python3 --version"), decision: verdict.Allow, code: verdict.OK},
		{name: "crontab denied", view: rc("crontab -l"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "persistence"},
		{name: "service change denied", view: rc("systemctl restart nginx"), decision: verdict.Deny, code: verdict.PolicyCommandRule, rule: "service-change"},
		{name: "pip3 install needs approval", view: rc("pip3 install torch"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "third-party", gates: []string{"third-party"}, timeout: 300, onTimeout: "deny"},
		{name: "go get needs approval", view: rc("go get example.com/m"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "third-party", gates: []string{"third-party"}, timeout: 300, onTimeout: "deny"},
		{name: "go build allowed", view: rc("go build ./..."), decision: verdict.Allow, code: verdict.OK},
		{name: "model artifact needs approval", view: rf("models/llama.gguf"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "model-artifacts", gates: []string{"ai-assets"}, timeout: 300, onTimeout: "deny"},
		{name: "credentials denied", view: rf(".aws/credentials"), decision: verdict.Deny, code: verdict.PolicyPathRule, rule: "credentials"},
		{name: "ssh key denied", view: rc("cat < home/.ssh/id_ed25519"), decision: verdict.Deny, code: verdict.PolicyPathRule, rule: "credentials"},
		{name: "external AI needs approval", view: hg("https://api.openai.com/v1/models"), decision: verdict.RequireApproval, code: verdict.PolicyRequiresApproval,
			rule: "external-ai", gates: []string{"third-party"}, timeout: 300, onTimeout: "deny"},
	})
}
