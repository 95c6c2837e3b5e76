//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/enclave/remote/remotetest"
	"github.com/ironvise/ironvise/internal/evidence"
)

// runCLIWithRoots is runCLI with the remote enclave's pinned root replaced
// by a test authority's: the one thing no command line or variable can do.
func runCLIWithRoots(t *testing.T, env map[string]string, roots *remotetest.Server, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb, lookup: config.MapLookup(env), enclaveRoots: roots.Authority.Roots}
	code = a.run(append([]string{"ironvise"}, args...))
	return code, out.String(), errb.String()
}

// enclaveAudit runs the mock agent loop's audit with env and returns the
// session id, or fails.
func enclaveAudit(t *testing.T, env map[string]string, srv *remotetest.Server) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "app.conf"), []byte("debug = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIWithRoots(t, env, srv, "audit", "Audit the configuration in this workspace", "--workspace", ws)
	if code != 0 && code != 1 {
		t.Fatalf("audit: exit %d\n%s\n%s", code, out, errOut)
	}
	return sessionFromSummary(t, out)
}

// certificatePillars exports id's certificate and verifies it offline with
// the test authority's root.
func certificatePillars(t *testing.T, env map[string]string, id string, srv *remotetest.Server) *evidence.CertificateResult {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.elc")
	if code, _, errOut := runCLI(t, env, "", "report", id, "--format", "certificate", "--output", path); code != 0 && code != 1 {
		t.Fatalf("report: exit %d %s", code, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := evidence.VerifyCertificateWith(data, nil, evidence.VerifyOptions{EnclaveRoots: srv.Authority.Roots})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRemoteEnclaveAudit runs a whole audit with GUARD_ENCLAVE=remote
// against a stand-in Nitro enclave on loopback: every guard review travels
// through the attested channel, the attestation is in the genesis, the
// certificate's sixth pillar verifies it offline, and an enclave that fails
// attestation stops the audit before any session exists.
func TestRemoteEnclaveAudit(t *testing.T) {
	var reviews atomic.Int64
	srv := remotetest.NewServer(t, remotetest.Options{Infer: func(req remotetest.Request) (string, string, error) {
		reviews.Add(1)
		return "ALLOW", "enclave-guard-1", nil
	}})
	env := cliEnv(t, "LLM_BACKEND", "mock", "GUARD_ENCLAVE", "remote", "ECTO_ENCLAVE_REMOTE_URL", srv.URL,
		"ECTO_ENCLAVE_PCR0", hex.EncodeToString(srv.PCRs[0]))
	id := enclaveAudit(t, env, srv)
	if reviews.Load() == 0 || srv.Sessions() == 0 {
		t.Fatalf("the enclave reviewed %d requests over %d sessions; want the guard's reviews to go through it", reviews.Load(), srv.Sessions())
	}
	for _, r := range srv.Requests() {
		if !strings.Contains(r.Messages[0].Content, "Audit the configuration") {
			t.Fatalf("the enclave got a request without the session's goal: %+v", r)
		}
	}
	res := certificatePillars(t, env, id, srv)
	p := res.Pillar(evidence.PillarEnclave)
	if !res.Valid || len(res.Pillars) != 6 || !p.OK || !strings.Contains(p.Note, "verified offline") {
		t.Fatalf("certificate: valid %v, %d pillars, enclave pillar %+v; want six valid pillars", res.Valid, len(res.Pillars), p)
	}

	// The shipped verifier pins the AWS root: the test authority's
	// document is refused there, so a test chain can never pass as AWS.
	path := filepath.Join(t.TempDir(), "audit.elc")
	runCLI(t, env, "", "report", id, "--format", "certificate", "--output", path)
	code, out, _ := runCLI(t, env, "", "verify-certificate", path, "--allow-unpinned")
	if code != 1 || !strings.Contains(out, "guard enclave attestation") {
		t.Fatalf("verify-certificate with the pinned AWS root: exit %d\n%s\nwant exit 1 on the enclave pillar", code, out)
	}

	// Fail closed: an enclave whose image is not the pinned one, or whose
	// document is a replay, aborts before a session is created.
	for name, f := range map[string]remotetest.Faults{"wrong PCR0": {WrongPCR0: true}, "replayed document": {ReplayDocument: true}, "bad signature": {BadSignature: true}} {
		t.Run(name, func(t *testing.T) {
			srv.SetFaults(f)
			defer srv.SetFaults(remotetest.Faults{})
			before := reviews.Load()
			ws := t.TempDir()
			code, out, errOut := runCLIWithRoots(t, env, srv, "audit", "Audit again", "--workspace", ws)
			if code == 0 || code == 1 || !strings.Contains(errOut, "attest the remote guard enclave") {
				t.Fatalf("audit with %s: exit %d\n%s\n%s\nwant a start-up failure naming the attestation", name, code, out, errOut)
			}
			if strings.Contains(out, "verify: ironvise verify-session") || reviews.Load() != before {
				t.Fatalf("a session ran although the enclave failed attestation:\n%s", out)
			}
		})
	}
}

// TestSoftwareEnclaveAudit runs an audit with GUARD_ENCLAVE=software: the
// hardened worker's measurement is in the genesis and the sixth pillar
// holds.
func TestSoftwareEnclaveAudit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the hardened worker locks all its memory: needs CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK (run as root)")
	}
	srv := remotetest.NewServer(t, remotetest.Options{})
	env := cliEnv(t, "LLM_BACKEND", "mock", "GUARD_ENCLAVE", "software")
	id := enclaveAudit(t, env, srv)
	res := certificatePillars(t, env, id, srv)
	p := res.Pillar(evidence.PillarEnclave)
	if !res.Valid || len(res.Pillars) != 6 || !p.OK || !strings.Contains(p.Note, "software-hardened guard worker") {
		t.Fatalf("certificate: valid %v, %d pillars, enclave pillar %+v; want six valid pillars", res.Valid, len(res.Pillars), p)
	}
}
