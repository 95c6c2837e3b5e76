//go:build linux

package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/webhook"
)

// TestEvidenceCommandsOnDemoSession exports the demo's session in every
// format, verifies its certificate and credential offline with the pinned
// issuer key, and shows that tampering is caught.
func TestEvidenceCommandsOnDemoSession(t *testing.T) {
	env := cliEnv(t)
	id := sessionFromSummary(t, runDemo(t, env))
	dir := t.TempDir()

	// The demo reports high findings: every format exits 1 (the CI gate)
	// and still writes its file.
	for _, f := range []string{"json", "sarif", "html", "certificate", "github_actions", "gitlab_codequality"} {
		path := filepath.Join(dir, "report."+f)
		code, _, errOut := runCLI(t, env, "", "report", id, "--format", f, "--output", path)
		if code != 1 || !strings.Contains(errOut, "high or critical findings") {
			t.Fatalf("report --format %s: exit %d %s", f, code, errOut)
		}
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Fatalf("report --format %s wrote nothing: %v", f, err)
		}
	}
	var rep struct {
		Findings []struct {
			Severity string `json:"severity"`
		} `json:"findings"`
		Summary struct {
			Credential bool   `json:"verifiable_credential"`
			Gate       string `json:"gate"`
		} `json:"summary"`
		Chain struct {
			OK bool `json:"ok"`
		} `json:"chain"`
	}
	data, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(data, &rep); err != nil || len(rep.Findings) != 4 || !rep.Summary.Credential || rep.Summary.Gate != "fail" || !rep.Chain.OK {
		t.Fatalf("json report: %v %+v", err, rep)
	}

	// The issuer key an auditor pins.
	code, keyJSON, _ := runCLI(t, env, "", "issuer-key", "--json")
	var key struct {
		PublicKey string `json:"public_key"`
		DID       string `json:"did"`
		Verifier  string `json:"checkpoint_verifier_key"`
	}
	if code != 0 || json.Unmarshal([]byte(keyJSON), &key) != nil || len(key.PublicKey) != 64 {
		t.Fatalf("issuer-key: exit %d %s", code, keyJSON)
	}
	cert := filepath.Join(dir, "report.certificate")
	for _, k := range []string{key.PublicKey, key.DID, key.Verifier} {
		code, out, _ := runCLI(t, env, "", "verify-certificate", cert, "--issuer-key", k)
		if code != 0 || strings.Count(out, " ok") != 5 || !strings.Contains(out, "certificate valid") {
			t.Fatalf("verify-certificate --issuer-key %s: exit %d\n%s", k, code, out)
		}
	}
	// A key file works too (--issuer-key-file), and an unrelated key is refused.
	keyFile := filepath.Join(dir, "issuer.pub")
	os.WriteFile(keyFile, []byte(key.PublicKey+"\n"), 0o644)
	if code, out, _ := runCLI(t, env, "", "verify-certificate", cert, "--issuer-key-file", keyFile, "--json"); code != 0 || !strings.Contains(out, `"valid": true`) {
		t.Fatalf("key file: exit %d %s", code, out)
	}
	other := strings.Repeat("ab", 32)
	if code, out, _ := runCLI(t, env, "", "verify-certificate", cert, "--issuer-key", other); code != 1 || !strings.Contains(out, "INVALID: issuer signature failed") {
		t.Fatalf("wrong key: exit %d %s", code, out)
	}
	// One changed byte in an observation breaks the certificate.
	raw, _ := os.ReadFile(cert)
	tampered := filepath.Join(dir, "tampered.elc")
	os.WriteFile(tampered, []byte(strings.Replace(string(raw), "privileged: true", "privileged: fals", 1)), 0o644)
	if code, out, _ := runCLI(t, env, "", "verify-certificate", tampered, "--issuer-key", key.PublicKey); code != 1 || !strings.Contains(out, "FAIL") {
		t.Fatalf("tampered: exit %d %s", code, out)
	}

	// The credential recorded before the seal verifies with the same key.
	jwt := credentialOf(t, cert)
	vcFile := filepath.Join(dir, "session.jwt")
	os.WriteFile(vcFile, []byte(jwt+"\n"), 0o644)
	if code, out, _ := runCLI(t, env, "", "verify-vc", vcFile, "--issuer-key", key.DID); code != 0 || !strings.Contains(out, "credential valid: session "+id) {
		t.Fatalf("verify-vc: exit %d %s", code, out)
	}
	if code, _, _ := runCLI(t, env, "", "verify-vc", jwt, "--issuer-key-file", keyFile); code != 0 {
		t.Fatal("verify-vc of the JWT itself failed")
	}
	if code, _, errOut := runCLI(t, env, "", "verify-vc", jwt); code != 2 || !strings.Contains(errOut, "--allow-unpinned") {
		t.Fatalf("unpinned verify-vc: exit %d %s; want 2", code, errOut)
	}
	parts := strings.Split(jwt, ".")
	forged := parts[0] + "." + parts[1][:len(parts[1])-2] + "AA." + parts[2]
	if code, out, _ := runCLI(t, env, "", "verify-vc", forged, "--issuer-key", key.PublicKey); code != 1 || !strings.Contains(out, "INVALID") {
		t.Fatalf("forged credential: exit %d %s", code, out)
	}
	if code, _, _ := runCLI(t, env, "", "verify-vc", jwt, "--issuer-key", other); code != 1 {
		t.Fatal("a credential verified under another issuer key")
	}
}

// TestExecNotifiesSIEM runs a command the tripwire denies with WEBHOOK_URL
// pointing at a loopback receiver: the denial, the aborted session and
// the seal's checkpoint arrive signed, in CEF.
func TestExecNotifiesSIEM(t *testing.T) {
	var mu sync.Mutex
	var got []string
	var sigOK bool = true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts := r.Header.Get(webhook.HeaderTimestamp)
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get(webhook.HeaderSignature) != "sha256="+webhook.Sign([]byte("hmac-key"), ts, body) || r.Header.Get("Authorization") != "Bearer siem-token" {
			sigOK = false
		}
		got = append(got, string(body))
	}))
	defer srv.Close()
	env := cliEnv(t, "WEBHOOK_URL", srv.URL+"/cef", "WEBHOOK_ALLOW_PRIVATE_TARGETS", "true", "SIEM_FORMAT", "cef",
		"WEBHOOK_HMAC_SECRET", "hmac-key", "WEBHOOK_BEARER_TOKEN", "siem-token")
	ws := t.TempDir()
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "sudo id")
	if code != ExitExecDenied {
		t.Fatalf("exec: exit %d %s", code, errOut)
	}
	// exec waits for queued deliveries before it exits.
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// The seal's checkpoint goes to the SIEM too (issue 23 item 2); it is
	// committed by the ledger, so its place among the others is not fixed.
	var ordered []string
	checkpoints := 0
	for _, g := range got {
		if strings.Contains(g, "|checkpoint|") {
			checkpoints++
			continue
		}
		ordered = append(ordered, g)
	}
	if len(ordered) != 2 || checkpoints < 1 || !strings.Contains(ordered[0], "|tripwire_rejection|") || !strings.Contains(ordered[1], "|session_aborted|") || !sigOK {
		t.Fatalf("receiver got %d (signatures ok %v):\n%s", len(got), sigOK, strings.Join(got, "\n"))
	}
	got = ordered
	if !strings.Contains(got[0], "cs1="+sessionOf(t, errOut)) {
		t.Fatalf("the notification does not name the session: %s", got[0])
	}
}
