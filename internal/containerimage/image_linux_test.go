//go:build linux

package containerimage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// podmanEnv gates the tests, as for the container tier's tests; CI sets it.
	podmanEnv = "IRONVISE_TEST_PODMAN"
	// imageEnv names an image already built by scripts/build-image.sh (.ci/run
	// builds one before make test); without it the tests build builtImage.
	imageEnv   = "IRONVISE_TEST_IMAGE"
	builtImage = "localhost/ironvise:test"

	// What the Containerfile promises.
	imageUser = "10001:10001"
	dataDir   = "/var/lib/ironvise"
	workDir   = "/workspace"
	servePort = "3000"
)

// way is one of the two documented ways to run the native tier inside a
// container (docs/operate/container.md): the flags added to podman's
// defaults, and nothing else.
type way struct {
	name  string
	flags []string
}

var ways = []way{
	// The tier creates its namespaces inside a user namespace; podman masks
	// parts of /proc by default, which the kernel takes as a reason to refuse
	// mounting a new /proc, so the mask is lifted.
	{name: "user-namespace", flags: []string{"--security-opt", "unmask=ALL"}},
	// Landlock, seccomp, rlimits and the kill of every survivor are the
	// tier's; PID, mount and network isolation are the container's.
	{name: "container-mode", flags: []string{"-e", "ECTO_SANDBOX_CONTAINER_MODE=true"}},
}

var (
	buildOnce sync.Once
	buildErr  error
)

// testImage returns the image under test, building it once when
// IRONVISE_TEST_IMAGE does not name one.
func testImage(t *testing.T) string {
	t.Helper()
	if os.Getenv(podmanEnv) != "1" {
		t.Skipf("the container image tests build and run IronVise's image with podman; set %s=1 to run them "+
			"(.ci/run does; locally run scripts/setup-podman.sh first)", podmanEnv)
	}
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is not installed (%s=1 requires it; run scripts/setup-podman.sh)", podmanEnv)
	}
	if img := os.Getenv(imageEnv); img != "" {
		if out, err := exec.Command("podman", "image", "exists", img).CombinedOutput(); err != nil {
			t.Fatalf("%s=%s, but that image is not present (%v %s); build it with scripts/build-image.sh %s", imageEnv, img, err, out, img)
		}
		return img
	}
	buildOnce.Do(func() {
		cmd := exec.Command("bash", "scripts/build-image.sh", builtImage)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("scripts/build-image.sh %s failed: %v\n%s", builtImage, err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtImage
}

type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// podman runs podman with args and returns what it printed and its exit
// code; a podman that cannot be started, or that outlives timeout, fails the
// test.
func podman(t *testing.T, timeout time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("podman %s did not return within %s\n%s", strings.Join(args, " "), timeout, r)
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// containerName returns a fresh name and removes that container, with its
// anonymous data-dir volume, when the test ends, whatever happened.
func containerName(t *testing.T) string {
	t.Helper()
	name := "ironvise-imagetest-" + randomHex(t, 6)
	t.Cleanup(func() {
		_ = exec.Command("podman", "rm", "-f", "-v", "-t", "0", name).Run()
	})
	return name
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// workspace returns a host directory to bind-mount at /workspace, readable
// by the image's user, holding files.
func workspace(t *testing.T, files map[string]string) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// runArgs is `podman run` with a way's flags: the documented line.
func runArgs(w way, extra ...string) []string {
	return append(append([]string{"run"}, w.flags...), extra...)
}

func TestImageShape(t *testing.T) {
	img := testImage(t)
	r := podman(t, time.Minute, "image", "inspect", "--format", "{{json .Config}}", img)
	if r.code != 0 {
		t.Fatalf("podman image inspect %s: %s", img, r)
	}
	var cfg struct {
		User         string
		Entrypoint   []string
		WorkingDir   string
		Env          []string
		Volumes      map[string]struct{}
		ExposedPorts map[string]struct{}
	}
	if err := json.Unmarshal([]byte(r.stdout), &cfg); err != nil {
		t.Fatalf("image config: %v\n%s", err, r.stdout)
	}
	if cfg.User != imageUser {
		t.Errorf("USER is %q, want the fixed non-root %q", cfg.User, imageUser)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/usr/local/bin/ironvise"}) {
		t.Errorf("ENTRYPOINT is %q, want [/usr/local/bin/ironvise]", cfg.Entrypoint)
	}
	if cfg.WorkingDir != workDir {
		t.Errorf("WORKDIR is %q, want %s", cfg.WorkingDir, workDir)
	}
	if _, ok := cfg.Volumes[dataDir]; !ok {
		t.Errorf("VOLUME %v lacks the data dir %s", cfg.Volumes, dataDir)
	}
	if _, ok := cfg.ExposedPorts[servePort+"/tcp"]; !ok {
		t.Errorf("EXPOSE %v lacks serve's port %s", cfg.ExposedPorts, servePort)
	}
	if !slices.Contains(cfg.Env, "ECTO_DATA_DIR="+dataDir) {
		t.Errorf("ENV %q lacks ECTO_DATA_DIR=%s", cfg.Env, dataDir)
	}
	// A key or token is passed at run time, never baked into a layer.
	for _, kv := range cfg.Env {
		name, _, _ := strings.Cut(kv, "=")
		for _, secret := range []string{"KEY", "TOKEN", "PASSPHRASE", "SECRET"} {
			if strings.Contains(name, secret) {
				t.Errorf("the image sets %s; secrets must be passed with -e at run time", name)
			}
		}
	}

	// The tools a command and the doctor's probes need: a POSIX shell, core
	// utilities, perl with the C.UTF-8 locale the sandbox sets (else perl
	// warns on every start), and the CA bundle for HTTPS model endpoints.
	r = podman(t, time.Minute, "run", "--rm", "--entrypoint", "/bin/sh", img, "-c",
		`id -u; LANG=C.UTF-8 perl -MSocket -e 'print "perl ok\n"' 2>&1; test -s /etc/ssl/certs/ca-certificates.crt && echo certs ok; ls / | wc -l >/dev/null && echo coreutils ok; ironvise version`)
	if r.code != 0 {
		t.Fatalf("the image's tools: %s", r)
	}
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(got) < 5 || got[0] != "10001" || got[1] != "perl ok" || got[2] != "certs ok" || got[3] != "coreutils ok" ||
		!strings.Contains(got[4], "ironvise") {
		t.Errorf("want uid 10001, perl without warnings, the CA bundle, core utilities and the binary; got %s", r)
	}
}

// doctorReport is the part of `sandbox doctor --json` the tests read.
type doctorReport struct {
	Selected string `json:"selected"`
	Usable   bool   `json:"usable"`
	Tiers    []struct {
		Tier     string `json:"tier"`
		Selected bool   `json:"selected"`
		Enforced struct {
			Namespaces []string `json:"namespaces"`
		} `json:"enforced"`
		Guarantees []struct {
			Name     string `json:"name"`
			State    string `json:"state"`
			Evidence string `json:"evidence"`
		} `json:"guarantees"`
	} `json:"tiers"`
}

func TestDoctor(t *testing.T) {
	img := testImage(t)
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			r := podman(t, 2*time.Minute, runArgs(w, "--rm", img, "sandbox", "doctor", "--json")...)
			if r.code != 0 {
				t.Fatalf("sandbox doctor in the %s way exited %d, want 0:\n%s", w.name, r.code, r)
			}
			var rep doctorReport
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("doctor --json: %v\n%s", err, r)
			}
			if rep.Selected != "native-linux" || !rep.Usable {
				t.Fatalf("selected %q usable %v, want native-linux usable:\n%s", rep.Selected, rep.Usable, r)
			}
			states := map[string]string{}
			var namespaces []string
			for _, tier := range rep.Tiers {
				if tier.Selected {
					namespaces = tier.Enforced.Namespaces
					for _, g := range tier.Guarantees {
						states[g.Name] = g.State
						// Each guarantee is IronVise's or, in container mode,
						// the container's: none may be simply missing in the
						// image IronVise ships.
						if g.State == "not_enforced" {
							t.Errorf("%s is not enforced: %s", g.Name, g.Evidence)
						}
					}
				}
			}
			// What either way must keep in IronVise's own hands: the
			// filesystem rules, sockets, privileges, limits and survivors.
			for _, g := range []string{"fs_outside_write_denied", "fs_outside_read_denied", "net_tcp_denied",
				"caps_dropped", "no_new_privs", "limit_processes", "no_survivors"} {
				if states[g] != "enforced" {
					t.Errorf("%s is %q, want enforced", g, states[g])
				}
			}
			switch w.name {
			case "user-namespace":
				for _, ns := range []string{"user", "pid", "mount", "net"} {
					if !slices.Contains(namespaces, ns) {
						t.Errorf("namespaces %v lack %s", namespaces, ns)
					}
				}
			case "container-mode":
				// The doctor names what the container, not IronVise, provides.
				if !strings.Contains(r.stdout, "delegated") {
					t.Errorf("container mode's report names no guarantee delegated to the container:\n%s", r.stdout)
				}
			}
			if t.Failed() {
				t.Logf("doctor output:\n%s", r)
			}
		})
	}
}

// The scripts of the escape cases live in the workspace, as a repository's
// build script would: the command line the checks see (`sh ./x.sh`) is
// harmless, so each attempt reaches the sandbox instead of being stopped
// by the tripwire, and it is the sandbox that must stop it.
var escapeScripts = map[string]string{
	"notes.txt": "workspace file\n",
	"write-outside.sh": `for p in ` + dataDir + `/escaped /tmp/escaped ` + workDir + `/escaped ./escaped; do
	echo x 2>/dev/null > "$p" && echo "WROTE $p"
done
true
`,
	"read-data-dir.sh": `cat ` + dataDir + `/keys/issuer.ed25519
ls -la ` + dataDir + ` ` + dataDir + `/keys
true
`,
	// A listener the container itself reaches, and IronVise's own API.
	"network.sh": `wget -qO- http://127.0.0.1:7777/notes.txt
wget -qO- http://127.0.0.1:` + servePort + `/healthz
perl -MSocket -e 'socket(my $s, PF_INET, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_in(7777, inet_aton("127.0.0.1"))) or die "connect: $!\n"; print "CONNECTED\n"'
true
`,
	"survivors.sh": `sleep 300 &
setsid sleep 301 &
(sleep 302 &)
echo started
`,
	// Every copy waits for its two children, so the tree stays alive until
	// the sandbox's limits stop its growth and its end kills it.
	"bomb.sh":     `sh "$0" & sh "$0" & wait` + "\n",
	"run-bomb.sh": "sh ./bomb.sh &\nsleep 3\necho after\n",
}

// sandboxTimeout is ECTO_SANDBOX_TIMEOUT_SECS in the escape cases' container:
// what bounds a fork bomb at the latest.
const sandboxTimeout = 10 * time.Second

func TestExec(t *testing.T) {
	img := testImage(t)
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) { testExec(t, img, w) })
	}
}

func testExec(t *testing.T, img string, w way) {
	ws := workspace(t, escapeScripts)
	mount := ws + ":" + workDir

	// Ordinary work, with the documented line: IronVise is the container's
	// first process. The workspace is read-only to the command (exec's rule);
	// it writes under $TMPDIR.
	r := podman(t, 2*time.Minute, runArgs(w, "--rm", "-v", mount, img,
		"exec", "--", `echo hi > "$TMPDIR/out.txt"; cat "$TMPDIR/out.txt"; ls; cat notes.txt`)...)
	if r.code != 0 || !strings.Contains(r.stdout, "hi\n") || !strings.Contains(r.stdout, "run-bomb.sh") ||
		!strings.Contains(r.stdout, "workspace file") {
		t.Fatalf("ordinary work in the %s way: want exit 0 with hi, the listing and the file; got %s", w.name, r)
	}

	// The escape cases run in one long-lived container, so that what is
	// left behind after each exec can be inspected: IronVise's serve is its
	// first process, as in production, and each case runs twice through
	// podman exec — handed to serve over the data dir's socket, and in the
	// exec process itself (--no-daemon).
	ctr := startServe(t, img, w, mount, "-e", fmt.Sprintf("ECTO_SANDBOX_TIMEOUT_SECS=%d", int(sandboxTimeout.Seconds())))
	inCtr := func(timeout time.Duration, args ...string) result {
		return podman(t, timeout, append([]string{"exec", ctr}, args...)...)
	}

	// serve created the data dir's issuer key; its PEM body is what must
	// never reach a command's output.
	key := inCtr(time.Minute, "cat", dataDir+"/keys/issuer.ed25519")
	keyLines := strings.Split(strings.TrimSpace(key.stdout), "\n")
	if key.code != 0 || len(keyLines) < 3 || !strings.Contains(keyLines[0], "PRIVATE KEY") {
		t.Fatalf("the issuer key: %s", key)
	}
	keyBody := keyLines[1]

	// A listener the container itself can reach: the control that makes the
	// network case mean something.
	if r := podman(t, time.Minute, "exec", "-d", ctr, "busybox", "httpd", "-f", "-p", "127.0.0.1:7777", "-h", workDir); r.code != 0 {
		t.Fatalf("starting the control listener: %s", r)
	}
	var control result
	for range 50 {
		if control = inCtr(time.Minute, "wget", "-qO-", "http://127.0.0.1:7777/notes.txt"); control.code == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(control.stdout, "workspace file") {
		t.Fatalf("the control listener does not answer the container itself: %s", control)
	}

	// Orphans of a `podman exec` go to the container's pid 1, not to the
	// runtime's monitor outside it: IronVise as pid 1 must reap them, or
	// each one is a zombie holding a process slot for good.
	t.Run("pid1-reaps", func(t *testing.T) {
		before := zombies(t, ctr)
		for range 3 {
			if r := inCtr(time.Minute, "sh", "-c", "sleep 0.2 & exit 0"); r.code != 0 {
				t.Fatalf("leaving an orphan: %s", r)
			}
		}
		time.Sleep(time.Second)
		if left := leftBehind(t, ctr, "sleep 0.2", before); len(left) > 0 {
			t.Errorf("orphans re-parented to the container's first process were not reaped: %q", left)
		}
	})

	for _, path := range []struct {
		name  string
		flags []string
	}{{"daemon", nil}, {"in-process", []string{"--no-daemon"}}} {
		ironviseExec := func(args ...string) result {
			full := append([]string{"exec", ctr, "ironvise", "exec"}, path.flags...)
			return podman(t, sandboxTimeout+time.Minute, append(full, args...)...)
		}
		t.Run(path.name, func(t *testing.T) {
			t.Run("write-outside", func(t *testing.T) {
				r := ironviseExec("--", "sh", "./write-outside.sh")
				for _, p := range []string{dataDir + "/escaped", workDir + "/escaped", "./escaped"} {
					if strings.Contains(r.stdout, "WROTE "+p+"\n") {
						t.Errorf("the command wrote %s: %s", p, r)
					}
				}
				// A private /tmp inside the sandbox may take the write; the
				// container's own must not see it, nor the data dir or the workspace.
				if left := inCtr(time.Minute, "sh", "-c", "ls "+dataDir+"/escaped /tmp/escaped "+workDir+"/escaped 2>/dev/null"); left.stdout != "" {
					t.Errorf("files written from inside the sandbox are in the container: %s", left)
				}
				if _, err := os.Stat(filepath.Join(ws, "escaped")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the command wrote into the host's workspace: %v", err)
				}
			})

			t.Run("read-data-dir", func(t *testing.T) {
				r := ironviseExec("--", "sh", "./read-data-dir.sh")
				if strings.Contains(r.stdout+r.stderr, keyBody) || strings.Contains(r.stdout, "checkpoint.last") {
					t.Errorf("the command read the data dir: %s", r)
				}
				// A workspace that contains the data dir: refused, or the data
				// dir stays out of reach. The path is built at run time so that
				// the tripwire, which refuses the literal, lets it through to
				// the sandbox.
				r = ironviseExec("--workspace", "/var/lib", "--",
					`d=iron; cat "${d}vise/keys/issuer.ed25519"; ls -la "${d}vise" "${d}vise/keys"`)
				if r.code == 0 || strings.Contains(r.stdout+r.stderr, keyBody) || strings.Contains(r.stdout, "checkpoint.last") {
					t.Errorf("a workspace holding the data dir let the command read it: %s", r)
				}
			})

			t.Run("network", func(t *testing.T) {
				r := ironviseExec("--", "sh", "./network.sh")
				if strings.Contains(r.stdout, "workspace file") || strings.Contains(r.stdout, "CONNECTED") ||
					strings.Contains(r.stdout, `"status"`) {
					t.Errorf("the command reached a listener of the container (127.0.0.1:7777 or serve's :%s): %s", servePort, r)
				}
			})

			t.Run("survivors", func(t *testing.T) {
				before := zombies(t, ctr)
				r := ironviseExec("--", "sh", "./survivors.sh")
				if r.code != 0 || !strings.Contains(r.stdout, "started") {
					t.Fatalf("survivors.sh: %s", r)
				}
				if left := leftBehind(t, ctr, "sleep 30", before); len(left) > 0 {
					t.Errorf("processes outlived the exec that started them: %q", left)
				}
			})

			t.Run("fork-bomb", func(t *testing.T) {
				before := zombies(t, ctr)
				start := time.Now()
				r := ironviseExec("--", "sh", "./run-bomb.sh")
				took := time.Since(start)
				t.Logf("the fork bomb's exec returned after %s with exit %d", took.Round(time.Millisecond), r.code)
				r.stdout, r.stderr = clip(r.stdout), clip(r.stderr)
				if took > sandboxTimeout+20*time.Second {
					t.Errorf("the fork bomb's exec took %s, more than the sandbox timeout of %s", took, sandboxTimeout)
				}
				if left := leftBehind(t, ctr, "bomb.sh", before); len(left) > 0 {
					t.Errorf("%d fork bomb processes outlived the exec, e.g. %q", len(left), left[0])
				}
				// IronVise and the container are still usable.
				if r := ironviseExec("--", "echo", "still here"); r.code != 0 || !strings.Contains(r.stdout, "still here") {
					t.Errorf("an ordinary exec after the fork bomb: %s", r)
				}
			})
		})
	}
}

// leftBehind lists the processes of the container whose command line
// contains substr, and every zombie not in before: a killed process nobody
// reaps is left behind too, a slot of the container's pids limit and of the
// user's RLIMIT_NPROC that never comes back. Zombies are given a moment to be
// reaped.
func leftBehind(t *testing.T, ctr, substr string, before map[string]bool) []string {
	t.Helper()
	var out []string
	for range 20 {
		out = out[:0]
		zombie := false
		for _, p := range processes(t, ctr) {
			switch {
			case p.state == "Z" && !before[p.pid]:
				zombie = true
				out = append(out, p.String())
			case p.state != "Z" && strings.Contains(p.cmdline, substr):
				out = append(out, p.String())
			}
		}
		if !zombie {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out
}

// zombies returns the pids of the container's zombies.
func zombies(t *testing.T, ctr string) map[string]bool {
	t.Helper()
	z := map[string]bool{}
	for _, p := range processes(t, ctr) {
		if p.state == "Z" {
			z[p.pid] = true
		}
	}
	return z
}

type process struct{ pid, state, ppid, cmdline string }

func (p process) String() string {
	return fmt.Sprintf("pid %s state %s ppid %s: %s", p.pid, p.state, p.ppid, p.cmdline)
}

// processes lists the container's processes from /proc (the image's ps
// need not be there), leaving out the listing's own shell. It runs as root,
// whose process count is not the image user's: a fork bomb that filled that
// user's RLIMIT_NPROC does not stop the listing. It forks only for the
// command line of a live process, as a zombie has none.
func processes(t *testing.T, ctr string) []process {
	t.Helper()
	const list = `for d in /proc/[0-9]*; do read -r s <"$d/stat" 2>/dev/null || continue; set -- $s; c=; [ "$3" = Z ] || c=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null); echo "$1 $3 $4 $c"; done`
	r := podman(t, time.Minute, "exec", "--user", "0:0", ctr, "sh", "-c", list)
	if r.code != 0 {
		t.Fatalf("listing the container's processes: %s", r)
	}
	var ps []process
	for line := range strings.Lines(r.stdout) {
		f := strings.SplitN(strings.TrimRight(line, " \n"), " ", 4)
		if len(f) < 3 || f[1] == "X" {
			continue
		}
		p := process{pid: f[0], state: f[1], ppid: f[2]}
		if len(f) == 4 {
			p.cmdline = f[3]
		}
		if !strings.Contains(p.cmdline, "/proc/[0-9]") {
			ps = append(ps, p)
		}
	}
	return ps
}

// clip shortens a fork bomb's output (thousands of "can't fork" lines) for
// the failure message.
func clip(s string) string {
	if len(s) <= 2000 {
		return s
	}
	return s[:1000] + "\n…\n" + s[len(s)-1000:]
}

// startServe starts `ironvise serve` detached in the way w, with the
// workspace mount and extra podman flags, and returns the container's name
// once serve listens.
func startServe(t *testing.T, img string, w way, mount string, extra ...string) string {
	t.Helper()
	ctr := containerName(t)
	args := runArgs(w, "-d", "--name", ctr, "-v", mount, "-e", "LLM_BACKEND=mock", "-e", "GUARD_REQUIRED=false")
	args = append(append(args, extra...), img, "serve")
	if r := podman(t, time.Minute, args...); r.code != 0 {
		t.Fatalf("starting serve: %s", r)
	}
	// serve prints its listening line only after the ledger, the tokens and
	// the sandbox self-test are ready.
	deadline := time.Now().Add(60 * time.Second)
	for {
		logs := podman(t, time.Minute, "logs", ctr)
		if strings.Contains(logs.stderr+logs.stdout, "listening on") {
			return ctr
		}
		state := podman(t, time.Minute, "inspect", "--format", "{{.State.Running}}", ctr)
		if strings.TrimSpace(state.stdout) != "true" || time.Now().After(deadline) {
			t.Fatalf("serve did not start in the %s way (running: %s):\n%s", w.name, strings.TrimSpace(state.stdout), logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestServe(t *testing.T) {
	img := testImage(t)
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) { testServe(t, img, w) })
	}
}

func testServe(t *testing.T, img string, w way) {
	ws := workspace(t, map[string]string{"notes.txt": "workspace file\n"})
	token := randomHex(t, 32)
	ctr := startServe(t, img, w, ws+":"+workDir, "-p", "127.0.0.1::"+servePort, "-e", "OBSERVER_TOKEN="+token)

	// From the host through the published port; where podman's port
	// forwarding does not work on the host, from inside the container.
	get := func(path string, auth bool) (int, string) {
		t.Helper()
		port := podman(t, time.Minute, "port", ctr, servePort+"/tcp")
		addr := strings.TrimSpace(port.stdout)
		if port.code == 0 && addr != "" {
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if auth {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			client := http.Client{Timeout: 10 * time.Second}
			if resp, err := client.Do(req); err == nil {
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			} else {
				t.Logf("the published port %s did not answer (%v); asking from inside the container", addr, err)
			}
		}
		args := []string{"exec", ctr, "wget", "-qO-", "-S"}
		if auth {
			args = append(args, "--header", "Authorization: Bearer "+token)
		}
		r := podman(t, time.Minute, append(args, "http://127.0.0.1:"+servePort+path)...)
		code := 0
		if _, after, ok := strings.Cut(r.stderr, "HTTP/1.1 "); ok {
			fmt.Sscanf(after, "%d", &code)
		}
		return code, r.stdout
	}

	if code, body := get("/healthz", false); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
		t.Fatalf("GET /healthz: %d %s", code, body)
	}
	if code, _ := get("/api/sessions", false); code != http.StatusUnauthorized {
		t.Errorf("GET /api/sessions without the token: %d, want 401", code)
	}

	// A command run through the daemon the container's serve holds (exec
	// finds it on the data dir's socket), then seen through the API.
	r := podman(t, 90*time.Second, "exec", ctr, "ironvise", "exec", "--", "echo", "from-the-daemon")
	if r.code != 0 || !strings.Contains(r.stdout, "from-the-daemon") {
		t.Fatalf("exec inside the serve container: %s", r)
	}
	code, body := get("/api/sessions", true)
	if code != http.StatusOK {
		t.Fatalf("GET /api/sessions: %d %s", code, body)
	}
	var sessions []apiSession
	if err := json.Unmarshal([]byte(body), &sessions); err != nil {
		t.Fatalf("GET /api/sessions: %v\n%s", err, body)
	}
	if !slices.ContainsFunc(sessions, func(s apiSession) bool {
		return s.Goal == "exec: echo from-the-daemon" && s.Status == "completed"
	}) {
		t.Errorf("GET /api/sessions lacks the completed exec session: %s", body)
	}
}

// apiSession is the part of GET /api/sessions' items the test reads.
type apiSession struct {
	Goal   string `json:"goal"`
	Status string `json:"status"`
}
