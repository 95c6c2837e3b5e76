//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIssuerKeyFileRoundTrip: whatever 'ironvise issuer-key' prints or
// writes — standard output redirected to a file, --output, --json either
// way — is an issuer key file that every verifier reads with
// --issuer-key-file: verify-certificate, verify-vc and the standalone
// verify-cert.
func TestIssuerKeyFileRoundTrip(t *testing.T) {
	env := cliEnv(t)
	id := sessionFromSummary(t, runDemo(t, env))
	dir := t.TempDir()
	cert := filepath.Join(dir, "audit.elc")
	if code, _, errOut := runCLI(t, env, "", "report", id, "--format", "certificate", "--output", cert); code != 1 {
		t.Fatalf("report: exit %d %s", code, errOut)
	}
	jwt := credentialOf(t, cert)

	files := map[string]string{}
	for name, args := range map[string][]string{"stdout.pub": nil, "stdout.json": {"--json"}} {
		code, out, errOut := runCLI(t, env, "", append([]string{"issuer-key"}, args...)...)
		if code != 0 || out == "" {
			t.Fatalf("issuer-key %v: exit %d %s", args, code, errOut)
		}
		files[name] = filepath.Join(dir, name)
		os.WriteFile(files[name], []byte(out), 0o644)
	}
	for name, args := range map[string][]string{"output.pub": nil, "output.json": {"--json"}} {
		files[name] = filepath.Join(dir, name)
		code, out, errOut := runCLI(t, env, "", append([]string{"issuer-key", "--output", files[name]}, args...)...)
		if code != 0 || out != "" || !strings.Contains(errOut, "--issuer-key-file "+files[name]) {
			t.Fatalf("issuer-key --output %v: exit %d\nstdout %q\nstderr %s", args, code, out, errOut)
		}
	}
	// --output writes exactly what standard output shows.
	for _, pair := range [][2]string{{"stdout.pub", "output.pub"}, {"stdout.json", "output.json"}} {
		a, _ := os.ReadFile(files[pair[0]])
		b, _ := os.ReadFile(files[pair[1]])
		if string(a) != string(b) {
			t.Errorf("%s and %s differ:\n%s\n%s", pair[0], pair[1], a, b)
		}
	}
	verifyCert := buildVerifyCert(t)
	for name, f := range files {
		if code, out, errOut := runCLI(t, env, "", "verify-certificate", cert, "--issuer-key-file", f); code != 0 || !strings.Contains(out, "certificate valid") {
			t.Errorf("verify-certificate --issuer-key-file %s: exit %d\n%s%s", name, code, out, errOut)
		}
		if code, out, errOut := runCLI(t, env, "", "verify-vc", jwt, "--issuer-key-file", f); code != 0 || !strings.Contains(out, "credential valid") {
			t.Errorf("verify-vc --issuer-key-file %s: exit %d\n%s%s", name, code, out, errOut)
		}
		if out, err := exec.Command(verifyCert, "--issuer-key-file", f, cert).CombinedOutput(); err != nil || !strings.Contains(string(out), "certificate valid") {
			t.Errorf("verify-cert --issuer-key-file %s: %v\n%s", name, err, out)
		}
	}
	// The whole output is also accepted as the value of --issuer-key.
	text, _ := os.ReadFile(files["stdout.pub"])
	if code, out, errOut := runCLI(t, env, "", "verify-certificate", cert, "--issuer-key", string(text)); code != 0 {
		t.Errorf("--issuer-key with the whole output: exit %d\n%s%s", code, out, errOut)
	}
	// A file that mixes in another issuer's key pins nothing.
	mixed := filepath.Join(dir, "mixed.pub")
	os.WriteFile(mixed, append(text, []byte("public key (hex)         "+strings.Repeat("ab", 32)+"\n")...), 0o644)
	if code, _, errOut := runCLI(t, env, "", "verify-certificate", cert, "--issuer-key-file", mixed); code != ExitUsage || !strings.Contains(errOut, "mixes two issuers") {
		t.Errorf("mixed key file: exit %d %s; want 2", code, errOut)
	}
}

// credentialOf returns the verifiable credential JWT recorded in cert.
func credentialOf(t *testing.T, cert string) string {
	t.Helper()
	raw, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Certificate struct {
			Events []struct {
				Type    string `json:"type"`
				Payload string `json:"payload"`
			} `json:"events"`
		} `json:"certificate"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc.Certificate.Events {
		if e.Type == "verifiable_credential" {
			var p struct {
				JWT string `json:"vc_jwt"`
			}
			json.Unmarshal([]byte(e.Payload), &p)
			return p.JWT
		}
	}
	t.Fatal("the certificate holds no verifiable_credential event")
	return ""
}

// buildVerifyCert builds the standalone verifier, the binary an auditor
// runs.
func buildVerifyCert(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	bin := filepath.Join(t.TempDir(), "verify-cert")
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/ironvise/ironvise/cmd/verify-cert").CombinedOutput(); err != nil {
		t.Fatalf("build verify-cert: %v\n%s", err, out)
	}
	return bin
}
