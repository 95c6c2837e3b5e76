package overlay

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestStoreLifecycle(t *testing.T) {
	s := newStoreT(t)
	p, err := s.Begin("sess", 1)
	if err != nil {
		t.Fatal(err)
	}
	// One open step at a time per session; other sessions are free.
	if _, err := s.Begin("sess", 2); !errors.Is(err, ErrBusy) {
		t.Errorf("second Begin: got %v; want ErrBusy", err)
	}
	q, err := s.Begin("other", 1)
	if err != nil {
		t.Fatalf("another session: %v", err)
	}
	if err := q.Discard(); err != nil {
		t.Fatal(err)
	}
	o := p.Overlay()
	if len(o.Layers) != 0 || o.Upper == "" || o.Work == "" {
		t.Errorf("first overlay: %+v", o)
	}
	for _, d := range []string{s.Root(), filepath.Dir(filepath.Dir(o.Upper)), filepath.Dir(o.Upper), o.Upper, o.Work} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v; want 0700 (layers hold workspace content)", d, fi.Mode().Perm())
		}
	}
	if ls, _ := s.Layers("sess"); len(ls) != 0 {
		t.Errorf("a pending layer is listed: %+v", ls)
	}
	if err := p.Accept(); err != nil {
		t.Fatal(err)
	}
	if err := p.Accept(); err == nil {
		t.Error("a second Accept must fail")
	}
	p2, err := s.Begin("sess", 5)
	if err != nil {
		t.Fatal(err)
	}
	if o2 := p2.Overlay(); len(o2.Layers) != 1 || o2.Layers[0] != o.Upper {
		t.Errorf("second overlay layers %v; want [%s]", o2.Layers, o.Upper)
	}
	if err := p2.Accept(); err != nil {
		t.Fatal(err)
	}
	p3, err := s.Begin("sess", 7)
	if err != nil {
		t.Fatal(err)
	}
	if o3 := p3.Overlay(); len(o3.Layers) != 2 || o3.Layers[0] != filepath.Join(s.Root(), "sess", "5", "upper") {
		t.Errorf("third overlay layers %v; want step 5 first", o3.Layers)
	}
	if err := p3.Discard(); err != nil {
		t.Fatal(err)
	}
	ls, err := s.Layers("sess")
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].Step != 1 || ls[1].Step != 5 {
		t.Errorf("layers %+v; want steps 1, 5", ls)
	}
	if _, err := s.Begin("sess", 5); err == nil {
		t.Error("a step not above the last accepted one must be refused")
	}
	if err := s.Remove("sess"); err != nil {
		t.Fatal(err)
	}
	if ls, _ := s.Layers("sess"); len(ls) != 0 {
		t.Errorf("after Remove: %+v", ls)
	}
}

// TestStoreHalfMadeLayer simulates a crash between Begin and Accept (and
// one in the middle of writing the marker): the next Begin discards it.
func TestStoreHalfMadeLayer(t *testing.T) {
	s := newStoreT(t)
	p, err := s.Begin("sess", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Upper(), "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, acceptedMarker+".tmp"), []byte("3"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The process dies, which releases its lock: a new store over the
	// same root.
	p.lock.Close()
	s2, err := NewStore(s.Root())
	if err != nil {
		t.Fatal(err)
	}
	if ls, _ := s2.Layers("sess"); len(ls) != 0 {
		t.Errorf("a half-made layer is listed: %+v", ls)
	}
	p2, err := s2.Begin("sess", 3)
	if err != nil {
		t.Fatalf("Begin after a crash: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p2.Upper(), "f")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the half-made layer's content survived: %v", err)
	}
}

// TestStoreSessionNames refuses names that would leave the root.
func TestStoreSessionNames(t *testing.T) {
	s := newStoreT(t)
	for _, name := range []string{"", "..", "../x", "a/b", ".hidden", "a\x00b", `a\b`} {
		if _, err := s.Begin(name, 1); err == nil {
			t.Errorf("Begin(%q) succeeded", name)
		}
		if err := s.Remove(name); err == nil {
			t.Errorf("Remove(%q) succeeded", name)
		}
	}
	if _, err := s.Begin("ok", 0); err == nil {
		t.Error("step 0 accepted")
	}
	if _, err := NewStore("relative/dir"); err == nil {
		t.Error("a relative root accepted")
	}
}

func newStoreT(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore(filepath.Join(t.TempDir(), "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
