package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// Sentinel errors, compared with errors.Is.
var (
	// ErrBusy is returned by Begin and Lock while another holder has the
	// session, in this process or another: a step layer of it is open
	// (neither accepted nor discarded; its command may be running on the
	// layers), or an apply or a discard is under way. DropThrough and
	// Remove return it while a step layer is open in this process.
	ErrBusy = errors.New("overlay: the session is busy: a command of it is running, or an apply or a discard")
	// ErrConflict is wrapped by Apply when a real file no longer matches
	// its recorded base (changed on the host) or an added path exists.
	ErrConflict = errors.New("overlay: the workspace changed since the step was recorded")
	// ErrTampered is wrapped by Apply when the layers no longer match the
	// recorded change sets (a change made behind IronVise's back).
	ErrTampered = errors.New("overlay: the layers do not match the recorded change sets")
	// ErrUnsafe is wrapped by Apply when a change would set a setuid or
	// setgid bit: applied by a privileged user it would hand the agent a
	// privileged program on the host.
	ErrUnsafe = errors.New("overlay: a change sets a setuid or setgid bit")
	// ErrUnsupported is wrapped where overlay layers cannot be read (a
	// non-Linux host, or a layer made with redirect_dir or metacopy).
	ErrUnsupported = errors.New("overlay: unsupported")
)

// acceptedMarker is the file whose presence makes a step layer part of
// the session's stack. It is created by rename, so a crash leaves either
// no marker (the layer is discarded on the next Begin) or a whole one.
const acceptedMarker = "accepted"

// Store keeps the per-session layers under one root directory
// (root/<session>/<step>/{upper,work,accepted}). The zero value is not
// usable; call NewStore.
type Store struct {
	root string

	mu sync.Mutex
	// open holds the sessions with a step layer between Begin and
	// Accept/Discard; guarded by mu.
	open map[string]bool
}

// NewStore returns a store rooted at root (typically
// $ECTO_DATA_DIR/overlays), creating it with mode 0700.
func NewStore(root string) (*Store, error) {
	if root == "" || !filepath.IsAbs(root) {
		return nil, fmt.Errorf("overlay: store root %q must be an absolute path", root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("overlay: create store root: %w", err)
	}
	// The layers hold workspace content the agent wrote; other users of
	// the host must not read them (the root may predate this process).
	if err := os.Chmod(root, 0o700); err != nil {
		return nil, fmt.Errorf("overlay: chmod store root: %w", err)
	}
	return &Store{root: root, open: map[string]bool{}}, nil
}

// Root returns the store's root directory.
func (s *Store) Root() string { return s.root }

// Layer is one accepted step layer of a session.
type Layer struct {
	Step int64
	// Dir holds upper/ and work/; Upper is the layer's content.
	Dir, Upper string
}

// Pending is a step layer between Begin and Accept or Discard. Exactly
// one of them must be called.
type Pending struct {
	store   *Store
	lock    *os.File // the session's lock, held until Accept or Discard
	session string
	step    int64
	dir     string
	below   []Layer
	done    bool
}

// validSession rejects session names that are not one plain path
// component: the name becomes a directory under the root, and "..", "/"
// or a leading dot would escape it or collide with the store's own files.
func validSession(session string) error {
	if session == "" || len(session) > 200 || strings.HasPrefix(session, ".") ||
		strings.ContainsAny(session, `/\`+"\x00") {
		return fmt.Errorf("overlay: invalid session name %q (one path component without a leading dot)", session)
	}
	return nil
}

func (s *Store) sessionDir(session string) string { return filepath.Join(s.root, session) }

// Begin creates a fresh, empty layer for step of session above the
// session's accepted layers and returns it. Layers left half-made by a
// crash (no accepted marker) are discarded first. Steps must increase:
// a step not above every accepted step is refused.
func (s *Store) Begin(session string, step int64) (*Pending, error) {
	if err := validSession(session); err != nil {
		return nil, err
	}
	if step <= 0 {
		return nil, fmt.Errorf("overlay: step %d must be positive", step)
	}
	s.mu.Lock()
	if s.open[session] {
		s.mu.Unlock()
		return nil, fmt.Errorf("begin step %d of session %q: %w", step, session, ErrBusy)
	}
	s.open[session] = true
	s.mu.Unlock()
	ok := false
	var lock *os.File
	defer func() {
		if !ok {
			s.release(session)
			if lock != nil {
				lock.Close()
			}
		}
	}()
	sd := s.sessionDir(session)
	if err := os.MkdirAll(sd, 0o700); err != nil {
		return nil, fmt.Errorf("overlay: create session dir: %w", err)
	}
	// Security: another process may hold the session (a second exec
	// --session, an apply): without the lock this Begin would discard its
	// pending layer as half-made, or run on layers an apply is removing.
	lock, err := lockFile(filepath.Join(sd, lockName))
	if err != nil {
		return nil, fmt.Errorf("begin step %d of session %q: %w", step, session, err)
	}
	if err := s.discardHalfMade(sd); err != nil {
		return nil, err
	}
	below, err := s.Layers(session)
	if err != nil {
		return nil, err
	}
	if n := len(below); n > 0 && below[n-1].Step >= step {
		return nil, fmt.Errorf("overlay: step %d of session %q is not above the last accepted step %d", step, session, below[n-1].Step)
	}
	dir := filepath.Join(sd, strconv.FormatInt(step, 10))
	// Mkdir is exclusive: a second process beginning the same step fails
	// here instead of sharing the layer.
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("overlay: create layer for step %d: %w", step, err)
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("overlay: create layer for step %d: %w", step, err)
		}
	}
	ok = true
	return &Pending{store: s, lock: lock, session: session, step: step, dir: dir, below: below}, nil
}

// lockName is the session's lock file in its directory; Layers and the
// half-made sweep skip it (not a step number).
const lockName = ".lock"

// Lock takes the session's lock for an apply or a discard, without
// waiting: ErrBusy while a step layer of the session is open (its command
// may be running on the layers) or another apply or discard holds it, in
// this process or another. unlock releases it.
func (s *Store) Lock(session string) (unlock func(), err error) {
	if err := s.notOpen(session, "lock"); err != nil {
		return nil, err
	}
	sd := s.sessionDir(session)
	if err := os.MkdirAll(sd, 0o700); err != nil {
		return nil, fmt.Errorf("overlay: create session dir: %w", err)
	}
	f, err := lockFile(filepath.Join(sd, lockName))
	if err != nil {
		return nil, fmt.Errorf("lock session %q: %w", session, err)
	}
	return func() { f.Close() }, nil
}

// notOpen checks the session's name and that no step layer of it is open
// in this process (a running command has the layers mounted); what names
// the operation in the error.
func (s *Store) notOpen(session, what string) error {
	if err := validSession(session); err != nil {
		return err
	}
	s.mu.Lock()
	busy := s.open[session]
	s.mu.Unlock()
	if busy {
		return fmt.Errorf("%s session %q: %w", what, session, ErrBusy)
	}
	return nil
}

func (s *Store) release(session string) {
	s.mu.Lock()
	delete(s.open, session)
	s.mu.Unlock()
}

// discardHalfMade removes step dirs without the accepted marker.
func (s *Store) discardHalfMade(sd string) error {
	ents, err := os.ReadDir(sd)
	if err != nil {
		return fmt.Errorf("overlay: read session dir: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".drop-") {
			// A layer DropThrough renamed away and did not finish removing.
			if err := os.RemoveAll(filepath.Join(sd, e.Name())); err != nil {
				return fmt.Errorf("overlay: remove dropped layer %s: %w", e.Name(), err)
			}
			continue
		}
		if _, err := strconv.ParseInt(e.Name(), 10, 64); err != nil || !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(sd, e.Name(), acceptedMarker)); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("overlay: check layer %s: %w", e.Name(), err)
		}
		if err := os.RemoveAll(filepath.Join(sd, e.Name())); err != nil {
			return fmt.Errorf("overlay: discard half-made layer %s: %w", e.Name(), err)
		}
	}
	return nil
}

// Step returns the pending layer's step.
func (p *Pending) Step() int64 { return p.step }

// Upper returns the pending layer's upper directory.
func (p *Pending) Upper() string { return filepath.Join(p.dir, "upper") }

// Overlay returns the value for sandbox.Request.Overlay: the accepted
// layers newest first, and this step's upper and work dirs.
func (p *Pending) Overlay() *sandbox.Overlay {
	o := &sandbox.Overlay{Upper: p.Upper(), Work: filepath.Join(p.dir, "work")}
	for i := len(p.below) - 1; i >= 0; i-- {
		o.Layers = append(o.Layers, p.below[i].Upper)
	}
	return o
}

// Accept makes the layer part of the session's stack.
func (p *Pending) Accept() error {
	if p.done {
		return fmt.Errorf("overlay: step %d already accepted or discarded", p.step)
	}
	// overlayfs leaves a root-only work/work dir; the stack never needs
	// the work dir again.
	if err := os.RemoveAll(filepath.Join(p.dir, "work")); err != nil {
		return fmt.Errorf("overlay: accept step %d: remove work dir: %w", p.step, err)
	}
	tmp := filepath.Join(p.dir, acceptedMarker+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("overlay: accept step %d: %w", p.step, err)
	}
	_, err = f.WriteString(strconv.FormatInt(p.step, 10) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(p.dir, acceptedMarker))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("overlay: accept step %d: %w", p.step, err)
	}
	p.done = true
	p.store.release(p.session)
	p.lock.Close()
	return nil
}

// Discard removes the layer and everything the command wrote.
func (p *Pending) Discard() error {
	if p.done {
		return nil
	}
	p.done = true
	defer p.lock.Close()
	defer p.store.release(p.session)
	if err := os.RemoveAll(p.dir); err != nil {
		return fmt.Errorf("overlay: discard step %d: %w", p.step, err)
	}
	return nil
}

// Layers lists the accepted layers of session, oldest first.
func (s *Store) Layers(session string) ([]Layer, error) {
	if err := validSession(session); err != nil {
		return nil, err
	}
	sd := s.sessionDir(session)
	ents, err := os.ReadDir(sd)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("overlay: list layers of %q: %w", session, err)
	}
	var out []Layer
	for _, e := range ents {
		step, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || step <= 0 || !e.IsDir() || e.Name() != strconv.FormatInt(step, 10) {
			continue
		}
		d := filepath.Join(sd, e.Name())
		if _, err := os.Lstat(filepath.Join(d, acceptedMarker)); err != nil {
			continue
		}
		out = append(out, Layer{Step: step, Dir: d, Upper: filepath.Join(d, "upper")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// DropThrough removes the accepted layers of session up to and including
// step through, oldest first, once Apply has written them into the
// workspace: the later layers then sit directly on a workspace that
// holds the earlier changes, which is the view they were recorded
// against, so they can be applied later in turn. A crash midway leaves
// an older prefix removed, never a hole in the middle of the stack.
func (s *Store) DropThrough(session string, through int64) error {
	if err := s.notOpen(session, "drop layers of"); err != nil {
		return err
	}
	layers, err := s.Layers(session)
	if err != nil {
		return err
	}
	for _, l := range layers {
		if l.Step > through {
			break
		}
		// Rename out of the stack first: a half-removed layer must not
		// stay listed.
		gone := filepath.Join(s.sessionDir(session), ".drop-"+strconv.FormatInt(l.Step, 10))
		if err := os.Rename(l.Dir, gone); err != nil {
			return fmt.Errorf("overlay: drop layer %d of session %q: %w", l.Step, session, err)
		}
		if err := os.RemoveAll(gone); err != nil {
			return fmt.Errorf("overlay: drop layer %d of session %q: %w", l.Step, session, err)
		}
	}
	return nil
}

// Remove deletes every layer of session.
func (s *Store) Remove(session string) error {
	if err := s.notOpen(session, "remove"); err != nil {
		return err
	}
	if err := os.RemoveAll(s.sessionDir(session)); err != nil {
		return fmt.Errorf("overlay: remove session %q: %w", session, err)
	}
	return nil
}
