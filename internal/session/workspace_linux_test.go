//go:build linux

package session

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/verdict"
)

// overlayFixture is the session fixture in overlay mode with a workspace
// the sandbox user can write through the overlay (the merged root takes
// the workspace root's owner and mode).
func overlayFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	if err := os.Chmod(f.ws, 0o777); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"main.txt": "alpha\nold line\nomega\n", "old.txt": "move me\n", "del.txt": "delete me\n"} {
		if err := os.WriteFile(filepath.Join(f.ws, name), []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	f.rt.Workspace = config.WorkspaceOverlay
	f.rt.OverlayRoot = OverlayRoot(f.cfg.DataDir)
	return f
}

// snapshot is the real workspace's files and contents.
func snapshot(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type diffPayload struct {
	Step      int                 `json:"step"`
	IntentID  string              `json:"intent_id"`
	Changes   []overlay.Change    `json:"changes"`
	Forbidden []overlay.Forbidden `json:"forbidden"`
	Accepted  bool                `json:"accepted"`
}

// TestOverlayModeSession runs commands of one session in overlay mode on
// the real native tier and a real ledger: a build writing artefacts, a
// formatter rewriting a file (sed -i), a deletion and a rename; a later
// command sees the earlier changes; a forbidden path fails the action and
// discards its layer; a secret written to a file reaches no stored byte;
// the real workspace never changes; a second session on the same
// workspace sees none of the first's changes; every step's workspace_diff
// sits between its sandbox_result and its observation; the session
// verifies, and an edited workspace_diff breaks verification.
func TestOverlayModeSession(t *testing.T) {
	f := overlayFixture(t)
	ctx := context.Background()
	pol, err := policy.Parse("p.toml", []byte("name = \"p\"\n[workspace]\nforbidden_paths = [\"**/.env\"]\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := f.spec("build and format", nil)
	spec.Policy = pol
	before := snapshot(t, f.ws)
	s, err := Create(ctx, f.rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	step := func(n int, cmd string) *agent.StepResult {
		t.Helper()
		res, err := s.Step(ctx, n, execIntent(t, "run_command", "command", cmd), agent.SourceAPI)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.Allowed() {
			t.Fatalf("step %d %q denied: %+v", n, cmd, res.Check.Decisive)
		}
		if res.Sandbox == nil || res.Sandbox.ExitCode == nil || *res.Sandbox.ExitCode != 0 {
			t.Fatalf("step %d %q: %+v", n, cmd, res.Sandbox)
		}
		return res
	}
	r1 := step(1, "mkdir -p build && echo artefact > build/out.bin && sed -i 's/old line/new line/' main.txt")
	if r1.Workspace == nil || !r1.Workspace.Accepted {
		t.Fatalf("step 1 workspace %+v; want accepted", r1.Workspace)
	}
	r2 := step(2, "cat build/out.bin main.txt && rm del.txt && mv old.txt renamed.txt")
	if !strings.Contains(r2.Observation.Content, "artefact") || !strings.Contains(r2.Observation.Content, "new line") {
		t.Fatalf("step 2 does not see step 1's changes: %q", r2.Observation.Content)
	}
	const token = "ghp_r8sk2mp9qx4vt7wl1nb6cj3hf5dg0azye2uq"
	r3, err := s.Step(ctx, 3, execIntent(t, "run_command", "command", "echo hi > sub.txt; mkdir -p cfg && echo KEY=1 > cfg/.env"), agent.SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Workspace == nil || r3.Workspace.Accepted || len(r3.Workspace.Forbidden) != 1 || r3.Workspace.Forbidden[0].Change.Path != "cfg/.env" {
		t.Fatalf("step 3 workspace %+v; want the layer refused for cfg/.env", r3.Workspace)
	}
	for _, want := range []string{"[workspace] action failed: the policy forbids changing 1 path(s)", `[workspace] forbidden: cfg/.env (added) matches forbidden_paths "**/.env"`} {
		if !strings.Contains(r3.Observation.Content, want) {
			t.Fatalf("step 3 observation %q lacks %q", r3.Observation.Content, want)
		}
	}
	// The discarded layer is gone: the next command sees neither file.
	step(4, "test ! -e sub.txt && test ! -e cfg/.env && echo 'token "+token+"' > secret.txt")

	// A script an earlier command wrote in the overlay is unreviewed code:
	// the tripwire reads the real workspace, the command would run the
	// overlay's version.
	r5, err := s.Step(ctx, 5, execIntent(t, "run_command", "command", "sh build/out.bin"), agent.SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if r5.Check.Allowed() || r5.Check.Decisive.Code != verdict.CmdDynamicProgram {
		t.Fatalf("running a script the session wrote: %+v; want cmd_dynamic_program", r5.Check.Decisive)
	}
	if after := snapshot(t, f.ws); !maps(before, after) {
		t.Fatalf("the real workspace changed: %v -> %v", before, after)
	}
	// A second session on the same workspace sees none of it.
	s2, err := Create(ctx, f.rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	r := func() *agent.StepResult {
		res, err := s2.Step(ctx, 1, execIntent(t, "run_command", "command", "test ! -e build && test -e del.txt && grep -q 'old line' main.txt"), agent.SourceAPI)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}()
	if r.Sandbox == nil || *r.Sandbox.ExitCode != 0 {
		t.Fatalf("the second session sees the first's changes: %+v %q", r.Sandbox, r.Observation.Content)
	}

	evs, err := f.rt.Ledger.Events(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var genesis struct {
		Workspace *ledger.SessionWorkspace `json:"workspace"`
	}
	if err := json.Unmarshal(evs[0].Payload, &genesis); err != nil || genesis.Workspace == nil || genesis.Workspace.Mode != "overlay" ||
		!slices.Equal(genesis.Workspace.ForbiddenPaths, []string{"**/.env"}) {
		t.Fatalf("genesis %s; want the overlay mode and the forbidden paths", evs[0].Payload)
	}
	var diffs []diffPayload
	var diffEvs []ledger.Event
	for i, e := range evs {
		if bytes.Contains(e.Payload, []byte(token)) {
			t.Fatalf("%s event %d stores the token: %s", e.Type, e.Seq, e.Payload)
		}
		if e.Type != ledger.TypeWorkspaceDiff {
			continue
		}
		if evs[i-1].Type != ledger.TypeSandboxResult || evs[i+1].Type != ledger.TypeObservation {
			t.Fatalf("workspace_diff %d between %s and %s; want sandbox_result and observation", e.Seq, evs[i-1].Type, evs[i+1].Type)
		}
		var p diffPayload
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		diffs, diffEvs = append(diffs, p), append(diffEvs, e)
	}
	if len(diffs) != 4 {
		t.Fatalf("%d workspace_diff events; want 4", len(diffs))
	}
	ops := func(p diffPayload) string {
		var out []string
		for _, c := range p.Changes {
			out = append(out, string(c.Op)+" "+c.Path)
		}
		return strings.Join(out, ", ")
	}
	for i, want := range []string{
		"added build, added build/out.bin, modified main.txt",
		"deleted del.txt, renamed renamed.txt",
		"added cfg, added cfg/.env, added sub.txt",
		"added secret.txt",
	} {
		if got := ops(diffs[i]); got != want || diffs[i].Step != i+1 || diffs[i].Accepted != (i != 2) {
			t.Fatalf("workspace_diff of step %d: %s accepted=%v; want %s", diffs[i].Step, got, diffs[i].Accepted, want)
		}
	}
	if d := diffs[0].Changes[2].Diff; !strings.Contains(d, "-old line") || !strings.Contains(d, "+new line") {
		t.Fatalf("the formatter's diff %q", d)
	}
	if d := diffs[3].Changes[0].Diff; !strings.Contains(d, "[REDACTED:github-pat") {
		t.Fatalf("the secret's diff is recorded as %q; want a redaction placeholder", d)
	}
	if diffs[1].Changes[1].From != "old.txt" {
		t.Fatalf("rename %+v; want from old.txt", diffs[1].Changes[1])
	}

	rep, err := f.rt.Ledger.VerifySession(ctx, s.ID)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	db, err := sql.Open("sqlite", filepath.Join(f.cfg.DataDir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TRIGGER events_no_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '"accepted":false', '"accepted":true') AS BLOB) WHERE session_id = ? AND seq = ?`, s.ID[:], diffEvs[2].Seq); err != nil {
		t.Fatal(err)
	}
	if rep, err := f.rt.Ledger.VerifySession(ctx, s.ID); err == nil && rep.OK() {
		t.Fatal("an edited workspace_diff event verifies")
	}
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestOverlayModeRefusesOtherTiers: the permissive tier ignores
// Request.Overlay and would run commands on the real workspace, so a
// session in overlay mode on it is not created, and the error names the
// fix. (The Firecracker tier is refused by the same switch: it aborts
// every overlay-mode run, TestMicroVMAbortsOverlayMode.)
func TestOverlayModeRefusesOtherTiers(t *testing.T) {
	f := overlayFixture(t)
	f.rt.Tier = sandbox.NewPermissive(sandbox.Options{})
	_, err := Create(context.Background(), f.rt, f.spec("write", nil))
	if err == nil || !strings.Contains(err.Error(), "needs the native or the Podman sandbox tier") || !strings.Contains(err.Error(), "ECTO_SANDBOX_WORKSPACE=ro") {
		t.Fatalf("overlay mode on the permissive tier: %v", err)
	}
}
