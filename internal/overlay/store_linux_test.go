package overlay

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestInheritRoot mounts a layer over a workspace owned by another user
// and checks that user can still enter and write the merged root.
func TestInheritRoot(t *testing.T) {
	requireOverlay(t)
	ws := baseWorkspace(t)
	// The temp dirs above ws are root 0700; a real workspace is reachable.
	for d := ws; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(ws, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	p, err := s.Begin("s", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.InheritRoot(ws); err != nil {
		t.Fatal(err)
	}
	o := p.Overlay()
	m := filepath.Join(t.TempDir(), "m")
	mustMkdir(t, m)
	if err := os.Chmod(filepath.Dir(m), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := mountOverlay(m, []string{ws}, o.Upper, o.Work, ""); err != nil {
		t.Fatal(err)
	}
	defer unmount(t, m)
	cmd := exec.Command("sh", "-c", "cd "+m+" && cat a.txt >/dev/null && echo w > by-user")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 4242, Gid: 4242}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the workspace owner cannot use the merged root: %v\n%s", err, out)
	}
	// The layer itself stays private to root.
	fi, err := os.Stat(filepath.Dir(o.Upper))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("step dir mode %v; want 0700", fi.Mode().Perm())
	}
}

// TestBeginConcurrent starts many Begins of one session at once: one
// wins, the rest get ErrBusy.
func TestBeginConcurrent(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var won int
	var errs []string
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := s.Begin("s", int64(i+1))
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won++
			} else if !errors.Is(err, ErrBusy) && !strings.Contains(err.Error(), "not above") {
				errs = append(errs, err.Error())
			}
		}(i)
	}
	wg.Wait()
	if won != 1 || len(errs) > 0 {
		t.Errorf("%d Begins succeeded (want 1); other errors: %v", won, errs)
	}
}

// TestSessionLockAcrossStores: two stores on one root stand for two
// processes (an exec --session and an apply, two execs of one session).
// While one has a step layer of a session open, the other can neither
// begin a step of it (which would discard the open layer as half-made)
// nor lock it for an apply; once the layer is accepted, both can. A lock
// taken for an apply keeps Begin out in turn. The flock is per open file,
// so the same holds across processes.
func TestSessionLockAcrossStores(t *testing.T) {
	root := t.TempDir()
	a, err := NewStore(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewStore(root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := a.Begin("s", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Begin("s", 2); !errors.Is(err, ErrBusy) {
		t.Fatalf("Begin while another store has a layer open: %v; want ErrBusy", err)
	}
	if _, err := os.Stat(p.Upper()); err != nil {
		t.Fatalf("the open layer was discarded by the other store: %v", err)
	}
	if _, err := b.Lock("s"); !errors.Is(err, ErrBusy) {
		t.Fatalf("Lock while another store has a layer open: %v; want ErrBusy", err)
	}
	if err := p.Accept(); err != nil {
		t.Fatal(err)
	}
	unlock, err := b.Lock("s")
	if err != nil {
		t.Fatalf("Lock after the layer was accepted: %v", err)
	}
	if _, err := a.Begin("s", 2); !errors.Is(err, ErrBusy) {
		t.Fatalf("Begin while an apply holds the session: %v; want ErrBusy", err)
	}
	unlock()
	q, err := a.Begin("s", 2)
	if err != nil {
		t.Fatalf("Begin after the apply let go: %v", err)
	}
	if err := q.Discard(); err != nil {
		t.Fatal(err)
	}
	// Another session is not held by this one.
	r, err := b.Begin("other", 1)
	if err != nil {
		t.Fatal(err)
	}
	r.Discard()
}
