package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportCommandErrorsAndGate(t *testing.T) {
	e := newLedgerEnv(t)
	// A session without findings passes the gate.
	if code, out, errOut := e.run("report", e.sealed.String()); code != 0 || !strings.Contains(out, `"gate": "pass"`) {
		t.Fatalf("report: exit %d %s %s", code, out, errOut)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"report", "0190f1c2-7a3b-7cde-8f01-23456789abcd"}, "is not in this ledger"},
		{[]string{"report", "not-a-uuid"}, "is not a session id"},
		{[]string{"report", e.sealed.String(), "--format", "pdf"}, "gitlab_codequality"},
		{[]string{"report", e.sealed.String(), "--output", filepath.Join(t.TempDir(), "missing", "dir", "x.json")}, "write"},
		{[]string{"verify-certificate", "x.elc", "--issuer-key", "nope"}, "--issuer-key"},
		{[]string{"verify-vc", "not-a-jwt", "--allow-unpinned"}, "neither a JWT"},
		{[]string{"verify-certificate", "x.elc"}, "--allow-unpinned"},
		{[]string{"verify-vc", "a.b.c"}, "no issuer key pinned"},
	}
	for _, c := range cases {
		if code, _, errOut := e.run(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %s; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, _ := e.run("verify-certificate", filepath.Join(t.TempDir(), "absent.elc"), "--allow-unpinned"); code != 1 {
		t.Errorf("unreadable certificate: exit %d; want 1", code)
	}
}

func TestCertificateOfSessionWithoutFindings(t *testing.T) {
	e := newLedgerEnv(t)
	dir := t.TempDir()
	cert := filepath.Join(dir, "s.elc")
	if code, _, errOut := e.run("report", e.sealed.String(), "--format", "certificate", "-o", cert); code != 0 {
		t.Fatalf("export: exit %d %s", code, errOut)
	}
	code, out, _ := e.run("issuer-key")
	if code != 0 || !strings.Contains(out, "did:key:z") {
		t.Fatalf("issuer-key: exit %d %s", code, out)
	}
	hexKey := strings.Fields(strings.SplitN(out, "\n", 2)[0])[3]
	code, out, _ = e.run("verify-certificate", cert, "--issuer-key", hexKey, "--json")
	var res struct {
		Valid   bool `json:"valid"`
		Pillars []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"pillars"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || !res.Valid || len(res.Pillars) != 5 {
		t.Fatalf("verify: exit %d %s", code, out)
	}
	// Unsigned: strip the signature; "not signed" is a failure.
	raw, _ := os.ReadFile(cert)
	i := strings.LastIndex(string(raw), `,"signature":`)
	unsigned := filepath.Join(dir, "unsigned.elc")
	os.WriteFile(unsigned, []byte(string(raw[:i])+"}"), 0o644)
	if code, out, _ := e.run("verify-certificate", unsigned, "--issuer-key", hexKey); code != 1 || !strings.Contains(out, "not signed") {
		t.Fatalf("unsigned: exit %d %s", code, out)
	}
}

func TestEvidenceCommandsHelp(t *testing.T) {
	for _, c := range []string{"report", "verify-certificate", "verify-vc", "issuer-key"} {
		code, out, _ := runCLI(t, cliEnv(t), "", c, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "ironvise "+c) {
			t.Errorf("%s --help: exit %d\n%s", c, code, out)
		}
	}
}
