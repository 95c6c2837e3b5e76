package tripwire

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/ironvise/ironvise/internal/secretpaths"
)

// TestDefaultsHashKey: the remembered hash of the defaults is the hash of
// the defaults loaded with those options, whatever was loaded before —
// other workspaces, other domains, the same again — and the key holds
// every field of LoadOptions that can shape the defaults.
func TestDefaultsHashKey(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	opts := []LoadOptions{
		{Workspace: a},
		{Workspace: b},
		{Workspace: a, EnvDomains: []string{"example.com"}, EnvDomainsSet: true},
		{Workspace: a, EnvDomainsSet: true},
		{Workspace: a, EnvDomains: []string{"example.com", "example.org"}, EnvDomainsSet: true},
		{},
		{Workspace: a},
	}
	keys := map[string]bool{}
	for i, opt := range opts {
		c, err := LoadConfigBytes(nil, opt)
		if err != nil {
			t.Fatal(err)
		}
		if want := defaultsHash(c); c.SHA256 != want {
			t.Fatalf("options %d %+v: remembered hash %s, the defaults hash to %s", i, opt, c.SHA256, want)
		}
		key := defaultsHashKey(opt, c)
		keys[key] = true
		defaultsHashes.mu.Lock()
		h, kept := defaultsHashes.m[key]
		defaultsHashes.mu.Unlock()
		if !kept || h != c.SHA256 {
			t.Fatalf("options %d: the hash was not remembered (kept %v, %s)", i, kept, h)
		}
	}
	if len(keys) != 6 {
		t.Fatalf("%d distinct keys for 6 distinct sets of options", len(keys))
	}
	// Every field but Warn (which only reports) must be in the key.
	var fields []string
	for f := range reflect.TypeFor[LoadOptions]().Fields() {
		fields = append(fields, f.Name)
	}
	if want := []string{"Workspace", "EnvDomains", "EnvDomainsSet", "Warn"}; !slices.Equal(fields, want) {
		t.Fatalf("LoadOptions has the fields %q, the key was written for %q: put each new one that can change the defaults in defaultsHashKey", fields, want)
	}
}

// TestProtectedIndexShared: tripwires made with the same protected list
// share one lookup map; a different list, or the same slice changed in
// place since, gets its own, and each finds exactly its own paths.
func TestProtectedIndexShared(t *testing.T) {
	dir := t.TempDir()
	list := secretpaths.List{Paths: []string{filepath.Join(dir, ".aws"), filepath.Join(dir, ".ssh")}}
	cfg := mustDefaults(t, dir)
	t1 := New(cfg, Options{Workspace: dir, Protected: list})
	t2 := New(cfg, Options{Workspace: dir, Protected: list})
	if reflect.ValueOf(t1.protected).Pointer() != reflect.ValueOf(t2.protected).Pointer() {
		t.Fatal("two tripwires of the same list built two maps")
	}
	list.Paths[1] = filepath.Join(dir, ".kube") // changed in place
	t3 := New(cfg, Options{Workspace: dir, Protected: list})
	if t3.protectedPath(filepath.Join(dir, ".kube", "config")) == nil || t3.protectedPath(filepath.Join(dir, ".ssh", "id")) != nil {
		t.Fatalf("after the list changed in place the tripwire protects %v", t3.protected)
	}
	if t1.protectedPath(filepath.Join(dir, ".ssh", "id")) == nil {
		t.Fatal("the first tripwire lost its list")
	}
	t4 := New(cfg, Options{Workspace: dir, Protected: secretpaths.List{Paths: []string{filepath.Join(dir, ".netrc")}}})
	if t4.protectedPath(filepath.Join(dir, ".aws")) != nil || t4.protectedPath(filepath.Join(dir, ".netrc")) == nil {
		t.Fatalf("another list's tripwire protects %v", t4.protected)
	}
	if t5 := New(cfg, Options{Workspace: dir}); len(t5.protected) != 0 {
		t.Fatalf("a tripwire without a list protects %v", t5.protected)
	}
}

func mustDefaults(t *testing.T, ws string) *Config {
	t.Helper()
	c, err := LoadConfigBytes(nil, LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
