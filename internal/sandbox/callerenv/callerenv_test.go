package callerenv

import (
	"slices"
	"testing"

	"github.com/ironvise/ironvise/internal/sandbox/envallow"
)

func TestKeysAreAllowed(t *testing.T) {
	for _, k := range Keys() {
		if !envallow.Allowed(k) || envallow.Secret(k) {
			t.Errorf("%s is a candidate the sandbox's allowlist does not let through", k)
		}
	}
}

func TestCandidates(t *testing.T) {
	env := map[string]string{"TZ": "UTC", "LANG": "", "OPENAI_API_KEY": "sk-x", "LC_ALL": "C"}
	got := Candidates(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if want := []string{"LANG=", "TZ=UTC", "LC_ALL=C"}; !slices.Equal(got, want) {
		t.Fatalf("Candidates = %q; want %q", got, want)
	}
	if Candidates(func(string) (string, bool) { return "", false }) != nil {
		t.Fatal("no variable set: want nil")
	}
}
