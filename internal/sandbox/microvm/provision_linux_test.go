//go:build linux

package microvm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// debugfs runs one debugfs request against image.
func debugfs(t *testing.T, image, request string) string {
	t.Helper()
	out, err := exec.Command("debugfs", "-R", request, image).Output()
	if err != nil {
		t.Fatalf("debugfs -R %q: %v", request, err)
	}
	return string(out)
}

// TestProvisionBusyboxRootfs checks the image scripts/provision-firecracker.sh
// --rootfs busybox built offline in TestMain: an ext4 image whose /init is
// the guest, with busybox as /bin/sh and the mount points the guest needs.
func TestProvisionBusyboxRootfs(t *testing.T) {
	needRootfs(t)
	fi, err := os.Stat(fx.rootfs)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 16<<20 || fi.Size() > 64<<20 {
		t.Errorf("rootfs of %d bytes", fi.Size())
	}
	if b, _ := exec.Command("dumpe2fs", "-h", fx.rootfs).Output(); !bytes.Contains(b, []byte("Filesystem volume name:   ironvise-root")) {
		t.Errorf("not an ext4 image labelled ironvise-root:\n%s", b)
	}

	// /init is the guest init, byte for byte, root-owned and executable.
	dump := filepath.Join(t.TempDir(), "init")
	debugfs(t, fx.rootfs, "dump /init "+dump)
	got, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(fx.guest)
	if !bytes.Equal(got, want) {
		t.Fatalf("/init (%d bytes) is not the guest binary (%d bytes)", len(got), len(want))
	}
	st := debugfs(t, fx.rootfs, "stat /init")
	if !strings.Contains(st, "Type: regular") || !strings.Contains(st, "Mode:  0755") || !strings.Contains(st, "User:     0   Group:     0") {
		t.Errorf("/init: %s", firstLines(st, 3))
	}

	// /bin/sh is busybox; busybox is the static one.
	if st := debugfs(t, fx.rootfs, "stat /bin/sh"); !strings.Contains(st, "Type: symlink") || !strings.Contains(st, `Fast link dest: "busybox"`) {
		t.Errorf("/bin/sh: %s", st)
	}
	bb := filepath.Join(t.TempDir(), "busybox")
	debugfs(t, fx.rootfs, "dump /bin/busybox "+bb)
	if b, _ := os.ReadFile(bb); len(b) < 500<<10 || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		t.Errorf("/bin/busybox is %d bytes", len(b))
	}

	root := debugfs(t, fx.rootfs, "ls -l /")
	for _, dir := range []string{"bin", "dev", "proc", "sys", "tmp", "etc", "workspace"} {
		if !strings.Contains(root, " "+dir+"\n") && !strings.HasSuffix(strings.TrimSpace(root), " "+dir) {
			t.Errorf("no /%s in the root:\n%s", dir, root)
		}
	}
	if !strings.Contains(root, "41777") {
		t.Errorf("/tmp is not mode 1777:\n%s", root)
	}
	if p := debugfs(t, fx.rootfs, "cat /etc/passwd"); !strings.Contains(p, "nobody:x:65534:65534:") {
		t.Errorf("/etc/passwd: %q", p)
	}
	sum := sha256.Sum256(want)
	marker := debugfs(t, fx.rootfs, "cat /etc/ironvise-rootfs")
	if !strings.HasPrefix(marker, "ironvise-guest-protocol v1\n") || !strings.Contains(marker, "guest-sha256 "+hex.EncodeToString(sum[:])) {
		t.Errorf("/etc/ironvise-rootfs: %q", marker)
	}
	if !strings.Contains(fx.log, "installed "+fx.rootfs) || !strings.Contains(fx.log, "no guest kernel") {
		t.Errorf("script output:\n%s", fx.log)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], " | ")
}

func provision(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("bash", append([]string{filepath.Join(repoRoot(), "scripts", "provision-firecracker.sh")}, args...)...).CombinedOutput()
	return string(out), err
}

func TestProvisionKeepsAnExistingRootfs(t *testing.T) {
	needRootfs(t)
	prefix := t.TempDir()
	foreign := filepath.Join(prefix, "rootfs.ext4")
	if err := os.WriteFile(foreign, []byte("an operator's own image"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := provision(t, "--rootfs", "busybox", "--prefix", prefix, "--guest", fx.guest)
	if err != nil || !strings.Contains(out, "is NOT an IronVise busybox rootfs") || !strings.Contains(out, "delete it and re-run with --rootfs busybox") {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(foreign); string(b) != "an operator's own image" {
		t.Fatal("the existing rootfs was overwritten")
	}
	out, err = provision(t, "--rootfs", "busybox", "--prefix", prefix, "--guest", fx.guest, "--force")
	if err != nil || !strings.Contains(out, "installed "+foreign) {
		t.Fatalf("--force: %v\n%s", err, out)
	}
	out, err = provision(t, "--rootfs", "busybox", "--prefix", prefix, "--guest", fx.guest)
	if err != nil || !strings.Contains(out, "implements the IronVise guest protocol; nothing to do") {
		t.Fatalf("second run: %v\n%s", err, out)
	}
}

// TestProvisionOfficialRootfs: without --rootfs busybox the official CI
// rootfs comes first, with a warning that it does not implement the
// protocol; busybox only when the download fails. URLs are local files.
func TestProvisionOfficialRootfs(t *testing.T) {
	needRootfs(t)
	official := filepath.Join(t.TempDir(), "ubuntu-22.04.ext4")
	if err := os.WriteFile(official, []byte("official CI image"), 0o644); err != nil {
		t.Fatal(err)
	}
	kernel := filepath.Join(t.TempDir(), "vmlinux-5.10")
	if err := os.WriteFile(kernel, []byte("kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	out, err := provision(t, "--prefix", prefix, "--official-url", "file://"+official, "--kernel-url", "file://"+kernel)
	if err != nil || !strings.Contains(out, "does NOT implement the IronVise guest protocol") {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(prefix, "rootfs.ext4")); string(b) != "official CI image" {
		t.Fatalf("rootfs %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(prefix, "vmlinux")); string(b) != "kernel" {
		t.Fatalf("kernel %q", b)
	}

	prefix = t.TempDir()
	out, err = provision(t, "--prefix", prefix, "--official-url", "file:///nonexistent/ubuntu.ext4", "--kernel-url", "file:///nonexistent/vmlinux", "--guest", fx.guest)
	if err != nil || !strings.Contains(out, "downloading the official rootfs failed; falling back to the busybox rootfs") ||
		!strings.Contains(out, "installed "+filepath.Join(prefix, "rootfs.ext4")+" (busybox") || !strings.Contains(out, "downloading the guest kernel") {
		t.Fatalf("fallback: %v\n%s", err, out)
	}

	if out, err := provision(t, "--rootfs", "ubuntu"); err == nil || !strings.Contains(out, "accepted values are busybox and official") {
		t.Fatalf("bad --rootfs: %v %s", err, out)
	}
}

// TestSetupFirecracker installs the hello images from a local mirror and
// says that they are a plumbing test only.
func TestSetupFirecracker(t *testing.T) {
	if out, _ := exec.Command("uname", "-m").Output(); strings.TrimSpace(string(out)) != "x86_64" {
		t.Skip("the hello images exist for x86_64 only")
	}
	mirror := t.TempDir()
	for _, f := range []string{"kernel/hello-vmlinux.bin", "fsfiles/hello-rootfs.ext4"} {
		p := filepath.Join(mirror, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(f), 0o644)
	}
	prefix := t.TempDir()
	script := filepath.Join(repoRoot(), "scripts", "setup-firecracker.sh")
	out, err := exec.Command("bash", script, "--prefix", prefix, "--base-url", "file://"+mirror).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PLUMBING TEST ONLY") || !strings.Contains(string(out), "executes no intent") {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range []string{"hello-vmlinux.bin", "hello-rootfs.ext4"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Error(err)
		}
	}
	out, err = exec.Command("bash", script, "--prefix", t.TempDir(), "--base-url", "file:///nonexistent").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "download of file:///nonexistent/kernel/hello-vmlinux.bin failed") {
		t.Fatalf("offline: %v\n%s", err, out)
	}
}

// TestProvisionWithoutRoot builds the busybox rootfs as an unprivileged
// user: nothing is mounted, and the files still end up root-owned.
func TestProvisionWithoutRoot(t *testing.T) {
	needRootfs(t)
	if os.Geteuid() != 0 {
		t.Skip("runs the script as nobody, which needs root to switch to")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is not installed")
	}
	prefix := filepath.Join(fx.dir, "unpriv-"+filepath.Base(t.Name()))
	if err := os.MkdirAll(prefix, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(prefix, 0o777); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(prefix)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		"bash", filepath.Join(repoRoot(), "scripts", "provision-firecracker.sh"), "--rootfs", "busybox", "--prefix", prefix, "--guest", fx.guest)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=/nonexistent", "TMPDIR=" + prefix}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	image := filepath.Join(prefix, "rootfs.ext4")
	for _, p := range []string{"/init", "/bin/busybox", "/etc/passwd", "/tmp"} {
		if st := debugfs(t, image, "stat "+p); !strings.Contains(st, "User:     0   Group:     0") {
			t.Errorf("%s is not root-owned: %s", p, firstLines(st, 3))
		}
	}
}
