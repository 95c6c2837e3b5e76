package config

import (
	"strings"
	"testing"
)

func TestWorkspaceModes(t *testing.T) {
	if w := mustLoad(t, "HOME", "/h").Sandbox.Workspace; w != WorkspaceRO {
		t.Fatalf("default workspace mode %q; want ro", w)
	}
	if w := mustLoad(t, "HOME", "/h", "ECTO_SANDBOX_WORKSPACE", "Overlay").Sandbox.Workspace; w != WorkspaceOverlay {
		t.Fatalf("workspace mode %q; want overlay", w)
	}
	// A typo must not decide whether commands may write: it is an error
	// naming the accepted values.
	_, err := Load(MapLookup(map[string]string{"HOME": "/h", "ECTO_SANDBOX_WORKSPACE": "rw"}))
	if err == nil || !strings.Contains(err.Error(), `ECTO_SANDBOX_WORKSPACE="rw": unknown value (accepted: ro, overlay)`) {
		t.Fatalf("ECTO_SANDBOX_WORKSPACE=rw: %v", err)
	}
}
