//go:build linux

package microvm

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// The microvm tests build three real things once: the guest init
// (cmd/ironvise-guest, static), the stand-in VMM (testdata/standin-vmm) and,
// with scripts/provision-firecracker.sh, the busybox root filesystem whose
// /init is that guest. The stand-in replaces Firecracker only because KVM
// cannot boot a guest on every test machine; everything else is real.
//
// Building the rootfs needs Debian's busybox-static and e2fsprogs. Without
// them the tests that need it skip, unless IRONVISE_TEST_ROOTFS=1 (set by
// CI) makes that a failure.
const rootfsEnv = "IRONVISE_TEST_ROOTFS"

var fx struct {
	dir     string // everything below
	guest   string // the guest init binary
	standin string // the stand-in VMM binary
	prefix  string // --prefix of the provisioning run
	rootfs  string // the provisioned rootfs
	kernel  string // a file standing in for vmlinux
	log     string // the provisioning script's output
	err     error  // why the rootfs could not be built
}

func TestMain(m *testing.M) {
	code := 1
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "microvm tests:", err)
	} else {
		code = m.Run()
	}
	if fx.dir != "" {
		os.RemoveAll(fx.dir)
	}
	os.Exit(code)
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func setup() error {
	var err error
	if fx.dir, err = os.MkdirTemp("", "ironvise-microvm-test-"); err != nil {
		return err
	}
	_ = os.Chmod(fx.dir, 0o755)
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the go tool is needed to build the guest and the stand-in VMM: %w", err)
	}
	build := func(out, pkg string) error {
		cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, pkg)
		cmd.Dir = repoRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
		return nil
	}
	fx.guest = filepath.Join(fx.dir, "ironvise-guest")
	fx.standin = filepath.Join(fx.dir, "standin-vmm")
	if err := build(fx.guest, "./cmd/ironvise-guest"); err != nil {
		return err
	}
	if err := build(fx.standin, "./internal/sandbox/microvm/testdata/standin-vmm"); err != nil {
		return err
	}
	fx.kernel = filepath.Join(fx.dir, "vmlinux")
	kernel := make([]byte, 64<<10)
	_, _ = rand.Read(kernel)
	if err := os.WriteFile(fx.kernel, kernel, 0o644); err != nil {
		return err
	}
	fx.prefix = filepath.Join(fx.dir, "opt")
	fx.rootfs = filepath.Join(fx.prefix, "rootfs.ext4")
	out, err := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "provision-firecracker.sh"),
		"--rootfs", "busybox", "--prefix", fx.prefix, "--guest", fx.guest).CombinedOutput()
	fx.log = string(out)
	if err != nil {
		fx.err = fmt.Errorf("scripts/provision-firecracker.sh --rootfs busybox: %v\n%s", err, out)
	} else if _, err := exec.LookPath("debugfs"); err != nil {
		fx.err = fmt.Errorf("debugfs (e2fsprogs) is needed to read the rootfs: %w", err)
	}
	return nil
}

// needRootfs skips (or, under IRONVISE_TEST_ROOTFS=1, fails) a test that
// needs the provisioned rootfs when it could not be built.
func needRootfs(t *testing.T) {
	t.Helper()
	if fx.err == nil {
		return
	}
	if os.Getenv(rootfsEnv) == "1" {
		t.Fatalf("%v (%s=1 requires it: apt-get install busybox-static e2fsprogs)", fx.err, rootfsEnv)
	}
	t.Skipf("skipping: the busybox rootfs could not be built (apt-get install busybox-static e2fsprogs, or set %s=1 to make this a failure): %v", rootfsEnv, fx.err)
}

// vmm writes a wrapper that runs the stand-in VMM with its test flags, as
// ECTO_FC_BINARY points at it, and returns its path and the record file.
func vmm(t *testing.T, flags ...string) (bin, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "record.json")
	var q []string
	for _, f := range append(flags, "-record", record) {
		q = append(q, "'"+strings.ReplaceAll(f, "'", `'\''`)+"'")
	}
	bin = filepath.Join(dir, "firecracker")
	script := fmt.Sprintf("#!/bin/sh\nexec %s %s -- \"$@\"\n", fx.standin, strings.Join(q, " "))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, record
}

// newTier returns the tier with the stand-in VMM in mode, the provisioned
// rootfs and the stand-in kernel. KVM is a file here: the stand-in needs
// none.
func newTier(t *testing.T, mode string, mut ...func(*sandbox.Options)) (*Tier, string) {
	t.Helper()
	needRootfs(t)
	bin, record := vmm(t, "-mode", mode)
	opts := sandbox.Options{FCBinary: bin, MicroVM: sandbox.MicroVMOptions{Kernel: fx.kernel, Rootfs: fx.rootfs, Timeout: 20 * time.Second}}
	for _, m := range mut {
		m(&opts)
	}
	tier, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	tt := tier.(*Tier)
	tt.kvmDevice = filepath.Join(t.TempDir(), "kvm")
	if err := os.WriteFile(tt.kvmDevice, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tt.tempDir = t.TempDir()
	return tt, record
}

func run(t *testing.T, tier *Tier, req sandbox.Request) sandbox.Result {
	t.Helper()
	if req.Workspace == "" {
		req.Workspace = t.TempDir()
	}
	res := tier.Run(context.Background(), req)
	t.Logf("%s: %s (%.2f s)", req.Command, strings.ReplaceAll(res.Observation(), "\n", " | "), res.Duration.Seconds())
	return res
}

// assertNoRunFiles checks that every run's directory is gone.
func assertNoRunFiles(t *testing.T, tier *Tier) {
	t.Helper()
	entries, err := os.ReadDir(tier.tempDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("run files left in %s: %v", tier.tempDir, names)
	}
}
