package native

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launcherbin"
)

// The launcher program embedded by scripts/build-ironvise.sh is the same
// launch package as the test binary's own launcher, in a program of its
// own. These tests build that program as the script does and run commands
// through it from its sealed memory file: the escape attempts, container
// mode's reaper (which re-executes the program from /proc/self/exe), and
// the tier's choice between it and the test binary.

// errNoGo: the go command, which builds the launcher, is not installed.
var errNoGo = errors.New("the go command is not installed")

// builtLauncher builds package launcherbin/launcher once per test binary,
// as scripts/build-ironvise.sh does, and returns it with its SHA-256.
var builtLauncher = sync.OnceValues(func() (launcherBuild, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return launcherBuild{}, errNoGo
	}
	dir, err := os.MkdirTemp("", "ironvise-launcher-build-")
	if err != nil {
		return launcherBuild{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "launcher")
	cmd := exec.Command(goCmd, "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "github.com/ironvise/ironvise/internal/sandbox/native/launcherbin/launcher")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return launcherBuild{}, errors.New("go build the launcher: " + err.Error() + ": " + string(b))
	}
	b, err := os.ReadFile(out)
	sum := sha256.Sum256(b)
	return launcherBuild{program: b, sha256: hex.EncodeToString(sum[:])}, err
})

type launcherBuild struct {
	program []byte
	sha256  string
}

// useBuiltLauncher makes tier start its launchers from the built launcher
// program, as useEmbedded does with the embedded one.
func useBuiltLauncher(t *testing.T, tier *Tier) *launcherbin.Executable {
	t.Helper()
	b, err := builtLauncher()
	if errors.Is(err, errNoGo) {
		t.Skip("building the launcher program needs the go command: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	e, err := launcherbin.FromBytes(b.program, b.sha256)
	if err != nil {
		t.Fatal(err)
	}
	tier.executable, tier.embedded = e.Path, e
	return e
}

// TestEmbeddedLauncherEscapeSuite runs the key escape attempts through the
// launcher program.
func TestEmbeddedLauncherEscapeSuite(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	useBuiltLauncher(t, tier)
	runEscapeSuiteOn(t, tier, sandbox.Options{}, true)
}

// TestEmbeddedLauncherContainerMode runs the key escape attempts in
// container mode, where the process started is the reaper and starts the
// launcher proper from its own /proc/self/exe: the memory file.
func TestEmbeddedLauncherContainerMode(t *testing.T) {
	opts := sandbox.Options{ContainerMode: true}
	tier := newTestTier(t, opts)
	useBuiltLauncher(t, tier)
	runEscapeSuiteOn(t, tier, opts, true)
}

// TestEmbeddedLauncherRuns checks that a command through the launcher
// program is confined and reported exactly as through the test binary,
// and that the launcher's process runs the memory file, not the test
// binary.
func TestEmbeddedLauncherRuns(t *testing.T) {
	tier := newTestTier(t, sandbox.Options{})
	e := useBuiltLauncher(t, tier)
	fx := newFixture(t)
	r := run(t, tier, fx, "cat /proc/1/cmdline | tr '\\0' ' '; readlink /proc/1/exe; echo ok")
	if r.ExitCode == nil || *r.ExitCode != 0 || !strings.Contains(r.Stdout, "ok") {
		t.Fatalf("command through the launcher program: %+v", r)
	}
	// The command is PID 1 of its namespace: the launcher became it.
	if !strings.HasPrefix(r.Stdout, "sh -c ") && !strings.HasPrefix(r.Stdout, "cat ") {
		t.Errorf("PID 1 of the command's namespace is not the command: %q", r.Stdout)
	}
	// The ready launcher started after that command runs from the memory
	// file.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tier.spares.mu.Lock()
		l := tier.spares.ready
		tier.spares.mu.Unlock()
		if l != nil {
			exe, err := os.Readlink("/proc/" + strconv.Itoa(l.cmd.Process.Pid) + "/exe")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(exe, "/memfd:ironvise-launcher") {
				t.Fatalf("the ready launcher runs %s, not the launcher program's memory file (%s)", exe, e.Path)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no ready launcher within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := tier.Launcher(); !strings.Contains(d, "embedded in this binary") || !strings.Contains(d, e.SHA256) {
		t.Errorf("the doctor's description %q does not name the launcher program %s", d, e.SHA256)
	}
	if r.Enforced == nil || r.Enforced.SeccompProfileSHA256 != tier.seccomp.SHA256 {
		t.Fatalf("enforcement recorded through the launcher program: %+v", r.Enforced)
	}
}

// TestEmbeddedLauncherMismatch refuses a launcher program that is not the
// one the binary was stamped with, a binary stamped with nothing, and a
// program that does not answer as the launcher.
func TestEmbeddedLauncherMismatch(t *testing.T) {
	b, err := builtLauncher()
	if errors.Is(err, errNoGo) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	other := sha256.Sum256([]byte("another build"))
	_, err = launcherbin.FromBytes(b.program, hex.EncodeToString(other[:]))
	if err == nil || !strings.Contains(err.Error(), "is not the one this binary was built with") {
		t.Fatalf("a launcher of another build: err = %v, want a refusal", err)
	}
	_, err = launcherbin.FromBytes(b.program, "")
	if err == nil || !strings.Contains(err.Error(), "carries no SHA-256") {
		t.Fatalf("a binary without a stamp: err = %v, want a refusal", err)
	}
	prog, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	sum := sha256.Sum256(prog)
	_, err = launcherbin.FromBytes(prog, hex.EncodeToString(sum[:]))
	if err == nil || !strings.Contains(err.Error(), "answered") {
		t.Fatalf("a program that is no launcher: err = %v, want a refusal", err)
	}
}

// TestTierWithoutEmbeddedLauncher: a test binary embeds no launcher, so
// every tier re-executes it, long-lived or not. (A built binary's
// standalone exec runs the embedded one: cmd/ironvise's
// TestBuildEmbedsTheLauncher.)
func TestTierWithoutEmbeddedLauncher(t *testing.T) {
	for _, one := range []bool{false, true} {
		tier := newTestTier(t, sandbox.Options{OneCommand: one})
		if tier.executable != selfExe || tier.embedded != nil {
			t.Fatalf("OneCommand=%v: the tier starts launchers from %s (embedded %v), want /proc/self/exe", one, tier.executable, tier.embedded)
		}
		if d := tier.Launcher(); !strings.Contains(d, "embeds no launcher program") {
			t.Fatalf("OneCommand=%v: the doctor's description %q", one, d)
		}
	}
	if _, err := launcherbin.Embedded(true); !errors.Is(err, launcherbin.ErrNotEmbedded) {
		t.Fatalf("Embedded() in a test binary: %v, want ErrNotEmbedded", err)
	}
}

// TestEmbeddedLauncherFallsBack: an embedded launcher that no longer
// starts costs a warning, not the command, which runs through a launcher
// started as the binary itself. A tier of one command, whose embedded
// launcher was never run before its command (launcherbin.Embedded), relies
// on this.
func TestEmbeddedLauncherFallsBack(t *testing.T) {
	for _, one := range []bool{false, true} {
		var logs strings.Builder
		var mu sync.Mutex
		tier := newTestTier(t, sandbox.Options{OneCommand: one, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
		tier.executable = "/proc/self/fd/1000000" // no such descriptor
		tier.embedded = &launcherbin.Executable{Path: tier.executable}
		fx := newFixture(t)
		r := run(t, tier, fx, "echo ran")
		if r.ExitCode == nil || *r.ExitCode != 0 || r.Stdout != "ran\n" {
			t.Fatalf("OneCommand=%v: command after the embedded launcher failed to start: %+v", one, r)
		}
		mu.Lock()
		if !strings.Contains(logs.String(), "the embedded sandbox launcher did not start or ended before it was ready") {
			t.Errorf("OneCommand=%v: no warning logged; logs: %s", one, logs.String())
		}
		mu.Unlock()
	}
}

// An embedded launcher that starts but ends before it is ready (here a
// program that exits at once, as a launcher would whose start-up failed)
// has not read its command: the command is handed to the ironvise binary
// and runs, in a tier of one command (which does not check the embedded
// launcher when it is built) as in a tier of many.
func TestEmbeddedLauncherFailingBeforeReadyFallsBack(t *testing.T) {
	for _, one := range []bool{false, true} {
		var logs strings.Builder
		var mu sync.Mutex
		tier := newTestTier(t, sandbox.Options{OneCommand: one, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
		tier.executable = "/bin/false" // starts, writes nothing, exits 1
		tier.embedded = &launcherbin.Executable{Path: tier.executable}
		fx := newFixture(t)
		for i := range 2 {
			r := run(t, tier, fx, "echo ran")
			if r.ExitCode == nil || *r.ExitCode != 0 || r.Stdout != "ran\n" || r.Status == sandbox.StatusAborted {
				t.Fatalf("OneCommand=%v, command %d: the ironvise binary did not take the command: %+v", one, i, r)
			}
		}
		mu.Lock()
		if !strings.Contains(logs.String(), "the embedded sandbox launcher did not start or ended before it was ready") {
			t.Errorf("OneCommand=%v: no warning logged; logs: %s", one, logs.String())
		}
		mu.Unlock()
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
