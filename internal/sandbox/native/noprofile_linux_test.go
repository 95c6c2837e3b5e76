//go:build linux && !(amd64 || arm64)

package native

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// On Linux without a seccomp profile (here riscv64, 386, ...; .ci/run runs
// this under qemu-user, make cross-test) the tier fails closed: it says it
// is unavailable, and a command sent to it anyway is aborted before any
// launcher starts, its effect nowhere.
func TestNoSeccompProfileFailsClosed(t *testing.T) {
	for _, container := range []bool{false, true} {
		tr, err := New(sandbox.Options{ContainerMode: container})
		if err != nil {
			t.Fatalf("container mode %v: New: %v", container, err)
		}
		tier := tr.(*Tier)
		if !errors.Is(tier.seccompErr, errors.ErrUnsupported) {
			t.Fatalf("container mode %v: the seccomp profile was %v, error %v; want ErrUnsupported", container, tier.seccomp, tier.seccompErr)
		}
		if err := tier.Available(context.Background()); err == nil {
			t.Errorf("container mode %v: the tier says it is available", container)
		}
		ws := t.TempDir()
		r := tier.Run(context.Background(), sandbox.Request{Command: "touch ran", Workspace: ws, Timeout: 10 * time.Second})
		if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "seccomp") {
			t.Errorf("container mode %v: status %q reason %q; want aborted for want of a seccomp profile", container, r.Status, r.Reason)
		}
		if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
			t.Errorf("container mode %v: the command ran", container)
		}
		tier.Close()
	}
}
