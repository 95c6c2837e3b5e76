//go:build linux

package native

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// These tests cover the escapes found in the first release: a workspace
// that shows IronVise's own keys and the user's credentials, the host's
// network namespace, an uncapped scratch directory, and a launcher that
// trusted the kernel's return values. Each runs as the test's user (root in
// CI), as nobody via ECTO_SANDBOX_USER, and unprivileged (TestUnprivileged).

// homeFixture is a home-like workspace: IronVise's data directory with an
// issuer key, ~/.ssh, ~/.netrc and ordinary project files.
type homeFixture struct {
	*fixture
	dataDir, key, keyText, netrc string
}

func newHomeFixture(t testing.TB) *homeFixture {
	t.Helper()
	fx := newFixture(t)
	h := &homeFixture{fixture: fx, dataDir: filepath.Join(fx.ws, ".local", "share", "ironvise")}
	h.key = filepath.Join(h.dataDir, "keys", "issuer.ed25519")
	h.keyText = "ISSUER-PRIVATE-" + fx.secretText
	h.netrc = filepath.Join(fx.ws, ".netrc")
	for _, d := range []string{filepath.Dir(h.key), filepath.Join(fx.ws, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{
		h.key: h.keyText, filepath.Join(fx.ws, ".ssh", "id_ed25519"): "SSH-" + fx.secretText,
		h.netrc: "machine example.com password NETRC-" + fx.secretText,
	} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ~/.aws is a link to a directory elsewhere in the workspace: the mask
	// must cover the target, which a command can name directly.
	creds := filepath.Join(fx.ws, "cloud-creds")
	if err := os.MkdirAll(creds, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, creds, "credentials", "AWS-"+fx.secretText)
	if err := os.Symlink(creds, filepath.Join(fx.ws, ".aws")); err != nil {
		t.Fatal(err)
	}
	return h
}

// hidden is the Options.Hidden the CLI would compute for this home.
func (h *homeFixture) hidden() []string {
	return []string{h.dataDir, filepath.Join(h.ws, ".ssh"), h.netrc, filepath.Join(h.ws, ".aws"), filepath.Join(h.ws, ".gnupg")}
}

func TestHiddenPathsAreMasked(t *testing.T) {
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) { testHiddenPathsAreMasked(t, opts) })
	}
}

func testHiddenPathsAreMasked(t *testing.T, opts sandbox.Options) {
	h := newHomeFixture(t)
	opts.Hidden = h.hidden()
	tier := newTestTier(t, opts)
	attempts := []struct{ name, cmd string }{
		// Each names the secret in a way no static check of the command
		// line can see.
		{"issuer key by built path", `cat "$(printf .loc; printf al)/share/ironvise/keys/issuer.ed25519"`},
		{"data dir listing", `ls -laR .local/share/ironvise`},
		{"ssh key by glob", `cat .ss?/*`},
		{"netrc", `cat ./.net""rc`},
		{"link target named directly", `cat cloud-creds/credentials`},
		{"through the link", `cat .aws/credentials`},
		{"find and grep everything", `grep -r -a -e PRIVATE -e SSH- -e NETRC- . 2>&1`},
		{"open by inode walk", `python3 -c 'import os
for r, ds, fs in os.walk("."):
    for f in fs:
        try: print(open(os.path.join(r, f), errors="replace").read())
        except Exception as e: print(e)'`},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			r := run(t, tier, h.fixture, a.cmd)
			noLeak(t, r, h.fixture.secretText)
		})
	}
	r := run(t, tier, h.fixture, `echo x > .netrc; echo y > .ssh/new; touch .local/share/ironvise/z; ls -A .ssh | wc -l; cat README`)
	contains(t, r, "line two needle") // the rest of the workspace is still there
	if !strings.Contains(r.Stdout, "0\n") {
		t.Fatalf("the masked .ssh is not empty: %s", r.Observation())
	}
	unchanged(t, h.netrc, "machine example.com password NETRC-"+h.fixture.secretText)
	absent(t, filepath.Join(h.ws, ".ssh", "new"))
	if r.Enforced.HiddenPaths == nil || *r.Enforced.HiddenPaths < 4 {
		t.Fatalf("hidden_paths = %v; want the 4 existing paths and the link's target", r.Enforced.HiddenPaths)
	}
}

// credsFixture is a fixture whose workspace holds two credential
// directories, creds-a and creds-b, each with a credentials file holding
// the fixture's secret, and the path of a link .aws not made yet.
func credsFixture(t *testing.T) (fx *fixture, dirs []string, link string) {
	t.Helper()
	fx = newFixture(t)
	dirs = []string{filepath.Join(fx.ws, "creds-a"), filepath.Join(fx.ws, "creds-b")}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, d, "credentials", "AWS-"+fx.secretText)
	}
	return fx, dirs, filepath.Join(fx.ws, ".aws")
}

// TestHiddenLinkMadeAfterTheTier: a protected path that becomes a symlink
// only after the tier was built (serve builds it once, at start), or whose
// link is re-pointed since, is masked at its target all the same: the
// launcher skips the link itself, so the tier resolves the links again
// when each command starts, and keeps the targets it saw at the start.
func TestHiddenLinkMadeAfterTheTier(t *testing.T) {
	fx, dirs, link := credsFixture(t)
	tier := newTestTier(t, sandbox.Options{Hidden: []string{link}})
	if err := os.Symlink(dirs[0], link); err != nil {
		t.Fatal(err)
	}
	noLeak(t, run(t, tier, fx, `cat creds-a/credentials .aws/credentials`), fx.secretText)
	// Re-pointed after a tier that saw the first target at its start.
	tier = newTestTier(t, sandbox.Options{Hidden: []string{link}})
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dirs[1], link); err != nil {
		t.Fatal(err)
	}
	noLeak(t, run(t, tier, fx, `cat creds-a/credentials creds-b/credentials .aws/credentials`), fx.secretText)
}

// TestHiddenResolvedTakesTheListAsGiven: with Options.HiddenResolved the
// tier keeps the list as the caller made it (secretpaths.Compute lists
// each link's real location) instead of resolving it again at its start.
// Each command still resolves the list: a link re-pointed after the tier
// started has its new target masked, and its old one too when the list
// named it, as Compute's does. A list without it leaves the old target to
// the caller: the tier did not resolve the list a second time.
func TestHiddenResolvedTakesTheListAsGiven(t *testing.T) {
	fx, dirs, link := credsFixture(t)
	repoint := func(t *testing.T) {
		os.Remove(link)
		if err := os.Symlink(dirs[0], link); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("the list names the old target", func(t *testing.T) {
		repoint(t)
		tier := newTestTier(t, sandbox.Options{Hidden: []string{link, dirs[0]}, HiddenResolved: true})
		os.Remove(link)
		if err := os.Symlink(dirs[1], link); err != nil {
			t.Fatal(err)
		}
		noLeak(t, run(t, tier, fx, `cat creds-a/credentials creds-b/credentials .aws/credentials`), fx.secretText)
	})
	t.Run("the list does not", func(t *testing.T) {
		repoint(t)
		tier := newTestTier(t, sandbox.Options{Hidden: []string{link}, HiddenResolved: true})
		os.Remove(link)
		if err := os.Symlink(dirs[1], link); err != nil {
			t.Fatal(err)
		}
		r := run(t, tier, fx, `cat creds-a/credentials; cat creds-b/credentials .aws/credentials`)
		if !strings.Contains(r.Stdout, "AWS-"+fx.secretText) || strings.Count(r.Stdout, fx.secretText) != 1 {
			t.Fatalf("want creds-a readable (the tier took the list as given) and creds-b masked:\n%s", r.Observation())
		}
	})
}

// TestHiddenPathUnderASystemRoot: a protected path under /etc (readable
// to every command) is masked too, while one outside every root needs no
// mount at all.
func TestHiddenPathUnderASystemRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a directory under /etc needs root")
	}
	dir, err := os.MkdirTemp("/etc", "ironvise-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	fx := newFixture(t)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(fx.secretText), 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := fx.hostDir(t, "elsewhere")
	tier := newTestTier(t, sandbox.Options{Hidden: []string{dir, elsewhere}})
	r := run(t, tier, fx, "cat "+filepath.Join(dir, "token")+"; ls -A "+dir)
	noLeak(t, r, fx.secretText)
	if *r.Enforced.HiddenPaths != 1 {
		t.Fatalf("hidden_paths = %d; want 1 (the path under /etc; the other is out of reach anyway)", *r.Enforced.HiddenPaths)
	}
}

// TestHiddenPathsWithoutMaskLeak shows the attack itself: with no hidden
// paths configured, the same home workspace hands out the issuer key. This
// is what every run looked like before the mask.
func TestHiddenPathsWithoutMaskLeak(t *testing.T) {
	h := newHomeFixture(t)
	tier := newTestTier(t, sandbox.Options{})
	r := run(t, tier, h.fixture, `cat .local/share/ironvise/keys/issuer.ed25519`)
	contains(t, r, h.keyText)
}

func TestWorkspaceRefusals(t *testing.T) {
	h := newHomeFixture(t)
	tier := newTestTier(t, sandbox.Options{Hidden: h.hidden()})
	for _, ws := range []string{"/", "/etc", "/usr", h.dataDir, filepath.Join(h.dataDir, "keys"), filepath.Join(h.ws, ".ssh")} {
		r := tier.Run(context.Background(), sandbox.Request{Command: "cat *", Workspace: ws})
		if r.Status != sandbox.StatusAborted || r.Enforced != nil {
			t.Fatalf("workspace %s: status %s; want aborted: %s", ws, r.Status, r.Observation())
		}
		if !strings.Contains(r.Reason, "fix:") {
			t.Fatalf("workspace %s: reason names no fix: %s", ws, r.Reason)
		}
	}
}

func TestNetworkNamespace(t *testing.T) {
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) { testNetworkNamespace(t, opts) })
	}
}

func testNetworkNamespace(t *testing.T, opts sandbox.Options) {
	tier := newTestTier(t, opts)
	fx := newFixture(t)
	// A host listener whose port must not show in the command's
	// /proc/net/tcp.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	hexPort := strings.ToUpper(strconv.FormatInt(int64(port), 16))
	for len(hexPort) < 4 {
		hexPort = "0" + hexPort
	}
	r := run(t, tier, fx, `cat /proc/net/dev; echo TCP; cat /proc/net/tcp /proc/net/tcp6; echo ROUTE; cat /proc/net/route; echo UNIX; cat /proc/net/unix`)
	exitZero(t, r)
	if strings.Contains(r.Stdout, ":"+hexPort+" ") {
		t.Fatalf("the host's listener on port %d shows in the command's /proc/net/tcp:\n%s", port, r.Stdout)
	}
	dev, _, _ := strings.Cut(r.Stdout, "TCP")
	for line := range strings.SplitSeq(dev, "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) != "lo" {
			t.Fatalf("interface %q is visible in the command's network namespace:\n%s", name, r.Stdout)
		}
	}
	_, route, _ := strings.Cut(r.Stdout, "ROUTE")
	route, _, _ = strings.Cut(route, "UNIX")
	if n := len(strings.Split(strings.TrimSpace(route), "\n")); n > 1 {
		t.Fatalf("the command sees %d routes:\n%s", n-1, route)
	}
	// Interface names and addresses through SIOCGIFCONF, which works on
	// any socket, the AF_UNIX pair the command may create included.
	r = run(t, tier, fx, `python3 -c 'import socket, fcntl, struct, array
s = socket.socketpair()[0]
buf = array.array("B", bytes(40 * 32))
n = struct.unpack("iL", fcntl.ioctl(s.fileno(), 0x8912, struct.pack("iL", len(buf), buf.buffer_info()[0])))[0]
b = buf.tobytes()[:n]
print("IFS", [(b[i:i+16].split(b"\0")[0].decode(), socket.inet_ntoa(b[i+20:i+24])) for i in range(0, n, 40)])'`)
	contains(t, r, "IFS [('lo', '127.0.0.1')]")
	if !strings.Contains(strings.Join(r.Enforced.Namespaces, ","), "net") {
		t.Fatalf("namespaces %v lack net", r.Enforced.Namespaces)
	}
}

func TestScratchIsACappedTmpfs(t *testing.T) {
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) { testScratchIsACappedTmpfs(t, opts) })
	}
}

func testScratchIsACappedTmpfs(t *testing.T, opts sandbox.Options) {
	opts.ScratchMiB = 4
	tier := newTestTier(t, opts)
	fx := newFixture(t)
	// Bytes: 64 files of 1 MiB, each under RLIMIT_FSIZE; the total cap
	// stops the writes at 4 MiB.
	r := run(t, tier, fx, `i=0; while [ $i -lt 64 ]; do head -c 1048576 /dev/zero > "$TMPDIR/f$i" || break; i=$((i+1)); done; echo WROTE $i; du -sk "$TMPDIR" | cut -f1; df -k "$TMPDIR" | tail -1`)
	contains(t, r, "No space left on device")
	if strings.Contains(r.Stdout, "WROTE 64") {
		t.Fatalf("64 MiB fit in a 4 MiB scratch: %s", r.Observation())
	}
	// Inodes: 4 MiB allows 1024 inodes.
	r = run(t, tier, fx, `cd "$TMPDIR" && i=0; while [ $i -lt 3000 ]; do : > "f$i" 2>/dev/null || break; i=$((i+1)); done; echo MADE $i`)
	if strings.Contains(r.Stdout, "MADE 3000") {
		t.Fatalf("3000 files fit in a scratch capped at %d inodes: %s", 4*launch.ScratchInodesPerMiB, r.Observation())
	}
	if s := r.Enforced.Scratch; s == nil || s.MiB != 4 || s.Inodes != 4*launch.ScratchInodesPerMiB || s.Cleanup != sandbox.ScratchRemoved {
		t.Fatalf("enforced scratch %+v", r.Enforced.Scratch)
	}
	// /dev/shm is the same tmpfs: what it holds counts against the cap,
	// and the host's /dev/shm is neither seen nor written.
	hostShm := filepath.Join("/dev/shm", "ironvise-test-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.WriteFile(hostShm, []byte("host"), 0o644); err == nil {
		defer os.Remove(hostShm)
	}
	r = run(t, tier, fx, `ls /dev/shm; head -c 3145728 /dev/zero > /dev/shm/big && echo SHM-OK; head -c 2097152 /dev/zero > "$TMPDIR/more" || echo TMP-FULL; ls /dev/shm`)
	if !strings.Contains(r.Stdout, "SHM-OK") || !strings.Contains(r.Stdout, "TMP-FULL") || strings.Contains(r.Stdout, filepath.Base(hostShm)) {
		t.Fatalf("/dev/shm is not the command's own share of the scratch cap: %s", r.Observation())
	}
	if _, err := os.Stat("/dev/shm/big"); err == nil {
		t.Fatal("the command wrote the host's /dev/shm")
	}
	// What a command leaves behind, even a tree it made unremovable for
	// its own user, goes with its mount namespace.
	r = run(t, tier, fx, `mkdir -p "$TMPDIR/locked/deep" && : > "$TMPDIR/locked/deep/f" && chmod 000 "$TMPDIR/locked/deep" "$TMPDIR/locked" && echo LOCKED`)
	contains(t, r, "LOCKED")
	if r.Enforced.Scratch.Cleanup != sandbox.ScratchRemoved {
		t.Fatalf("cleanup: %s", r.Enforced.Scratch.Cleanup)
	}
	scratchLeftNothing(t, tier, r)
}

// TestPythonMultiprocessing: POSIX semaphores in /dev/shm work (a Pool of
// workers, as test runners and builds use).
func TestPythonMultiprocessing(t *testing.T) {
	requireTool(t, "/usr/bin/python3")
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) {
			tier := newTestTier(t, opts)
			r := run(t, tier, newFixture(t), `python3 -c 'import multiprocessing as m
with m.Pool(2) as p: print("SUM", sum(p.map(abs, [-1, -2, -3])))'`)
			exitZero(t, r)
			contains(t, r, "SUM 6")
		})
	}
}

func TestVerificationCatchesWhatTheKernelDidNotEnforce(t *testing.T) {
	cases := []struct {
		name   string
		inject map[string]int
		noNet  bool
		want   string
	}{
		{"seccomp accepted but not installed", map[string]int{launch.StepSeccomp: launch.InjectSkip}, false, "Seccomp"},
		{"landlock accepted but not applied", map[string]int{launch.StepLandlock: launch.InjectSkip}, false, "EACCES"},
		{"host network namespace", nil, true, "want only lo"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tier := newTestTier(t, sandbox.Options{})
			tier.inject, tier.noNetNS = tc.inject, tc.noNet
			fx := newFixture(t)
			r := tier.Run(context.Background(), sandbox.Request{Command: "echo RAN", Workspace: fx.ws, Timeout: 20 * time.Second})
			if r.Status != sandbox.StatusAborted || strings.Contains(r.Stdout, "RAN") {
				t.Fatalf("status %s; want aborted before exec: %s", r.Status, r.Observation())
			}
			if !strings.Contains(r.Reason, "verify") || !strings.Contains(r.Reason, tc.want) {
				t.Fatalf("reason %q; want the verify step naming %q", r.Reason, tc.want)
			}
		})
	}
	tier := newTestTier(t, sandbox.Options{})
	r := run(t, tier, newFixture(t), "true")
	want := []string{launch.VerifiedSeccomp, launch.VerifiedNoNewPrivs, launch.VerifiedCaps, launch.VerifiedLandlock, launch.VerifiedNetwork}
	if strings.Join(r.Enforced.Verified, ",") != strings.Join(want, ",") {
		t.Fatalf("verified %v; want %v", r.Enforced.Verified, want)
	}
}

// userOptions are the ways the tier runs a command: as the test's user,
// and as nobody when the test is root.
func userOptions(t *testing.T) []sandbox.Options {
	opts := []sandbox.Options{{}}
	if os.Geteuid() == 0 {
		opts = append(opts, sandbox.Options{User: "nobody"})
	}
	return opts
}

func optsName(o sandbox.Options) string {
	if o.User != "" {
		return "as_" + o.User
	}
	return "as_uid_" + strconv.Itoa(os.Geteuid())
}
