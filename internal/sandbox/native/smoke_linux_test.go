//go:build linux

package native

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox"
)

func TestSmoke(t *testing.T) {
	tier, err := New(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	r := tier.Run(context.Background(), sandbox.Request{Command: "id; pwd; echo hi > x; ls -la /proc | head -5; cat /proc/self/status | grep -E 'Cap|NoNew|Seccomp'; cat /etc/shadow | head -2; env", Workspace: ws})
	b, _ := json.MarshalIndent(r, "", "  ")
	t.Logf("%s", b)
	t.Logf("%s", r.Observation())
}
