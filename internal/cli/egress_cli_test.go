package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestEgressReplayAndReport: the genesis's network record and every egress
// event appear readably in `ironvise replay`; the JSON and HTML reports
// list the connections; the session verifies, and so does its certificate
// offline. The events are written here as the session writes them (the
// proxy-mode tier that produces them is tested with the sandbox).
func TestEgressReplayAndReport(t *testing.T) {
	dir, l := newDirLedger(t)
	ctx := context.Background()
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "pip install", SandboxTier: "native-linux",
		Network: &ledger.SessionNetwork{Mode: "proxy", AllowedDomains: []string{"pypi.org", "*.pythonhosted.org"}, AllowCIDRs: []string{"10.0.0.0/8"}}})
	if err != nil {
		t.Fatal(err)
	}
	intent := "00000000-0000-4000-8000-000000000001"
	for _, p := range []map[string]any{
		{"step": 1, "intent_id": intent, "protocol": "connect", "host": "pypi.org", "port": 443, "sni": "pypi.org", "addr": "151.101.0.223:443",
			"bytes_up": 517, "bytes_down": 48213, "start": "2026-12-02T12:00:00Z", "duration_ms": 84, "verdict": "allow", "code": "ok", "rule": "pypi.org", "reason": "ok"},
		{"step": 1, "intent_id": intent, "protocol": "connect", "host": "denied.test", "port": 443, "bytes_up": 0, "bytes_down": 0,
			"start": "2026-12-02T12:00:01Z", "duration_ms": 0, "verdict": "deny", "code": "egress_domain_not_allowed", "reason": "host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"},
	} {
		if _, err := l.Append(ctx, s.ID, ledger.TypeEgress, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.EndSession(ctx, s.ID, ledger.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seal(ctx, s.ID, "cli-test"); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	e := &ledgerEnv{dir: dir, env: map[string]string{"ECTO_DATA_DIR": dir, "HOME": dir}}
	id := s.ID.String()

	code, out, errOut := e.run("replay", id)
	if code != 0 {
		t.Fatalf("replay: exit %d %s", code, errOut)
	}
	for _, want := range []string{
		"genesis            session started; network: proxy to pypi.org, *.pythonhosted.org (address ranges: 10.0.0.0/8)",
		"egress             step 1 allow connect pypi.org:443 sni=pypi.org addr=151.101.0.223:443 up=517 down=48213 84ms rule=pypi.org",
		"egress             step 1 deny connect denied.test:443 up=0 down=0 0ms egress_domain_not_allowed: host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("replay lacks %q:\n%s", want, out)
		}
	}
	if code, out, errOut := e.run("verify-session", id); code != 0 {
		t.Fatalf("verify-session: exit %d %s %s", code, out, errOut)
	}

	code, out, errOut = e.run("report", id)
	if code != 0 {
		t.Fatalf("report: exit %d %s", code, errOut)
	}
	var rep struct {
		Egress []struct {
			Host      string `json:"host"`
			Port      int    `json:"port"`
			Verdict   string `json:"verdict"`
			BytesDown int64  `json:"bytes_down"`
		} `json:"egress"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Egress) != 2 || rep.Egress[0].Host != "pypi.org" ||
		rep.Egress[0].BytesDown != 48213 || rep.Egress[1].Verdict != "deny" || rep.Egress[1].Port != 443 {
		t.Fatalf("json report egress %+v (%v)", rep.Egress, err)
	}
	code, out, errOut = e.run("report", id, "--format", "html")
	if code != 0 {
		t.Fatalf("html report: exit %d %s", code, errOut)
	}
	for _, want := range []string{"<h2>Network egress</h2>", "2 connection(s) through the egress proxy, 1 refused.",
		`<td class="mono">denied.test:443</td><td class="fail">deny</td>`, "<td>48213</td>"} {
		if !strings.Contains(out, want) {
			t.Fatalf("html report lacks %q", want)
		}
	}

	code, keyOut, _ := e.run("issuer-key")
	if code != 0 {
		t.Fatal("issuer-key failed")
	}
	key := strings.Fields(strings.SplitN(keyOut, "\n", 2)[0])[3]
	cert := filepath.Join(t.TempDir(), "s.elc")
	if code, _, errOut := e.run("report", id, "--format", "certificate", "-o", cert); code != 0 {
		t.Fatalf("certificate: exit %d %s", code, errOut)
	}
	if code, out, errOut := e.run("verify-certificate", cert, "--issuer-key", key); code != 0 {
		t.Fatalf("verify-certificate: exit %d %s %s", code, out, errOut)
	}
}
