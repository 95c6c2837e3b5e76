//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// events reads a session's events from the ledger of env.
func events(t *testing.T, env map[string]string, id string) []ledger.Event {
	t.Helper()
	l := openTestLedger(t, env)
	defer l.Close(context.Background())
	evs, err := l.Events(context.Background(), uuid.MustParse(id), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// sessionOf is the session exec names on stderr.
func sessionOf(t *testing.T, stderr string) string {
	t.Helper()
	return wordAfter(t, stderr, "recorded in session ")
}

// wordAfter returns the word that follows marker in text.
func wordAfter(t *testing.T, text, marker string) string {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no %q in:\n%s", marker, text)
	}
	return strings.Fields(text[i+len(marker):])[0]
}

func types(evs []ledger.Event) string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return strings.Join(out, " ")
}

func TestExecRecordsAndPassesExitCodes(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(ws, "app.conf"), []byte("user=admin\npassword=hunter2\n"), 0o644)
	env := cliEnv(t, "DATABASE_URL", "")

	code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--policy", "owasp-top10", "--", "cat app.conf; exit 3")
	// What exec prints is what an agent using it as its shell would read:
	// credentials are replaced there too.
	if code != 3 || !strings.Contains(out, "user=admin\npassword=[REDACTED:") || strings.Contains(out+errOut, "hunter2") {
		t.Fatalf("exit %d; want the command's 3 and the password redacted; stdout %q stderr %q", code, out, errOut)
	}
	id := sessionOf(t, errOut)
	evs := events(t, env, id)
	want := "genesis prompt_input intent_proposed check_verdict check_verdict check_verdict check_verdict action sandbox_result observation session_sealed"
	if got := types(evs); got != want {
		t.Fatalf("events %q; want %q", got, want)
	}
	obs := string(evs[9].Payload)
	if strings.Contains(obs, "hunter2") || !strings.Contains(obs, "[REDACTED:password]") || !strings.Contains(obs, "[exit 3]") {
		t.Fatalf("observation not redacted by the policy: %s", obs)
	}
	if sr := string(evs[8].Payload); strings.Contains(sr, "hunter2") || !strings.Contains(sr, `"stdout_sha256"`) || !strings.Contains(sr, `"status":"ok"`) {
		t.Fatalf("sandbox_result must not store the raw stream: %s", sr)
	}
	if code, _, errOut := runCLI(t, env, "", "verify-session", id); code != 0 {
		t.Fatalf("verify-session: exit %d %s", code, errOut)
	}

	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--", "sudo", "id")
	if code != ExitExecDenied || !strings.Contains(errOut, "denied by tripwire: cmd_banned_program") {
		t.Fatalf("denied: exit %d %s", code, errOut)
	}
	evs = events(t, env, sessionOf(t, errOut))
	if got := types(evs); got != "genesis prompt_input intent_proposed check_verdict check_verdict check_verdict session_sealed" {
		t.Fatalf("denied events %q", got)
	}

	// An escape attempt the checks cannot see runs, and the sandbox stops
	// it: the command's own failure code comes back, not 125.
	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--", "python3 -c \"open('/etc/ironvise-escape','w')\"")
	if code == 0 || code == ExitExecAborted {
		t.Fatalf("escape via python: exit %d %s", code, errOut)
	}
	if _, err := os.Stat("/etc/ironvise-escape"); err == nil {
		os.Remove("/etc/ironvise-escape")
		t.Fatal("the sandbox let a write to /etc through")
	}

	// --session appends a step to a running session.
	var sid string
	{
		cfg, _ := config.Load(config.MapLookup(env))
		l, err := ledgerdb.Open(context.Background(), cfg.Ledger.DatabaseURL, 5, ledger.Options{DataDir: cfg.DataDir})
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.CreateSession(context.Background(), ledger.SessionSpec{Goal: "external agent session", SandboxTier: "native-linux"})
		if err != nil {
			t.Fatal(err)
		}
		sid = s.ID.String()
		l.Close(context.Background())
	}
	for i := 0; i < 2; i++ {
		if code, _, errOut := runCLI(t, env, "", "exec", "--session", sid, "--workspace", ws, "--", "true"); code != 0 {
			t.Fatalf("--session step %d: exit %d %s", i, code, errOut)
		}
	}
	evs = events(t, env, sid)
	steps := 0
	for _, e := range evs {
		if e.Type == ledger.TypeIntentProposed {
			var p struct{ Step int }
			json.Unmarshal(e.Payload, &p)
			steps++
			if p.Step != steps {
				t.Fatalf("step numbers: got %d at position %d", p.Step, steps)
			}
		}
	}
	if steps != 2 || strings.Contains(types(evs), "session_sealed") {
		t.Fatalf("--session: %d steps, events %s", steps, types(evs))
	}
	if code, _, errOut := runCLI(t, env, "", "exec", "--session", uuid.NewString(), "--workspace", ws, "--", "true"); code != 2 {
		t.Fatalf("unknown session: exit %d %s", code, errOut)
	}
}

func TestExecPermissiveAndTimeout(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t, "ECTO_SANDBOX_PERMISSIVE", "true")
	code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "echo hi")
	if code != 0 || out != "hi\n" || !strings.Contains(errOut, "WITHOUT OS confinement") {
		t.Fatalf("permissive: exit %d out %q err %q", code, out, errOut)
	}
	evs := events(t, env, sessionOf(t, errOut))
	if !strings.Contains(string(evs[len(evs)-3].Payload), `"status":"permissive"`) {
		t.Fatalf("permissive not recorded: %s", evs[len(evs)-3].Payload)
	}
	env = cliEnv(t, "ECTO_SANDBOX_TIMEOUT_SECS", "1")
	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--", "sleep 5")
	if code != 128+9 && code != 128+15 {
		t.Fatalf("timeout: exit %d; want 128 + the signal (%s)", code, errOut)
	}
}
