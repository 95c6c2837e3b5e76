//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/redact"
	"github.com/ironvise/ironvise/internal/session"
)

// Test secrets: shaped like real ones, issued by no one.
const (
	e2eAWSKeyID  = "AKIAZ7VQX3L4M5N6P2R4"
	e2eAWSSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8rT3vW9x"
	e2eStripe    = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq"
	e2eDBPass    = "S3cr3t-Passw0rd"
	e2ePEMLine1  = "MIIEpAIBAAKCAQEA1c3Kx3B0n1mK3w0Z0d1s2q3w4e5r6t7y8u9i0o1p2a3s4d5f"
	e2ePEMLine2  = "6g7h8j9k0l1z2x3c4v5b6n7m8q9w0e1r2t3y4u5i6o7p8a9s0d1f2g3h4j5k6l7z"
)

// e2eSecrets are the strings that must not leave: each secret, and for the
// key, each line of its body.
var e2eSecrets = []string{e2eAWSKeyID, e2eAWSSecret, e2eStripe, e2eDBPass, e2ePEMLine1, e2ePEMLine2}

// recordingLLM keeps every request the model is sent. The replies come from
// the deterministic mock; a reply may say {{OBS_SEQ}}, which becomes the
// sequence the prompt offers for citing the latest observation, as a model
// citing what it read would write.
type recordingLLM struct {
	llm.Client
	mu   sync.Mutex
	reqs []llm.Request // guarded by mu
}

var citeSeq = regexp.MustCompile(`cite as evidence_sequence (\d+)`)

// Complete implements llm.Client.
func (r *recordingLLM) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	resp, err := r.Client.Complete(ctx, req)
	if err == nil && strings.Contains(resp.Text, "{{OBS_SEQ}}") {
		seq := "0"
		for _, m := range req.Messages {
			if all := citeSeq.FindAllStringSubmatch(m.Content, -1); len(all) > 0 {
				seq = all[len(all)-1][1]
			}
		}
		resp.Text = strings.ReplaceAll(resp.Text, "{{OBS_SEQ}}", seq)
	}
	return resp, err
}

// sent returns everything the model was sent, as one text.
func (r *recordingLLM) sent() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, q := range r.reqs {
		b.WriteString(q.System)
		for _, m := range q.Messages {
			b.WriteString(m.Content)
		}
	}
	return b.String()
}

// TestAuditKeepsSecretsFromEveryOutput is the audit of issue "secrets reach
// the model in cleartext": a session that cats a file holding an AWS key
// pair, a Stripe live key, a database URL with a password and a PEM private
// key, through the audit's own path (runAgent: real SQLite ledger, real
// sandbox tier, the live log), with and without a policy. No secret may
// reach the model, the ledger's storage, the live log or an exported
// report; a critical finding that quotes the redacted evidence is accepted
// and verified, and its placeholder confirms the key under the session id.
func TestAuditKeepsSecretsFromEveryOutput(t *testing.T) {
	for _, policy := range []string{"", "soc2-audit"} {
		t.Run("policy="+policy, func(t *testing.T) {
			ws, _ := filepath.EvalSymlinks(t.TempDir())
			secrets := "# production settings\nAWS_ACCESS_KEY_ID=" + e2eAWSKeyID + "\nAWS_SECRET_ACCESS_KEY=" + e2eAWSSecret +
				"\nSTRIPE_SECRET_KEY=" + e2eStripe + "\nDATABASE_URL=postgres://app:" + e2eDBPass + "@db.internal:5432/prod\n" +
				"-----BEGIN RSA PRIVATE KEY-----\n" + e2ePEMLine1 + "\n" + e2ePEMLine2 + "\n-----END RSA PRIVATE KEY-----\n"
			if err := os.WriteFile(filepath.Join(ws, "secrets.env"), []byte(secrets), 0o644); err != nil {
				t.Fatal(err)
			}
			dataDir := t.TempDir()
			env := cliEnv(t, "ECTO_DATA_DIR", dataDir, "LLM_BACKEND", "mock")
			quote := "AWS_ACCESS_KEY_ID=[REDACTED:aws-access-token:hmac-sha256="
			script := []llm.ScriptEntry{
				{Role: llm.ScriptAgent, Content: `{"action":"run_command","params":{"command":"cat secrets.env"},"justification":"look for exposed credentials"}`},
				{Role: llm.ScriptAgent, Content: `{"action":"complete","params":{"findings":[{"severity":"critical","title":"AWS key committed in secrets.env",` +
					`"evidence":"secrets.env holds an AWS access key id and secret, a Stripe live key, a database password and a private key",` +
					`"recommendation":"rotate every credential and remove the file","evidence_sequence":[{{OBS_SEQ}}],"evidence_quotes":["` + quote + `"]}]}}`},
			}
			model := &recordingLLM{Client: llm.NewMock(script, llm.MockOptions{})}
			var out, errOut bytes.Buffer
			a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, lookup: config.MapLookup(env)}
			r, err := a.loadRules(ws, policy, "")
			if err != nil {
				t.Fatal(err)
			}
			g, err := a.startGuard(r.cfg, guard.Flags{NoGuard: true, NoGuardConfirmed: true})
			if err != nil {
				t.Fatal(err)
			}
			o, err := a.runAgent(r.cfg, session.Spec{Goal: "Review this repo for exposed secrets", Workspace: ws, Tripwire: r.tw, Policy: r.pol,
				LLM: model, Guard: g, Limits: session.Limits(r.cfg.Agent, r.pol, 0, false)})
			if err != nil {
				t.Fatalf("audit: %v\n%s\n%s", err, out.String(), errOut.String())
			}
			if o.Status != "completed" || len(o.Findings) != 1 {
				t.Fatalf("audit ended %s (%s: %s) with %d findings; want completed with the finding accepted\n%s", o.Status, o.Stop, o.StopMessage, len(o.Findings), out.String())
			}
			id := o.SessionID

			// What the model read: the placeholders, never a secret.
			sent := model.sent()
			if !strings.Contains(sent, "[REDACTED:aws-access-token:hmac-sha256=") || !strings.Contains(sent, "[REDACTED:private-key:hmac-sha256=") {
				t.Errorf("the model was not shown the placeholders:\n%s", sent)
			}
			assertNoSecret(t, "what the model received", sent)
			// The live log.
			assertNoSecret(t, "the live log", out.String()+errOut.String())

			// The ledger: every event of the session, and every byte the
			// database wrote to disk.
			l, err := a.openLedger()
			if err != nil {
				t.Fatal(err)
			}
			sid := uuid.MustParse(id)
			evs, err := l.Events(context.Background(), sid, 0, 0)
			closeLedger(l)
			if err != nil {
				t.Fatal(err)
			}
			var placeholder string
			for _, e := range evs {
				assertNoSecret(t, "ledger event "+e.Type, string(e.Payload))
				if e.Type == "observation" {
					var p struct {
						Content string `json:"content"`
					}
					if err := json.Unmarshal(e.Payload, &p); err != nil {
						t.Fatal(err)
					}
					placeholder = regexp.MustCompile(`\[REDACTED:aws-access-token:hmac-sha256=[0-9a-f]{16}\]`).FindString(p.Content)
				}
			}
			if placeholder == "" || !redact.Confirm(placeholder, []byte(id), e2eAWSKeyID) {
				t.Errorf("the observation's placeholder %q does not confirm the key id under the session id", placeholder)
			}
			filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					b, _ := os.ReadFile(path)
					assertNoSecret(t, "ledger file "+filepath.Base(path), string(b))
				}
				return nil
			})

			// The exported report: no secret, and the finding's citation
			// of the redacted evidence is verified.
			code, rep, repErr := runCLI(t, env, "", "report", id, "--format", "json")
			if code != 0 && code != 1 { // 1: the CI gate fails on a critical finding
				t.Fatalf("report: exit %d %s", code, repErr)
			}
			assertNoSecret(t, "the report", rep)
			var report struct {
				Findings []struct {
					Locations []struct {
						Quote    string `json:"quote"`
						Verified bool   `json:"verified"`
					} `json:"locations"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(rep), &report); err != nil {
				t.Fatalf("report: %v\n%s", err, rep)
			}
			if len(report.Findings) != 1 || len(report.Findings[0].Locations) != 1 || !report.Findings[0].Locations[0].Verified ||
				report.Findings[0].Locations[0].Quote != quote {
				t.Errorf("the finding's citation is not verified: %s", rep)
			}
			if code, o, e := runCLI(t, env, "", "verify-session", id); code != 0 {
				t.Fatalf("verify-session: exit %d %s %s", code, o, e)
			}
		})
	}
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range e2eSecrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q", where, s)
		}
	}
}
