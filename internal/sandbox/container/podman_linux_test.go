//go:build linux

package container

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// The tests below run real containers with Podman. They skip when Podman or
// the test image is missing, unless IRONVISE_TEST_PODMAN=1 (set by CI) makes
// that a failure. The image is a local busybox image
// (scripts/setup-podman.sh builds it offline).
const (
	podmanEnv      = "IRONVISE_TEST_PODMAN"
	podmanImageEnv = "IRONVISE_TEST_PODMAN_IMAGE"
	defaultImage   = "localhost/ironvise-busybox:latest"
)

// testImage returns the image the tests run, after checking that Podman
// and the image are there.
func testImage(t testing.TB) string {
	t.Helper()
	img := os.Getenv(podmanImageEnv)
	if img == "" {
		img = defaultImage
	}
	miss := func(msg string) string {
		if os.Getenv(podmanEnv) == "1" {
			t.Fatalf("%s (%s=1 requires it; run scripts/setup-podman.sh)", msg, podmanEnv)
		}
		t.Skipf("%s: skipping the real-container test (run scripts/setup-podman.sh, or set %s=1 to make this a failure)", msg, podmanEnv)
		return ""
	}
	if _, err := exec.LookPath("podman"); err != nil {
		return miss("podman is not installed")
	}
	if out, err := exec.Command("podman", "image", "exists", img).CombinedOutput(); err != nil {
		return miss(fmt.Sprintf("image %s is not present: %v %s", img, err, out))
	}
	return img
}

// newPodman builds the tier with Podman and the test image.
func newPodman(t testing.TB, mut ...func(*sandbox.Options)) *Tier {
	t.Helper()
	opts := sandbox.Options{DockerImage: testImage(t), Container: sandbox.ContainerOptions{Runtime: "podman"}}
	for _, m := range mut {
		m(&opts)
	}
	tier, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return tier.(*Tier)
}

// workspace returns a workspace the container's nobody user can read.
func workspace(t testing.TB) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("workspace file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func run(t *testing.T, tier *Tier, req sandbox.Request) sandbox.Result {
	t.Helper()
	if req.Workspace == "" {
		req.Workspace = workspace(t)
	}
	res := tier.Run(context.Background(), req)
	t.Logf("%s: %s (%.2f s)", req.Command, strings.ReplaceAll(res.Observation(), "\n", " | "), res.Duration.Seconds())
	return res
}

func wantOK(t *testing.T, res sandbox.Result, code int) {
	t.Helper()
	if res.Status != sandbox.StatusOK || res.ExitCode == nil || *res.ExitCode != code {
		t.Fatalf("got %s %s; want status ok and exit %d", res.Status, res.Headline(), code)
	}
}

func TestPodmanOutputAndExitCode(t *testing.T) {
	tier := newPodman(t)
	if tier.Name() != sandbox.TierPodman {
		t.Fatalf("Name() = %s", tier.Name())
	}
	res := run(t, tier, sandbox.Request{Command: `cat notes.txt; echo to-stderr >&2; printf 'pwd=%s\n' "$PWD"; exit 3`})
	wantOK(t, res, 3)
	if res.Stdout != "workspace file\npwd=/workspace\n" || res.Stderr != "to-stderr\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	e := res.Enforced
	if e == nil || e.Runtime != "podman" || e.RuntimeVersion == "" || e.Image != tier.image ||
		!strings.HasPrefix(e.ImageDigest, "sha256:") || len(e.ImageDigest) != 71 || e.Network != "none" ||
		e.Capabilities != "none" || e.Container == nil || e.Container.MemoryBytes != 256<<20 || e.Container.PidsLimit != 512 {
		t.Fatalf("enforced record: %+v", e)
	}
	// The record carries the exact field names of
	// docs/design/sandbox.md#sandbox-result.
	b, _ := json.Marshal(res)
	for _, k := range []string{`"runtime":"podman"`, `"runtime_version":`, `"image":"` + tier.image + `"`, `"image_digest":"sha256:`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("sandbox_result lacks %s: %s", k, b)
		}
	}
	// The command's own "not found" is its exit code, not a sandbox failure.
	wantOK(t, run(t, tier, sandbox.Request{Command: "no-such-program-xyz"}), 127)
	wantOK(t, run(t, tier, sandbox.Request{Command: "./notes.txt"}), 126)
}

func TestPodmanRunsAsNobodyWithoutCapabilities(t *testing.T) {
	tier := newPodman(t)
	res := run(t, tier, sandbox.Request{Command: `id -u; id -g; grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; ulimit -n; ulimit -t`})
	wantOK(t, res, 0)
	want := "65534\n65534\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n64\n30\n"
	if res.Stdout != want {
		t.Fatalf("stdout %q; want %q", res.Stdout, want)
	}
}

func TestPodmanReadOnlyRootAndWorkspace(t *testing.T) {
	tier := newPodman(t)
	ws := workspace(t)
	res := run(t, tier, sandbox.Request{Workspace: ws, Command: `
for f in /workspace/notes.txt /workspace/new /etc/passwd /bin/planted /newfile; do
  if (echo x >> "$f") 2>/dev/null; then echo "WROTE $f"; else echo "denied $f"; fi
done
echo scratch > /tmp/s && cat /tmp/s
cp /bin/busybox /tmp/bb 2>/dev/null && /tmp/bb true 2>/dev/null && echo EXEC-TMP || echo "noexec /tmp"`})
	wantOK(t, res, 0)
	if strings.Contains(res.Stdout, "WROTE") || !strings.Contains(res.Stdout, "scratch") || !strings.Contains(res.Stdout, "noexec /tmp") {
		t.Fatalf("stdout %q", res.Stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "notes.txt")); string(b) != "workspace file\n" {
		t.Fatalf("workspace file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "new")); err == nil {
		t.Fatal("a file appeared in the workspace")
	}
}

func TestPodmanHasNoNetwork(t *testing.T) {
	tier := newPodman(t)
	// A listener on a non-loopback address of the host: a container with
	// a network could reach it.
	addr := hostAddr(t)
	l, err := net.Listen("tcp4", addr+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	res := run(t, tier, sandbox.Request{Command: fmt.Sprintf(`ls /sys/class/net; nc -w 2 %s %d </dev/null && echo CONNECTED; wget -q -T 2 -O- http://%s:%d/ && echo FETCHED; true`, addr, port, addr, port)})
	wantOK(t, res, 0)
	if strings.TrimSpace(strings.Split(res.Stdout, "\n")[0]) != "lo" || strings.Contains(res.Stdout, "CONNECTED") || strings.Contains(res.Stdout, "FETCHED") {
		t.Fatalf("network reachable: %q %q", res.Stdout, res.Stderr)
	}
	select {
	case <-accepted:
		t.Fatal("the host listener accepted a connection from the container")
	case <-time.After(200 * time.Millisecond):
	}
}

// hostAddr is a non-loopback IPv4 address of this host.
func hostAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address on this host")
	return ""
}

func TestPodmanMemoryLimit(t *testing.T) {
	tier := newPodman(t, func(o *sandbox.Options) {
		o.Container.Memory, o.Container.MemoryBytes = "32m", 32<<20
	})
	res := run(t, tier, sandbox.Request{Command: `awk 'BEGIN { s = "x"; for (;;) s = s s }'`, Timeout: 60 * time.Second})
	if res.Status != sandbox.StatusOK || res.ExitCode == nil || *res.ExitCode == 0 {
		t.Fatalf("memory hog: %s; want a non-zero exit (OOM kill)", res.Headline())
	}
	if res.Enforced.Container.MemoryBytes != 32<<20 {
		t.Fatalf("recorded memory %d", res.Enforced.Container.MemoryBytes)
	}
	// A request can lower the limit further, never raise it.
	res = run(t, tier, sandbox.Request{Command: "true", Limits: sandbox.Limits{MemMiB: 16}})
	wantOK(t, res, 0)
	if res.Enforced.Container.MemoryBytes != 16<<20 {
		t.Fatalf("lowered memory %d", res.Enforced.Container.MemoryBytes)
	}
	res = run(t, tier, sandbox.Request{Command: "true", Limits: sandbox.Limits{MemMiB: 4096}})
	if res.Enforced.Container.MemoryBytes != 32<<20 {
		t.Fatalf("a request raised the memory limit to %d", res.Enforced.Container.MemoryBytes)
	}
}

func TestPodmanPidsLimit(t *testing.T) {
	tier := newPodman(t)
	res := run(t, tier, sandbox.Request{
		Command: `i=0; while [ $i -lt 200 ]; do sleep 5 & i=$((i+1)); done; echo ALL-STARTED`,
		Limits:  sandbox.Limits{NProc: 16}, Timeout: 60 * time.Second,
	})
	if res.Status != sandbox.StatusOK || strings.Contains(res.Stdout, "ALL-STARTED") || !strings.Contains(res.Stderr, "fork") {
		t.Fatalf("fork bomb not stopped: %s stdout %q stderr %q", res.Headline(), res.Stdout, res.Stderr)
	}
	if res.Enforced.Container.PidsLimit != 16 {
		t.Fatalf("recorded pids limit %d", res.Enforced.Container.PidsLimit)
	}
}

func TestPodmanCPULimit(t *testing.T) {
	tier := newPodman(t)
	res := run(t, tier, sandbox.Request{Command: "while :; do :; done", Limits: sandbox.Limits{CPUSecs: 1}, Timeout: 60 * time.Second})
	if res.Status != sandbox.StatusOK || res.ExitCode == nil || *res.ExitCode <= 128 {
		t.Fatalf("busy loop: %s; want killed by the CPU limit", res.Headline())
	}
}

func TestPodmanTimeoutRemovesTheContainer(t *testing.T) {
	tier := newPodman(t)
	start := time.Now()
	// Long enough for a loaded machine to start the container, so that a
	// running container is what the timeout removes.
	res := run(t, tier, sandbox.Request{Command: "echo started; sleep 120", Timeout: 10 * time.Second})
	if res.Status != sandbox.StatusTimeout || res.Signal != "SIGKILL" || res.ExitCode != nil {
		t.Fatalf("got %s; want timeout", res.Headline())
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("the timeout took %s", d)
	}
	if !strings.HasPrefix(res.Headline(), "[timeout after 10 s]") || !strings.Contains(res.Stdout, "started") {
		t.Fatalf("observation %q", res.Observation())
	}
	name := containerNameIn(t, res.Reason)
	out, err := exec.Command("podman", "ps", "-a", "--filter", "name=^"+name+"$", "--format", "{{.Names}}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("podman ps -a still lists %s: %q %v", name, out, err)
	}
}

func TestPodmanCancelRemovesTheContainer(t *testing.T) {
	tier := newPodman(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2*time.Second, cancel)
	res := tier.Run(ctx, sandbox.Request{Command: "sleep 120", Workspace: workspace(t)})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "run cancelled") {
		t.Fatalf("got %s", res.Headline())
	}
	name := containerNameIn(t, res.Reason)
	if out, _ := exec.Command("podman", "ps", "-a", "--filter", "name=^"+name+"$", "--format", "{{.Names}}").CombinedOutput(); strings.TrimSpace(string(out)) != "" {
		t.Fatalf("podman ps -a still lists %s", name)
	}
}

func containerNameIn(t *testing.T, reason string) string {
	t.Helper()
	i := strings.Index(reason, "ironvise-")
	if i < 0 {
		t.Fatalf("no container name in %q", reason)
	}
	return strings.Fields(reason[i:])[0]
}

func TestPodmanMissingImageAborts(t *testing.T) {
	testImage(t)
	tier := newPodman(t, func(o *sandbox.Options) { o.DockerImage = "localhost/ironvise-no-such-image:1" })
	err := tier.Available(context.Background())
	if err == nil || !strings.Contains(err.Error(), `image "localhost/ironvise-no-such-image:1" is not present locally`) ||
		!strings.Contains(err.Error(), "fix: podman pull localhost/ironvise-no-such-image:1") {
		t.Fatalf("Available: %v", err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	res := run(t, tier, sandbox.Request{Command: "touch " + marker})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "is not present locally") || res.ProcessExitCode() != 125 {
		t.Fatalf("got %s", res.Headline())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran on the host")
	}
}

func TestMissingRuntimeAborts(t *testing.T) {
	// No real runtime is needed: PATH holds neither docker nor podman.
	t.Setenv("PATH", t.TempDir())
	for _, rt := range []string{"podman", "docker", "auto"} {
		t.Run(rt, func(t *testing.T) {
			tier, err := New(context.Background(), sandbox.Options{DockerImage: "alpine:3.19", Container: sandbox.ContainerOptions{Runtime: rt}})
			if err != nil {
				t.Fatal(err)
			}
			err = tier.Available(context.Background())
			want := map[string]string{"podman": "podman is not installed", "docker": "docker is not installed", "auto": "neither docker nor podman is installed"}[rt]
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "fix: ") {
				t.Fatalf("Available: %v; want %q and a fix", err, want)
			}
			res := tier.Run(context.Background(), sandbox.Request{Command: "true", Workspace: t.TempDir()})
			if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, want) {
				t.Fatalf("Run: %s", res.Headline())
			}
			if err := tier.SelfTest(context.Background()); err == nil {
				t.Fatal("SelfTest passed without a runtime")
			}
		})
	}
}

func TestImageUnsetAborts(t *testing.T) {
	tier, err := New(context.Background(), sandbox.Options{Tier: "docker"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tier.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "ECTO_DOCKER_IMAGE is not set") {
		t.Fatalf("Available: %v", err)
	}
}

func TestPodmanContainerThatCannotStartAborts(t *testing.T) {
	testImage(t)
	// An image without a shell: the runtime cannot start sh -c and exits
	// 127 with its own error, which must not pass for the command's 127.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "etc", "passwd"), []byte("nobody:x:65534:65534:nobody:/:/bin/false\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "etc", "group"), []byte("nobody:x:65534:\n"), 0o644)
	tarball := filepath.Join(t.TempDir(), "noshell.tar")
	if out, err := exec.Command("tar", "-C", dir, "-cf", tarball, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	img := fmt.Sprintf("localhost/ironvise-test-noshell-%d:1", time.Now().UnixNano())
	if out, err := exec.Command("podman", "import", tarball, img).CombinedOutput(); err != nil {
		t.Fatalf("podman import: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", img).Run() })
	tier := newPodman(t, func(o *sandbox.Options) { o.DockerImage = img })
	res := run(t, tier, sandbox.Request{Command: "echo hi"})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "the container did not start (podman exit 127)") {
		t.Fatalf("got %s", res.Headline())
	}
}

func TestPodmanRuntimeFailureAborts(t *testing.T) {
	tier := newPodman(t, func(o *sandbox.Options) {
		o.Container.ExtraArgs = []string{"--runtime", "ironvise-no-such-oci-runtime"}
	})
	res := run(t, tier, sandbox.Request{Command: "echo hi"})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "podman") || res.Stdout != "" {
		t.Fatalf("got %s", res.Headline())
	}
}

func TestPodmanEnvironmentIsScrubbed(t *testing.T) {
	tier := newPodman(t)
	res := run(t, tier, sandbox.Request{Command: "env", Env: []string{"OPENAI_API_KEY=sk-secret", "LANG=C.UTF-8", "TZ=UTC", "LD_PRELOAD=/x.so"}})
	wantOK(t, res, 0)
	if strings.Contains(res.Stdout, "sk-secret") || strings.Contains(res.Stdout, "LD_PRELOAD") || !strings.Contains(res.Stdout, "TZ=UTC") || !strings.Contains(res.Stdout, "HOME=/tmp") {
		t.Fatalf("env %q", res.Stdout)
	}
}

func TestPodmanLargeOutputIsCapped(t *testing.T) {
	tier := newPodman(t)
	res := run(t, tier, sandbox.Request{Command: "yes 0123456789 | head -c 3000000; yes e | head -c 100000 >&2"})
	wantOK(t, res, 0)
	if !res.StdoutTruncated || !res.StderrTruncated || len(res.Stdout) > sandbox.StreamCap+100 ||
		!strings.Contains(res.Stdout, "[truncated: ") {
		t.Fatalf("stdout %d bytes truncated=%v, stderr truncated=%v", len(res.Stdout), res.StdoutTruncated, res.StderrTruncated)
	}
}

func TestPodmanSelfTestAndConcurrency(t *testing.T) {
	tier := newPodman(t)
	if err := tier.SelfTest(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws := workspace(t)
	var wg sync.WaitGroup
	results := make([]sandbox.Result, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = tier.Run(context.Background(), sandbox.Request{Command: fmt.Sprintf("echo run-%d", i), Workspace: ws})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Status != sandbox.StatusOK || r.Stdout != fmt.Sprintf("run-%d\n", i) {
			t.Errorf("run %d: %s %q", i, r.Headline(), r.Stdout)
		}
	}
}

// TestPodmanPreflightIsCached counts the runtime's invocations through a
// wrapper named podman in front of the real one.
func TestPodmanPreflightIsCached(t *testing.T) {
	img := testImage(t)
	real, _ := exec.LookPath("podman")
	dir := t.TempDir()
	logf := filepath.Join(dir, "calls")
	script := fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %s\nexec %s \"$@\"\n", logf, real)
	if err := os.WriteFile(filepath.Join(dir, "podman"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ti, err := New(context.Background(), sandbox.Options{DockerImage: img, Container: sandbox.ContainerOptions{Runtime: "podman"}})
	if err != nil {
		t.Fatal(err)
	}
	tier := ti.(*Tier)
	for range 2 {
		wantOK(t, run(t, tier, sandbox.Request{Command: "true"}), 0)
	}
	b, _ := os.ReadFile(logf)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != "version image run run" {
		t.Fatalf("runtime calls %q; want one preflight (version, image) and two runs", got)
	}
}

// TestPodmanIgnoresTheImageEntrypoint: an image's ENTRYPOINT would receive
// "sh -c <command>" as its arguments; the tier runs the shell itself.
func TestPodmanIgnoresTheImageEntrypoint(t *testing.T) {
	base := testImage(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte("FROM "+base+"\nENTRYPOINT [\"/bin/echo\", \"ENTRYPOINT-RAN\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := fmt.Sprintf("localhost/ironvise-test-entrypoint-%d:1", time.Now().UnixNano())
	if out, err := exec.Command("podman", "build", "--pull=never", "-q", "-t", img, dir).CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", img).Run() })
	tier := newPodman(t, func(o *sandbox.Options) { o.DockerImage = img })
	res := run(t, tier, sandbox.Request{Command: "echo the-command"})
	wantOK(t, res, 0)
	if res.Stdout != "the-command\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
}

// TestPodmanHidesProtectedPathsInTheWorkspace: a home-like workspace holds
// an SSH key, a .netrc and IronVise's data directory; the container sees
// empty read-only stand-ins, however the command names them (directly,
// through a symlink in the workspace, through a computed path).
func TestPodmanHidesProtectedPathsInTheWorkspace(t *testing.T) {
	ws := workspace(t)
	secrets := map[string]string{
		".ssh/id_ed25519":                       "SSH-SECRET",
		".netrc":                                "NETRC-SECRET",
		".local/share/ironvise/keys/issuer.key": "ISSUER-SECRET",
		".config/myapp/token":                   "REQUEST-SECRET",
	}
	for p, body := range secrets {
		p = filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".ssh", filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	tier := newPodman(t, func(o *sandbox.Options) {
		o.Hidden = []string{filepath.Join(ws, ".ssh"), filepath.Join(ws, ".netrc"), filepath.Join(ws, ".local", "share", "ironvise"), "/nonexistent/x"}
	})
	res := run(t, tier, sandbox.Request{Workspace: ws, Hidden: []string{filepath.Join(ws, ".config", "myapp")}, Command: `
cat .ssh/id_ed25519; cat keys/id_ed25519; cat "$(printf .ss; printf h)/id_ed25519"
cat .netrc; cat /workspace/.local/share/ironvise/keys/issuer.key; cat .config/myapp/token
grep -r SECRET /workspace
echo ls-ssh: $(ls -A .ssh) ls-data: $(ls -A .local/share/ironvise)
echo x > .ssh/planted 2>/dev/null && echo PLANTED
cat notes.txt`})
	wantOK(t, res, 0)
	if strings.Contains(res.Stdout, "SECRET") || strings.Contains(res.Stdout, "PLANTED") {
		t.Fatalf("a protected file was visible or writable in the container: %q", res.Stdout)
	}
	if !strings.Contains(res.Stdout, "ls-ssh: ls-data:") || !strings.Contains(res.Stdout, "workspace file") {
		t.Fatalf("stdout %q; want empty stand-ins and the ordinary file", res.Stdout)
	}
	if n := res.Enforced.HiddenPaths; n == nil || *n != 4 {
		t.Fatalf("hidden_paths = %v; want 4 (three of the tier's, one of the request's)", n)
	}
	// A workspace inside a protected path is aborted before any container.
	res = run(t, tier, sandbox.Request{Workspace: filepath.Join(ws, ".local", "share", "ironvise"), Command: "cat keys/issuer.key"})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "lies inside the protected path") || strings.Contains(res.Stdout, "SECRET") {
		t.Fatalf("workspace inside the data directory: %s %q", res.Status, res.Reason)
	}
}
