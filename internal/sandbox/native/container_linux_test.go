//go:build linux

package native

import (
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

func TestContainerModeSmoke(t *testing.T) {
	fx := newFixture(t)
	tier := newTestTier(t, sandbox.Options{ContainerMode: true})
	r := run(t, tier, fx, "echo hi; id; echo $TMPDIR; ls /proc | head -3; cat /proc/self/status | grep -i cap")
	t.Logf("%s\n%+v", r.Observation(), *r.Enforced)
}
