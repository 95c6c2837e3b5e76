//go:build linux

package microvm

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TestRealFirecracker boots real microVMs. It runs when ECTO_FC_BINARY names
// a Firecracker binary and /dev/kvm can be opened; the kernel and rootfs
// come from ECTO_FC_KERNEL and ECTO_FC_ROOTFS (default /opt/ectoledger/…,
// where scripts/provision-firecracker.sh --rootfs busybox --kernel-url …
// installs them). A host whose KVM cannot run a guest (no nested
// virtualization) fails here with a timeout: do not set ECTO_FC_BINARY there.
func TestRealFirecracker(t *testing.T) {
	bin := os.Getenv("ECTO_FC_BINARY")
	if bin == "" {
		t.Skip("ECTO_FC_BINARY is not set: skipping the real-Firecracker test (the stand-in VMM tests cover the tier; set ECTO_FC_BINARY, ECTO_FC_KERNEL and ECTO_FC_ROOTFS on a host with working KVM to run it)")
	}
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err != nil {
		t.Skipf("/dev/kvm cannot be opened (%v): skipping the real-Firecracker test", err)
	} else {
		f.Close()
	}
	opts := sandbox.Options{FCBinary: bin, MicroVM: sandbox.MicroVMOptions{
		Kernel: os.Getenv("ECTO_FC_KERNEL"), Rootfs: os.Getenv("ECTO_FC_ROOTFS"), Timeout: 60 * time.Second,
	}}
	tier, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := tier.Available(ctx); err != nil {
		t.Fatalf("Available: %v", err)
	}
	res := tier.Run(ctx, sandbox.Request{Command: "echo hello from the guest; id -u; cat /proc/cmdline >&2; exit 3", Workspace: t.TempDir()})
	t.Logf("%s (%.2f s)", res.Observation(), res.Duration.Seconds())
	if res.Status != sandbox.StatusOK || res.ExitCode == nil || *res.ExitCode != 3 ||
		!strings.HasPrefix(res.Stdout, "hello from the guest\n65534\n") || !strings.Contains(res.Stderr, "console=ttyS0") {
		t.Fatalf("got %s %q %q", res.Headline(), res.Stdout, res.Stderr)
	}
	if e := res.Enforced; e.VMKernelSHA256 == "" || e.VMRootfsSHA256 == "" || e.RuntimeVersion == "" {
		t.Fatalf("enforced %+v", e)
	}
	if err := tier.SelfTest(ctx); err != nil {
		t.Fatalf("SelfTest: %v", err)
	}
	res = tier.Run(ctx, sandbox.Request{Command: "sleep 600", Workspace: t.TempDir(), Timeout: 8 * time.Second})
	if res.Status != sandbox.StatusTimeout {
		t.Fatalf("hang: %s", res.Headline())
	}
}
