//go:build linux

package microvm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/guestproto"
)

// standinRecord is what the stand-in VMM saw (testdata/standin-vmm).
type standinRecord struct {
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	PID    int      `json:"pid"`
	Config vmConfig `json:"config"`
	Intent []byte   `json:"intent"`
	Files  []string `json:"files"`
}

func readRecord(t *testing.T, path string) standinRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the stand-in VMM left no record: %v", err)
	}
	var r standinRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func sha(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestMicroVMRunsTheCommandInTheGuest(t *testing.T) {
	tier, record := newTier(t, "ok", func(o *sandbox.Options) { o.MicroVM.VCPUs, o.MicroVM.MemMiB = 2, 256 })
	res := run(t, tier, sandbox.Request{Command: `echo hello; echo warn >&2; id -u; exit 3`, Env: []string{"OPENAI_API_KEY=sk-secret", "TZ=UTC"}})
	if res.Status != sandbox.StatusOK || res.ExitCode == nil || *res.ExitCode != 3 || res.Signal != "" {
		t.Fatalf("got %s", res.Headline())
	}
	if res.Stdout != "hello\n65534\n" || res.Stderr != "warn\n" {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	e := res.Enforced
	if e == nil || e.Runtime != "firecracker" || e.RuntimeVersion != "1.7.0" || e.Network != "none" ||
		e.VMKernelSHA256 != sha(t, fx.kernel) || e.VMRootfsSHA256 != sha(t, fx.rootfs) ||
		e.VM == nil || e.VM.VCPUs != 2 || e.VM.MemMiB != 256 || e.UID == nil || *e.UID != 65534 ||
		e.Capabilities != "none" || e.NoNewPrivs == nil || !*e.NoNewPrivs {
		t.Fatalf("enforced %+v", e)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"vm_kernel_sha256":"` + e.VMKernelSHA256, `"vm_rootfs_sha256":"`, `"runtime":"firecracker"`, `"runtime_version":"1.7.0"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("sandbox_result lacks %s", k)
		}
	}

	// What the VMM was given.
	rec := readRecord(t, record)
	c := rec.Config
	if len(c.Drives) != 2 || c.Drives[0].PathOnHost != fx.rootfs || !c.Drives[0].IsRootDevice || !c.Drives[0].IsReadOnly ||
		c.Drives[1].IsRootDevice || !c.Drives[1].IsReadOnly || len(c.Network) != 0 ||
		c.MachineConfig.VCPUCount != 2 || c.MachineConfig.MemSizeMiB != 256 || c.BootSource.KernelImagePath != fx.kernel ||
		!strings.Contains(c.BootSource.BootArgs, "console=ttyS0") || !strings.Contains(c.BootSource.BootArgs, "init=/init") {
		t.Fatalf("VM configuration %+v", c)
	}
	if !slices.Contains(rec.Args, "--no-api") || !slices.Contains(rec.Args, "--config-file") {
		t.Errorf("VMM arguments %q", rec.Args)
	}
	for _, kv := range rec.Env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "PWD=") {
			t.Errorf("the VMM inherited %q", kv)
		}
	}
	if len(rec.Intent)%guestproto.SectorSize != 0 || rec.Intent[len(rec.Intent)-1] != 0 {
		t.Fatalf("intent image of %d bytes, last byte %d", len(rec.Intent), rec.Intent[len(rec.Intent)-1])
	}
	in, err := guestproto.DecodeIntent(rec.Intent)
	if err != nil {
		t.Fatal(err)
	}
	if cmd, _ := in.Command(); cmd != `echo hello; echo warn >&2; id -u; exit 3` || in.Run.TimeoutSecs != 17 ||
		in.Run.Limits.CPUSecs != 30 || in.Run.Limits.NoFile != 64 {
		t.Fatalf("intent %q %+v", cmd, in.Run)
	}
	if strings.Contains(string(rec.Intent), "sk-secret") || !slices.Contains(in.Run.Env, "TZ=UTC") {
		t.Fatalf("intent environment %q", in.Run.Env)
	}
	if files := strings.Join(rec.Files, " "); files != "intent.img vm.json vmm.log" {
		t.Errorf("run directory held %q", files)
	}
	assertNoRunFiles(t, tier)
	if err := tier.SelfTest(context.Background()); err != nil {
		t.Fatalf("SelfTest: %v", err)
	}
	assertNoRunFiles(t, tier)
}

func TestMicroVMOutputIsCapped(t *testing.T) {
	tier, _ := newTier(t, "ok")
	res := run(t, tier, sandbox.Request{Command: "yes 0123456789 | head -c 3000000"})
	if res.Status != sandbox.StatusOK || !res.StdoutTruncated || len(res.Stdout) > sandbox.StreamCap+64 ||
		!strings.HasSuffix(res.Stdout, "[truncated: 2934464 bytes omitted]") {
		t.Fatalf("got %s, %d bytes, truncated=%v, tail %q", res.Headline(), len(res.Stdout), res.StdoutTruncated, res.Stdout[max(0, len(res.Stdout)-60):])
	}
}

func TestMicroVMFailuresAbort(t *testing.T) {
	cases := []struct {
		mode, want string
	}{
		{"silent", "the microVM produced no output"},
		{"garbage", "carries no IronVise result frame"},
		{"unframed", "the root filesystem does not implement the IronVise guest protocol"},
		{"truncate", "was cut short"},
		{"badnonce", "carries no IronVise result frame"},
		{"fail", `the VMM failed (exit status 1): standin-vmm: Error creating the virtual machine`},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			tier, _ := newTier(t, tc.mode)
			marker := filepath.Join(t.TempDir(), "ran")
			res := run(t, tier, sandbox.Request{Command: "touch " + marker + "; echo ran"})
			if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, tc.want) || res.ProcessExitCode() != 125 {
				t.Fatalf("got %s; want aborted with %q", res.Headline(), tc.want)
			}
			if res.Stdout != "" || res.ExitCode != nil {
				t.Fatalf("an aborted run carries output %q or an exit code", res.Stdout)
			}
			assertNoRunFiles(t, tier)
		})
	}
}

func TestMicroVMHangIsKilledAtTheTimeout(t *testing.T) {
	tier, record := newTier(t, "hang", func(o *sandbox.Options) { o.MicroVM.Timeout = 2 * time.Second })
	start := time.Now()
	res := run(t, tier, sandbox.Request{Command: "echo never"})
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the run took %s", d)
	}
	if res.Status != sandbox.StatusTimeout || res.Signal != "SIGKILL" || !strings.Contains(res.Reason, "with no result from the guest; the microVM was killed") ||
		res.ProcessExitCode() != 137 || !strings.HasPrefix(res.Headline(), "[timeout after 2 s]") {
		t.Fatalf("got %s (%s)", res.Headline(), res.Reason)
	}
	pid := readRecord(t, record).PID
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the VMM (pid %d) is still there: %v", pid, err)
	}
	assertNoRunFiles(t, tier)
}

// TestMicroVMGuestSideTimeout: the guest's own, shorter timeout kills a
// command that runs too long and still reports its output.
func TestMicroVMGuestSideTimeout(t *testing.T) {
	// 8 s on the host leaves the guest 5 s: the 3 s margin covers the
	// boot (here the stand-in's start) even on a loaded machine.
	tier, _ := newTier(t, "ok", func(o *sandbox.Options) { o.MicroVM.Timeout = 8 * time.Second })
	res := run(t, tier, sandbox.Request{Command: "echo partial; sleep 60"})
	if res.Status != sandbox.StatusTimeout || res.Stdout != "partial\n" || !strings.Contains(res.Reason, "guest-side timeout of 5 s") {
		t.Fatalf("got %s %q (%s)", res.Headline(), res.Stdout, res.Reason)
	}
	assertNoRunFiles(t, tier)
}

func TestMicroVMPreflight(t *testing.T) {
	needRootfs(t)
	cases := []struct {
		name string
		mut  func(*Tier)
		want string
	}{
		{"binary unset", func(tt *Tier) { tt.binary = "" }, "ECTO_FC_BINARY is not set"},
		{"binary missing", func(tt *Tier) { tt.binary = "/nonexistent/firecracker" }, "the firecracker binary /nonexistent/firecracker cannot be used"},
		{"not firecracker", func(tt *Tier) { tt.binary = "/bin/true" }, "did not report a Firecracker version"},
		{"too old", func(tt *Tier) { tt.binary, _ = vmm(t, "-version", "1.4.1") }, "Firecracker 1.4.1 is too old (1.5 or newer is needed)"},
		{"no KVM", func(tt *Tier) { tt.kvmDevice = "/nonexistent/kvm" }, "KVM is not available on this host"},
		{"kernel missing", func(tt *Tier) { tt.kernel = "/nonexistent/vmlinux" }, "the guest kernel /nonexistent/vmlinux is missing (ECTO_FC_KERNEL)"},
		{"rootfs missing", func(tt *Tier) { tt.rootfs = "/nonexistent/rootfs.ext4" }, "the root filesystem /nonexistent/rootfs.ext4 is missing (ECTO_FC_ROOTFS)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tier, _ := newTier(t, "ok")
			tc.mut(tier)
			err := tier.Available(context.Background())
			if err == nil || !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "fix: ") {
				t.Fatalf("Available: %v; want %q and a fix", err, tc.want)
			}
			res := run(t, tier, sandbox.Request{Command: "echo hi"})
			if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, tc.want) {
				t.Fatalf("Run: %s", res.Headline())
			}
			assertNoRunFiles(t, tier)
		})
	}
	t.Run("KVM not writable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root opens any file")
		}
		tier, _ := newTier(t, "ok")
		os.Chmod(tier.kvmDevice, 0o400)
		if err := tier.Available(context.Background()); err == nil || !strings.Contains(err.Error(), "kvm group") {
			t.Fatalf("Available: %v", err)
		}
	})
}

// TestMicroVMRecordsTheFilesAsTheyAre: a rootfs replaced between runs is
// hashed again.
func TestMicroVMRecordsTheFilesAsTheyAre(t *testing.T) {
	tier, _ := newTier(t, "ok")
	kernel := filepath.Join(t.TempDir(), "vmlinux")
	os.WriteFile(kernel, []byte("kernel one"), 0o644)
	tier.kernel = kernel
	first := run(t, tier, sandbox.Request{Command: "true"})
	os.WriteFile(kernel, []byte("kernel two, longer"), 0o644)
	second := run(t, tier, sandbox.Request{Command: "true"})
	if first.Status != sandbox.StatusOK || second.Status != sandbox.StatusOK {
		t.Fatalf("%s %s", first.Headline(), second.Headline())
	}
	if first.Enforced.VMKernelSHA256 == second.Enforced.VMKernelSHA256 || second.Enforced.VMKernelSHA256 != sha(t, kernel) {
		t.Fatalf("kernel digests %s then %s", first.Enforced.VMKernelSHA256, second.Enforced.VMKernelSHA256)
	}
}

func TestGuestTimeoutMargin(t *testing.T) {
	for host, want := range map[time.Duration]int{time.Second: 1, 2 * time.Second: 1, 5 * time.Second: 2, 30 * time.Second: 27, time.Hour: 3597} {
		if got := guestTimeout(host); got != want {
			t.Errorf("guestTimeout(%s) = %d; want %d", host, got, want)
		}
	}
	if guestproto.KeepBytes < sandbox.StreamCap+4 {
		t.Fatalf("the guest keeps %d bytes per stream, less than the host's cap", guestproto.KeepBytes)
	}
}

// A proxy-mode request fails closed on this tier: the guest has no
// network device, and running it without the network the operator asked
// for would hide that. The VMM is never started.
func TestMicroVMAbortsProxyMode(t *testing.T) {
	tier, record := newTier(t, "ok")
	res := run(t, tier, sandbox.Request{Command: "echo ran", Egress: egress.NewRules([]string{"pypi.org"}, nil)})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "proxy mode is not supported on the Firecracker tier") ||
		!strings.Contains(res.Reason, "ECTO_SANDBOX_NETWORK=none") || strings.Contains(res.Stdout, "ran") {
		t.Fatalf("got %s: %q", res.Headline(), res.Reason)
	}
	if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the VMM was started for a proxy-mode request (record: %v)", err)
	}
}

// An overlay-mode request fails closed on this tier too.
func TestMicroVMAbortsOverlayMode(t *testing.T) {
	tier, record := newTier(t, "ok")
	up := t.TempDir()
	res := run(t, tier, sandbox.Request{Command: "echo ran", Overlay: &sandbox.Overlay{Upper: up, Work: t.TempDir()}})
	if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "overlay mode is not supported on the Firecracker tier") ||
		!strings.Contains(res.Reason, "ECTO_SANDBOX_WORKSPACE=ro") {
		t.Fatalf("got %s: %q", res.Headline(), res.Reason)
	}
	if _, err := os.Stat(record); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the VMM was started for an overlay-mode request (record: %v)", err)
	}
}
