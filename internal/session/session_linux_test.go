//go:build linux

package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// fixture is a real SQLite ledger, the real native tier (the one the
// configuration selects on this host) and a workspace with one file.
type fixture struct {
	rt  *Runtime
	cfg *config.Config
	ws  string
	tw  *tripwire.Tripwire
	// notified are the events the runtime's notifier received.
	mu       sync.Mutex
	notified []ledger.Event
}

// Notify implements agent.Notifier.
func (f *fixture) Notify(ev ledger.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notified = append(f.notified, ev)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	cfg, err := config.Load(config.MapLookup(map[string]string{"HOME": t.TempDir(), "ECTO_DATA_DIR": data, "LLM_BACKEND": "mock", "ECTO_SANDBOX_TIER": "native"}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledgerdb.Open(ctx, "sqlite://"+filepath.Join(data, "ledger.db"), 1, ledger.Options{DataDir: data, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The sandboxed command runs as another user: it must be able to
	// read the workspace.
	os.Chmod(ws, 0o755)
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("PermitRootLogin yes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := TierOptions(cfg.Sandbox, "", nil)
	opts.Hidden = []string{data}
	tier, err := sandbox.Select(opts, TierFactories(ctx))
	if err != nil {
		t.Skipf("the native tier is not available here: %v", err)
	}
	if tier.Name() != sandbox.TierNativeLinux {
		t.Fatalf("sandbox.Select chose %s; want the native tier", tier.Name())
	}
	sc, err := NewScanner(cfg.Scanner.Sensitivity)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := tripwire.LoadConfigBytes(nil, tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cfg: cfg, ws: ws, tw: tripwire.New(tc, tripwire.Options{Workspace: ws})}
	f.rt = &Runtime{Ledger: l, Tier: tier, Scanner: sc, Notifier: f}
	return f
}

// spec is a session of the fixture without a guard.
func (f *fixture) spec(goal string, client llm.Client) Spec {
	return Spec{Goal: goal, Workspace: f.ws, Tripwire: f.tw, Guard: GuardSkipped(guard.SkipFlag), LLM: client,
		Limits: Limits(f.cfg.Agent, nil, 0, false)}
}

func (f *fixture) types(t *testing.T, id string) []string {
	t.Helper()
	s := f.session(t, id)
	evs, err := f.rt.Ledger.Events(context.Background(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func (f *fixture) session(t *testing.T, id string) *ledger.Session {
	t.Helper()
	list, err := f.rt.Ledger.Sessions(context.Background(), ledger.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list {
		if list[i].ID.String() == id {
			return &list[i]
		}
	}
	t.Fatalf("session %s not in the ledger", id)
	return nil
}

// mock is the project's mock model replaying replies as the agent.
func mock(t *testing.T, replies ...string) llm.Client {
	t.Helper()
	script := make([]llm.ScriptEntry, len(replies))
	for i, r := range replies {
		script[i] = llm.ScriptEntry{Role: llm.ScriptAgent, Content: r}
	}
	return llm.NewMock(script, llm.MockOptions{})
}

// TestRunRecordsEndsAndSeals runs an agent-loop session end to end: the
// genesis names what the session enforces, the command runs in the native
// tier, and the session ends completed with its credential before the seal.
func TestRunRecordsEndsAndSeals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	client := mock(t,
		`{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the SSH settings"}`,
		`{"action":"complete","params":{"findings":[]},"justification":"nothing more to check"}`)
	pol, err := policy.Parse("p.toml", []byte("name = \"p\"\nmax_steps = 7\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := f.spec("Review the SSH settings", client)
	spec.Policy, spec.Limits = pol, Limits(f.cfg.Agent, pol, 0, false)
	s, err := Create(ctx, f.rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Limits().MaxSteps; got != 7 {
		t.Errorf("Limits().MaxSteps = %d; want the policy's 7", got)
	}
	var reports []agent.StepReport
	out, err := s.Run(ctx, RunOptions{Report: func(r agent.StepReport) { reports = append(reports, r) }})
	if err != nil {
		t.Fatal(err)
	}
	// complete runs nothing: only the command counts as executed
	// (docs/evidence.md#executed-actions).
	if out.Status != ledger.StatusCompleted || out.Executed != 1 {
		t.Fatalf("outcome %s (%s: %s), %d executed; want completed with 1 executed", out.Status, out.Stop, out.StopMessage, out.Executed)
	}
	if len(reports) != 2 || reports[0].Tier != string(sandbox.TierNativeLinux) || !strings.Contains(reports[0].Preview, "PermitRootLogin") {
		t.Fatalf("step reports %+v; want the command's output from the native tier, then the completion", reports)
	}
	rec := f.session(t, s.ID.String())
	if !rec.Sealed() || rec.Status != ledger.StatusCompleted || !rec.AgentLoop || rec.PolicyHash != pol.SHA256() ||
		rec.LLMBackend != llm.BackendMock || rec.SandboxTier != string(sandbox.TierNativeLinux) {
		t.Fatalf("session record %+v; want sealed, completed, agent loop, the policy's hash, the mock model, the native tier", rec)
	}
	evs, err := f.rt.Ledger.Events(ctx, s.ID, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var genesis struct {
		GuardRequired *bool `json:"guard_required"`
	}
	if err := json.Unmarshal(evs[0].Payload, &genesis); err != nil || genesis.GuardRequired == nil || *genesis.GuardRequired {
		t.Fatalf("genesis %s (%v); want guard_required false", evs[0].Payload, err)
	}
	types := f.types(t, s.ID.String())
	if n := len(types); types[n-1] != ledger.TypeSessionSealed || types[n-2] != ledger.TypeVerifiableCredential {
		t.Fatalf("last events %v; want the credential, then the seal", types[max(0, n-3):])
	}
}

// TestStepThenEndAborted is exec's path: one intent of an operator, no
// model, then the end recorded and the chain sealed; an aborted session's
// seal reaches the notifier.
func TestStepThenEndAborted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, err := Create(ctx, f.rt, f.spec("exec: cat ../../etc/shadow", nil))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"action": "read_file", "params": map[string]string{"path": "../../etc/shadow"}, "justification": "read the password hashes"})
	res, err := s.Step(ctx, 1, string(raw), agent.SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if res.Check.Allowed() || res.Committed {
		t.Fatalf("a path escape was allowed: %+v", res.Check.Decisive)
	}
	seal, err := s.End(ctx, ledger.StatusAborted, "operator:test")
	if err != nil {
		t.Fatal(err)
	}
	if seal.Type != ledger.TypeSessionSealed {
		t.Fatalf("End returned a %s event; want the seal", seal.Type)
	}
	rec := f.session(t, s.ID.String())
	if !rec.Sealed() || rec.Status != ledger.StatusAborted || rec.AgentLoop {
		t.Fatalf("session record %+v; want sealed, aborted, not an agent loop", rec)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.notified); n == 0 || f.notified[n-1].Type != ledger.TypeSessionSealed {
		t.Fatalf("the notifier saw %d events, the last not the seal; an aborted session's seal must reach SIEM egress", n)
	}
	// The chain is closed: a second end is refused.
	if _, err := s.End(ctx, ledger.StatusCompleted, "operator:test"); err == nil {
		t.Fatal("a sealed session was ended again")
	}
}

// TestExternalStopsAtTheStepLimit drives submitted intents under the
// session's limits: the last allowed step ends the session failed.
func TestExternalStopsAtTheStepLimit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	spec := f.spec("List the workspace", nil)
	spec.Limits = Limits(config.Agent{}, nil, 1, true)
	s, err := Create(ctx, f.rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	ext := s.External()
	if _, stop, err := ext.PromptScan(ctx); err != nil || stop != nil {
		t.Fatalf("prompt scan: stop %v, err %v", stop, err)
	}
	_, stop, err := ext.Submit(ctx, `{"action":"run_command","params":{"command":"ls"},"justification":"list the workspace files"}`)
	if err != nil {
		t.Fatal(err)
	}
	if stop == nil || stop.Status != ledger.StatusFailed {
		t.Fatalf("stop %+v after the only allowed step; want the step limit, failed", stop)
	}
	if _, _, err := ext.Submit(ctx, `{"action":"run_command","params":{"command":"ls"},"justification":"list the workspace files"}`); !errors.Is(err, agent.ErrClosed) {
		t.Fatalf("a submission after the limit: %v; want agent.ErrClosed", err)
	}
	// Rebuilt from its chain, the session is still over.
	evs, err := f.rt.Ledger.Events(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	again := Bind(f.rt, s.ID, "ignored: the recorded goal wins", spec)
	if again.Goal != "ignored: the recorded goal wins" {
		t.Fatalf("Bind kept goal %q", again.Goal)
	}
	if _, err := again.Resume(evs); err != nil {
		t.Fatalf("resume: %v", err)
	}
}

// TestRunNeedsAModel refuses to start a loop without a model rather than
// record a session that cannot make progress.
func TestRunNeedsAModel(t *testing.T) {
	f := newFixture(t)
	s, err := Create(context.Background(), f.rt, f.spec("exec: ls", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), RunOptions{}); err == nil {
		t.Fatal("Run without a model succeeded")
	}
}
