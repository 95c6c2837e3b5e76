package native

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// These tests run the Seatbelt tier for real on macOS (the public CI,
// .github/workflows/platforms.yml).

func newDarwinTier(t *testing.T) *Tier {
	t.Helper()
	tier, err := New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tier.Available(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tier.(*Tier)
}

func runDarwin(t *testing.T, tier *Tier, ws, command string, timeout time.Duration) sandbox.Result {
	t.Helper()
	r := tier.Run(context.Background(), sandbox.Request{Command: command, Workspace: ws, Timeout: timeout})
	if r.Status == sandbox.StatusAborted || r.Enforced == nil || r.Enforced.SeatbeltProfileSHA256 == "" {
		t.Fatalf("%s: %s (enforced %+v)", command, r.Headline(), r.Enforced)
	}
	return r
}

// TestDarwinSelfTest: `ironvise serve` starts on macOS (before, the
// generic self-test refused the writable workspace the profile grants).
func TestDarwinSelfTest(t *testing.T) {
	if err := newDarwinTier(t).SelfTest(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestDarwinWorkspaceAndQuotes: the workspace is writable, as the profile
// promises, and a command with quotes reaches the shell intact.
func TestDarwinWorkspaceAndQuotes(t *testing.T) {
	tier, ws := newDarwinTier(t), t.TempDir()
	r := runDarwin(t, tier, ws, `printf '[%s]\n' "a b" 'c "d"' > out.txt && cat out.txt`, 30*time.Second)
	if want := "[a b]\n[c \"d\"]\n"; r.ExitCode == nil || *r.ExitCode != 0 || r.Stdout != want {
		t.Fatalf("%s: stdout %q stderr %q; want %q", r.Headline(), r.Stdout, r.Stderr, want)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || !strings.HasPrefix(string(b), "[a b]") {
		t.Fatalf("workspace file: %q, %v", b, err)
	}
}

// TestDarwinBackgroundKilled: a background process is gone when Run
// returns (before, `sleep 999 &` survived and could write the workspace
// between steps).
func TestDarwinBackgroundKilled(t *testing.T) {
	tier := newDarwinTier(t)
	for _, tc := range []struct{ name, command string }{
		{"redirected", "sleep " + sleepMarker(t) + " >/dev/null 2>&1 </dev/null & echo $!"},
		{"holding the output pipe", "sleep " + sleepMarker(t) + " & echo $!"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runDarwin(t, tier, t.TempDir(), tc.command, 30*time.Second)
			pid, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
			if err != nil {
				t.Fatalf("%s: stdout %q: want a pid", r.Headline(), r.Stdout)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			if liveWithin(pid, 2*time.Second) {
				t.Fatalf("background process %d outlived the command", pid)
			}
		})
	}
}

// TestDarwinTimeout: at the wall-clock limit the whole process group is
// killed and the result says so.
func TestDarwinTimeout(t *testing.T) {
	tier := newDarwinTier(t)
	ws := t.TempDir()
	start := time.Now()
	r := runDarwin(t, tier, ws, "sleep "+sleepMarker(t)+" & echo $! > bg.pid; sleep "+sleepMarker(t), 2*time.Second)
	if r.Status != sandbox.StatusTimeout || r.Signal != "SIGKILL" {
		t.Fatalf("%s; want a timeout", r.Headline())
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run returned after %v with a 2 s limit", took)
	}
	b, err := os.ReadFile(filepath.Join(ws, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if liveWithin(pid, 2*time.Second) {
		t.Fatalf("background process %d outlived the timeout", pid)
	}
}

// TestDarwinProtectedPathsDenied: a protected directory inside the
// workspace (a home's ~/.ssh) can be neither read nor written, while the
// rest of the workspace stays usable.
func TestDarwinProtectedPathsDenied(t *testing.T) {
	ws := t.TempDir()
	ssh := filepath.Join(ws, ".ssh")
	if err := os.MkdirAll(ssh, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("PRIVATE-KEY-MATERIAL"), 0o644); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(ssh)
	if err != nil {
		t.Fatal(err)
	}
	tier, err := New(sandbox.Options{Hidden: []string{real}})
	if err != nil {
		t.Fatal(err)
	}
	r := runDarwin(t, tier.(*Tier), ws, `cat .ss?/id_ed25519; echo x > .ssh/new; ls -A .ssh; echo ok > visible.txt && cat visible.txt`, 30*time.Second)
	if strings.Contains(r.Stdout, "PRIVATE-KEY-MATERIAL") || !strings.Contains(r.Stdout, "ok") {
		t.Fatalf("stdout %q stderr %q", r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(ssh, "new")); err == nil {
		t.Fatal("a file was written into the protected directory")
	}
	for _, bad := range []string{"/", ssh} {
		if r := tier.Run(context.Background(), sandbox.Request{Command: "true", Workspace: bad}); r.Status != sandbox.StatusAborted {
			t.Fatalf("workspace %s: %s; want aborted", bad, r.Headline())
		}
	}
}

// TestDarwinProxyModeAborts: proxy mode is not built on this tier: the run
// is aborted before anything runs.
func TestDarwinProxyModeAborts(t *testing.T) {
	tier, ws := newDarwinTier(t), t.TempDir()
	r := tier.Run(context.Background(), sandbox.Request{Command: "touch ran", Workspace: ws, Timeout: 30 * time.Second, Egress: egress.NewRules(nil, nil)})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "proxy mode is not supported on this tier yet") {
		t.Fatalf("%s", r.Headline())
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestDarwinOverlayModeAborts: overlay mode is not built on this tier: the
// run is aborted before anything runs, never run on the real workspace.
func TestDarwinOverlayModeAborts(t *testing.T) {
	tier, ws, dirs := newDarwinTier(t), t.TempDir(), t.TempDir()
	ov := &sandbox.Overlay{Upper: filepath.Join(dirs, "upper"), Work: filepath.Join(dirs, "work")}
	r := tier.Run(context.Background(), sandbox.Request{Command: "touch ran", Workspace: ws, Timeout: 30 * time.Second, Overlay: ov})
	if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "overlay mode is not supported on this tier yet") {
		t.Fatalf("%s", r.Headline())
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}
