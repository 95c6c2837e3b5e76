//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/ledger/ledgertest"
)

// shortTiming is a ledger lease and a per-write deadline of one second:
// the commands of these tests run for three, so on code that does not
// renew the lease while a command runs, or that takes one deadline for a
// whole step, the record is lost exactly as with a real 30 s lease and a
// 40 s command.
var shortTiming = ledgerTiming{lease: time.Second, write: time.Second}

// runTimed runs the command line in-process with timing in force.
func runTimed(t *testing.T, env map[string]string, timing ledgerTiming, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runTimedCtx(t, context.Background(), env, timing, stdin, args...)
}

// runTimedCtx is runTimed under ctx (an interrupt is ctx's cancellation,
// as cmd/ironvise wires SIGINT).
func runTimedCtx(t *testing.T, ctx context.Context, env map[string]string, timing ledgerTiming, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{ctx: ctx, stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, lookup: config.MapLookup(env), timing: timing}
	code = a.run(append([]string{"ironvise"}, args...))
	return code, out.String(), errb.String()
}

// openTestLedger opens the ledger of env as another IronVise process would
// (its own lease owner).
func openTestLedger(t *testing.T, env map[string]string) *ledger.Ledger {
	t.Helper()
	l, err := openLedgerOf(env)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func openLedgerOf(env map[string]string) (*ledger.Ledger, error) {
	cfg, err := config.Load(config.MapLookup(env))
	if err != nil {
		return nil, err
	}
	return ledgerdb.Open(context.Background(), cfg.Ledger.DatabaseURL, cfg.Ledger.PoolSize, ledger.Options{DataDir: cfg.DataDir})
}

// recoverAfter is a second process starting on env's ledger after d, while
// the command runs (ledgertest.RecoverAfter).
func recoverAfter(t *testing.T, env map[string]string, d time.Duration) <-chan []uuid.UUID {
	return ledgertest.RecoverAfter(t, d, func() (*ledger.Ledger, error) { return openLedgerOf(env) })
}

// sessionRow reads a session's row.
func sessionRow(t *testing.T, env map[string]string, id string) *ledger.Session {
	t.Helper()
	l := openTestLedger(t, env)
	defer l.Close(context.Background())
	s, err := l.Session(context.Background(), uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// payloadOf returns the payload of the only event of type typ.
func payloadOf(t *testing.T, evs []ledger.Event, typ string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, e := range evs {
		if e.Type == typ {
			var m map[string]any
			if err := json.Unmarshal(e.Payload, &m); err != nil {
				t.Fatal(err)
			}
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events in %s; want one", len(found), typ, types(evs))
	}
	return found[0]
}

// warmLedger creates the data dir's ledger and issuer key with a quick
// command, so that the recovering process can open it while the command
// under test runs.
func warmLedger(t *testing.T, env map[string]string, ws string) {
	t.Helper()
	if code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "true"); code != 0 {
		t.Fatalf("first exec: exit %d %s", code, errOut)
	}
}

// TestExecRecordsCommandLongerThanLease: a command that runs three times
// as long as the ledger's lease and a step's write deadline, within its
// own limit, is recorded completely; another process starting meanwhile
// finds the lease live and leaves the session alone.
func TestExecRecordsCommandLongerThanLease(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t)
	warmLedger(t, env, ws)
	recovered := recoverAfter(t, env, 2*time.Second)
	code, out, errOut := runTimed(t, env, shortTiming, "", "exec", "--workspace", ws, "--", "sleep 3; echo long-done")
	if code != 0 || out != "long-done\n" {
		t.Fatalf("exit %d, stdout %q; want 0 and the command's output (stderr: %s)", code, out, errOut)
	}
	if got := <-recovered; len(got) != 0 {
		t.Fatalf("another process recovered %v while the command ran: the lease was not renewed", got)
	}
	id := sessionOf(t, errOut)
	evs := events(t, env, id)
	const want = "genesis prompt_input intent_proposed check_verdict check_verdict check_verdict check_verdict action sandbox_result observation session_sealed"
	if got := types(evs); got != want {
		t.Fatalf("events %q; want %q", got, want)
	}
	if sr := payloadOf(t, evs, ledger.TypeSandboxResult); sr["status"] != "ok" || sr["exit_code"] != float64(0) {
		t.Fatalf("sandbox_result %v; want status ok, exit 0", sr)
	}
	if obs := payloadOf(t, evs, ledger.TypeObservation); !strings.Contains(obs["content"].(string), "long-done") {
		t.Fatalf("observation %v lacks the output", obs)
	}
	if s := sessionRow(t, env, id); s.Status != ledger.StatusCompleted || !s.Sealed() {
		t.Fatalf("session %s, sealed %v; want completed and sealed", s.Status, s.Sealed())
	}
	if code, _, errOut := runCLI(t, env, "", "verify-session", id); code != 0 {
		t.Fatalf("verify-session: exit %d %s", code, errOut)
	}
}

// TestExecTimeoutRecordedAs137: a command that hits the wall-clock limit,
// which is itself longer than the lease and the write deadline, is
// recorded as a timeout with its output so far, and exec exits with 137
// (128 + SIGKILL, docs/reference/sandboxing.md).
func TestExecTimeoutRecordedAs137(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t, "ECTO_SANDBOX_TIMEOUT_SECS", "2")
	code, out, errOut := runTimed(t, env, shortTiming, "", "exec", "--workspace", ws, "--", "echo started; sleep 30")
	if code != 137 {
		t.Fatalf("exit %d; want 137 (stderr: %s)", code, errOut)
	}
	if out != "started\n" || !strings.Contains(errOut, "wall-clock timeout of 2 s exceeded") {
		t.Fatalf("stdout %q, stderr %q; want the output so far and the timeout", out, errOut)
	}
	id := sessionOf(t, errOut)
	evs := events(t, env, id)
	sr := payloadOf(t, evs, ledger.TypeSandboxResult)
	if sr["status"] != "timeout" || sr["signal"] != "SIGKILL" || sr["exit_code"] != nil {
		t.Fatalf("sandbox_result %v; want status timeout, signal SIGKILL, no exit code", sr)
	}
	obs := payloadOf(t, evs, ledger.TypeObservation)["content"].(string)
	if !strings.HasPrefix(obs, "[timeout after 2 s]") || !strings.Contains(obs, "started") {
		t.Fatalf("observation %q; want the timeout headline and the output", obs)
	}
	if s := sessionRow(t, env, id); s.Status != ledger.StatusCompleted || !s.Sealed() {
		t.Fatalf("session %s, sealed %v; want completed and sealed", s.Status, s.Sealed())
	}
}

// TestAuditRecordsCommandLongerThanLease is the agent loop's path: a step
// whose command outlasts the lease and the write deadline is recorded, and
// the loop goes on to complete and seal the session.
func TestAuditRecordsCommandLongerThanLease(t *testing.T) {
	ws := t.TempDir()
	script := writeScript(t,
		`{"role":"agent","content":"{\"action\":\"run_command\",\"params\":{\"command\":\"sleep 3; echo long-done\"},\"justification\":\"wait for the slow job\"}"}`,
		`{"role":"agent","content":"{\"action\":\"complete\",\"params\":{\"findings\":[]},\"justification\":\"the slow job finished\"}"}`,
	)
	env := cliEnv(t, "LLM_BACKEND", "mock", "MOCK_LLM_SCRIPT", script, "GUARD_REQUIRED", "false")
	warmLedger(t, env, ws)
	recovered := recoverAfter(t, env, 2*time.Second)
	code, out, errOut := runTimed(t, env, shortTiming, "", "audit", "Wait for the slow job", "--workspace", ws)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if got := <-recovered; len(got) != 0 {
		t.Fatalf("another process recovered %v while the command ran: the lease was not renewed", got)
	}
	id := sessionFromSummary(t, out)
	evs := events(t, env, id)
	if sr := payloadOf(t, evs, ledger.TypeSandboxResult); sr["status"] != "ok" || sr["exit_code"] != float64(0) {
		t.Fatalf("sandbox_result %v; want status ok, exit 0", sr)
	}
	if obs := payloadOf(t, evs, ledger.TypeObservation); !strings.Contains(obs["content"].(string), "long-done") {
		t.Fatalf("observation %v lacks the output", obs)
	}
	if strings.Contains(types(evs), ledger.TypeRecovery) {
		t.Fatalf("events %s: the session was recovered while it ran", types(evs))
	}
	if s := sessionRow(t, env, id); s.Status != ledger.StatusCompleted || !s.Sealed() {
		t.Fatalf("session %s, sealed %v; want completed and sealed", s.Status, s.Sealed())
	}
}

// TestExecInterruptedIsRecorded: Ctrl-C while the command runs stops the
// command, and its end is still recorded and sealed (aborted), although
// the command's context has been cancelled by then.
func TestExecInterruptedIsRecorded(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(time.Second, cancel)
	code, _, errOut := runTimedCtx(t, ctx, env, shortTiming, "", "exec", "--workspace", ws, "--", "sleep 30")
	if code != ExitExecAborted {
		t.Fatalf("exit %d; want %d (stderr: %s)", code, ExitExecAborted, errOut)
	}
	if strings.Contains(errOut, "interrupted before the command ran") {
		// On a loaded machine the interrupt can land while the ledger
		// opens: nothing ran and no session exists to record it.
		if strings.Contains(errOut, "recorded in session") {
			t.Fatalf("start-up interrupt names a session: %s", errOut)
		}
		return
	}
	id := sessionOf(t, errOut)
	evs := events(t, env, id)
	// On a loaded machine the interrupt can land before the command
	// starts: then there is no sandbox_result, and the exit code and the
	// session still say aborted.
	if strings.Contains(types(evs), ledger.TypeSandboxResult) {
		if sr := payloadOf(t, evs, ledger.TypeSandboxResult); sr["status"] != "aborted" || !strings.Contains(sr["reason"].(string), "cancel") {
			t.Fatalf("sandbox_result %v; want aborted by the cancellation", sr)
		}
	}
	if s := sessionRow(t, env, id); s.Status != ledger.StatusAborted || !s.Sealed() {
		t.Fatalf("session %s, sealed %v; want aborted and sealed", s.Status, s.Sealed())
	}
}

// An interrupt that lands before the ledger is open is exec's aborted exit
// (nothing ran), not a usage error: the command line was fine.
func TestExecInterruptedDuringStartup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, errOut := runTimedCtx(t, ctx, cliEnv(t), shortTiming, "", "exec", "--workspace", t.TempDir(), "--", "true")
	if code != ExitExecAborted || !strings.Contains(errOut, "interrupted before the command ran") {
		t.Fatalf("exit %d, stderr %q; want %d and the interrupt named", code, errOut, ExitExecAborted)
	}
	if strings.Contains(errOut, "Run 'ironvise") || strings.Contains(errOut, "recorded in session") {
		t.Fatalf("start-up interrupt shows a usage hint or a session: %s", errOut)
	}
}
