package enclave

import (
	"runtime"
	"testing"
)

func TestSupports(t *testing.T) {
	got := map[Level]bool{}
	for _, s := range Supports() {
		got[s.Level] = s.Supported
		if s.Note == "" || s.Name == "" {
			t.Errorf("%s: no name or note", s.Level)
		}
	}
	linux := runtime.GOOS == "linux"
	if len(got) != 3 || got[LevelApple] || got[LevelSoftware] != linux || got[LevelRemote] != linux {
		t.Fatalf("supports %v; want apple never, software and remote only on Linux", got)
	}
}
