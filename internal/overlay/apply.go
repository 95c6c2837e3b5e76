package overlay

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ApplyOptions say what to apply.
type ApplyOptions struct {
	// Workspace is the real directory the session's lower layer is.
	Workspace string
	Session   string
	// Recorded are the change sets the ledger holds for the session's
	// accepted steps (Step set on each).
	Recorded []ChangeSet
	// Through applies the layers up to and including this step; 0 all.
	Through int64
	// DryRun checks and plans but changes nothing.
	DryRun bool
}

// ApplyResult is what Apply did (or, for a dry run, would do).
type ApplyResult struct {
	Session string   `json:"session"`
	Steps   []int64  `json:"steps"`
	Through int64    `json:"through"`
	DryRun  bool     `json:"dry_run"`
	Applied bool     `json:"applied"`
	Changes []Change `json:"changes"`
}

// Problem is one path Apply refuses, and why.
type Problem struct {
	Path   string `json:"path"`
	Step   int64  `json:"step,omitempty"`
	Reason string `json:"reason"`
}

// RefusalError lists the paths that made Apply refuse. It unwraps to
// ErrConflict, ErrTampered or ErrUnsafe.
type RefusalError struct {
	Kind     error
	Problems []Problem
}

func (e *RefusalError) Error() string {
	var b strings.Builder
	b.WriteString(e.Kind.Error())
	b.WriteString(":")
	for i, p := range e.Problems {
		if i == 8 {
			fmt.Fprintf(&b, " (and %d more)", len(e.Problems)-i)
			break
		}
		if p.Step > 0 {
			fmt.Fprintf(&b, " %s (step %d: %s);", p.Path, p.Step, p.Reason)
		} else {
			fmt.Fprintf(&b, " %s (%s);", p.Path, p.Reason)
		}
	}
	switch {
	case errors.Is(e.Kind, ErrConflict):
		b.WriteString(" resolve the files on the host or discard the session's changes, then retry")
	case errors.Is(e.Kind, ErrUnsafe):
		b.WriteString(" IronVise does not apply setuid or setgid bits: discard the session's changes or clear the bits on the host yourself")
	default:
		b.WriteString(" the layers cannot be trusted: discard the session's changes")
	}
	return b.String()
}

// Unwrap returns ErrConflict, ErrTampered or ErrUnsafe.
func (e *RefusalError) Unwrap() error { return e.Kind }

// state is an entry's identity for comparisons: absent, or a kind with
// its content (hash or target) and mode.
type state struct {
	present bool
	kind    Kind
	mode    string
	sha     string
	target  string
}

func (a state) equal(b state) bool {
	if a.present != b.present {
		return false
	}
	if !a.present {
		return true
	}
	if a.kind != b.kind || a.sha != b.sha || a.target != b.target {
		return false
	}
	// A symlink's mode means nothing and cannot be set on Linux.
	return a.kind == KindSymlink || a.mode == b.mode
}

func (a state) String() string {
	switch {
	case !a.present:
		return "absent"
	case a.kind == KindFile:
		return fmt.Sprintf("file %s sha256 %.12s", a.mode, a.sha)
	case a.kind == KindSymlink:
		return fmt.Sprintf("symlink to %q", a.target)
	}
	return fmt.Sprintf("%s %s", a.kind, a.mode)
}

func newState(c Change) state {
	return state{present: true, kind: c.Kind, mode: c.Mode, sha: c.SHA256, target: c.Target}
}

func baseState(c Change) state {
	return state{present: true, kind: c.BaseKind, mode: c.BaseMode, sha: c.BaseSHA256, target: c.BaseTarget}
}

// effects returns, per path, the state before and after a change set.
func effects(cs *ChangeSet) (before, after map[string]state) {
	before, after = map[string]state{}, map[string]state{}
	for _, c := range cs.Changes {
		switch c.Op {
		case OpAdded:
			before[c.Path], after[c.Path] = state{}, newState(c)
		case OpDeleted:
			before[c.Path], after[c.Path] = baseState(c), state{}
		case OpRenamed:
			before[c.From], after[c.From] = baseState(c), state{}
			before[c.Path], after[c.Path] = state{}, newState(c)
		default:
			before[c.Path], after[c.Path] = baseState(c), newState(c)
		}
	}
	return before, after
}

// validRel rejects recorded paths that could leave the workspace: the
// ledger is evidence, but Apply writes where it says, so a path with
// "..", an absolute path or an empty component is refused outright.
func validRel(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, 0) {
		return fmt.Errorf("overlay: recorded path %q is not a relative path", p)
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("overlay: recorded path %q has a %q component", p, c)
		}
	}
	return nil
}

// hostState reads the real entry at rel.
func hostState(ws, rel string) (state, error) {
	p := filepath.Join(ws, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("overlay: %w", err)
	}
	n := nodeOf(fi, p)
	s := state{present: true, kind: n.kind, mode: octal(n.mode)}
	switch n.kind {
	case KindFile:
		if s.sha, err = hashFile(p); err != nil {
			return state{}, err
		}
	case KindSymlink:
		if s.target, err = os.Readlink(p); err != nil {
			return state{}, fmt.Errorf("overlay: %w", err)
		}
	}
	return s, nil
}

// parentsAreDirs reports the first parent of rel under ws that is not a
// real directory. Writing through a symlinked parent would land outside
// the workspace (a symlink the host planted, or one a layer adds).
func parentsAreDirs(ws, rel string) (string, error) {
	comps := strings.Split(rel, "/")
	for i := 1; i < len(comps); i++ {
		p := strings.Join(comps[:i], "/")
		fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("overlay: %w", err)
		}
		if !fi.IsDir() {
			return p, nil
		}
	}
	return "", nil
}

// planned is one path of the net plan.
type planned struct {
	path          string
	before, after state
	src           string // the layer file with the new content
}

// Apply checks the session's layers against the recorded change sets and
// the real files against the recorded bases, then writes the net change
// into the workspace. It refuses, with a *RefusalError naming the files,
// on a conflict (ErrConflict) or a layer that differs from its record
// (ErrTampered), and undoes everything it did if a write fails.
func (s *Store) Apply(opts ApplyOptions) (*ApplyResult, error) {
	ws := opts.Workspace
	if !filepath.IsAbs(ws) {
		return nil, fmt.Errorf("overlay: workspace %q must be an absolute path", ws)
	}
	layers, err := s.Layers(opts.Session)
	if err != nil {
		return nil, err
	}
	rec := map[int64]*ChangeSet{}
	for i := range opts.Recorded {
		cs := &opts.Recorded[i]
		if _, dup := rec[cs.Step]; dup || cs.Step <= 0 {
			return nil, fmt.Errorf("overlay: recorded change sets: step %d is missing or repeated", cs.Step)
		}
		for _, c := range cs.Changes {
			if err := validRel(c.Path); err != nil {
				return nil, err
			}
			if c.From != "" {
				if err := validRel(c.From); err != nil {
					return nil, err
				}
			}
		}
		rec[cs.Step] = cs
	}
	res := &ApplyResult{Session: opts.Session, Through: opts.Through, DryRun: opts.DryRun, Changes: []Change{}}
	var sel []Layer
	for _, l := range layers {
		if opts.Through > 0 && l.Step > opts.Through {
			break
		}
		sel = append(sel, l)
		res.Steps = append(res.Steps, l.Step)
	}
	var tamper []Problem
	for step := range rec {
		if opts.Through > 0 && step > opts.Through {
			continue
		}
		if !containsStep(sel, step) {
			tamper = append(tamper, Problem{Path: "-", Step: step, Reason: "the recorded step has no layer"})
		}
	}
	// Tampering: each layer recomputed against what is below it must
	// give the recorded new states; a file edited, added or removed in
	// an upper dir after the record changes them.
	var below []string
	noDiff := Limits{DiffInput: -1}
	for _, l := range sel {
		r := rec[l.Step]
		if r == nil {
			tamper = append(tamper, Problem{Path: "-", Step: l.Step, Reason: "the layer has no recorded change set"})
			below = append([]string{l.Upper}, below...)
			continue
		}
		got, err := Compute(ws, below, l.Upper, noDiff)
		if err != nil {
			return nil, err
		}
		stack := append([]string{l.Upper}, below...)
		ps, err := compareRecord(ws, stack, r, got)
		if err != nil {
			return nil, err
		}
		for i := range ps {
			ps[i].Step = l.Step
		}
		tamper = append(tamper, ps...)
		below = stack
	}
	if len(tamper) > 0 {
		sortProblems(tamper)
		return nil, &RefusalError{Kind: ErrTampered, Problems: tamper}
	}
	// The net plan: per path the state before the first selected step
	// and after the last.
	plan := map[string]*planned{}
	for _, l := range sel {
		b, a := effects(rec[l.Step])
		for p, st := range b {
			if plan[p] == nil {
				plan[p] = &planned{path: p, before: st}
			}
			plan[p].after = a[p]
		}
	}
	top, err := newView(ws, below)
	if err != nil {
		return nil, err
	}
	var steps []*planned
	var conflicts []Problem
	for _, pl := range plan {
		if pl.before.equal(pl.after) {
			continue
		}
		host, err := hostState(ws, pl.path)
		if err != nil {
			return nil, err
		}
		if bad, err := parentsAreDirs(ws, pl.path); err != nil {
			return nil, err
		} else if bad != "" {
			conflicts = append(conflicts, Problem{Path: pl.path, Reason: "its parent " + bad + " is not a directory on the host"})
			continue
		}
		switch {
		case !pl.before.present && host.present:
			conflicts = append(conflicts, Problem{Path: pl.path, Reason: "added by the session but now exists on the host"})
			continue
		case !host.equal(pl.before):
			conflicts = append(conflicts, Problem{Path: pl.path, Reason: fmt.Sprintf("changed on the host: recorded %s, now %s", pl.before, host)})
			continue
		}
		if pl.after.present && pl.after.kind == KindFile {
			n, err := top.lookup(pl.path)
			if err != nil {
				return nil, err
			}
			if n == nil || n.kind != KindFile {
				return nil, &RefusalError{Kind: ErrTampered, Problems: []Problem{{Path: pl.path, Reason: "no file in the layers"}}}
			}
			pl.src = n.src
		}
		if pl.after.present && pl.after.kind != KindFile && pl.after.kind != KindDir && pl.after.kind != KindSymlink {
			conflicts = append(conflicts, Problem{Path: pl.path, Reason: "a " + string(pl.after.kind) + " entry cannot be applied"})
			continue
		}
		steps = append(steps, pl)
	}
	// A directory the plan deletes must hold nothing else on the host.
	for _, pl := range steps {
		if pl.before.present && pl.before.kind == KindDir && !(pl.after.present && pl.after.kind == KindDir) {
			ents, err := os.ReadDir(filepath.Join(ws, filepath.FromSlash(pl.path)))
			if err != nil {
				return nil, fmt.Errorf("overlay: %w", err)
			}
			for _, e := range ents {
				cp := pl.path + "/" + e.Name()
				if q := plan[cp]; q == nil || q.after.present {
					conflicts = append(conflicts, Problem{Path: cp, Reason: "on the host in a directory the session deletes"})
				}
			}
		}
	}
	var unsafe []Problem
	for _, pl := range steps {
		if m, err := parseMode(pl.after.mode); pl.after.present && pl.after.kind != KindSymlink && (err != nil || m&0o6000 != 0) {
			unsafe = append(unsafe, Problem{Path: pl.path, Reason: "mode " + pl.after.mode})
		}
	}
	if len(unsafe) > 0 {
		sortProblems(unsafe)
		return nil, &RefusalError{Kind: ErrUnsafe, Problems: unsafe}
	}
	if len(conflicts) > 0 {
		sortProblems(conflicts)
		return nil, &RefusalError{Kind: ErrConflict, Problems: conflicts}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].path < steps[j].path })
	for _, pl := range steps {
		res.Changes = append(res.Changes, planChange(pl))
	}
	if opts.DryRun {
		return res, nil
	}
	// Security: every write resolves its path beneath the workspace
	// (openat2 RESOLVE_BENEATH on Linux). The checks above read the host
	// by path; a process racing the apply could swap a checked directory
	// for a symlink to elsewhere before the writes, and a write by path
	// would follow it out of the workspace with IronVise's privileges.
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, fmt.Errorf("overlay: apply: open the workspace: %w", err)
	}
	defer root.Close()
	if beforeWrite != nil {
		beforeWrite()
	}
	if err := execute(root, steps); err != nil {
		return nil, err
	}
	res.Applied = true
	return res, nil
}

// beforeWrite, when set (tests only), runs between Apply's checks and its
// writes: where a racing process would act.
var beforeWrite func()

func containsStep(ls []Layer, step int64) bool {
	for _, l := range ls {
		if l.Step == step {
			return true
		}
	}
	return false
}

func sortProblems(ps []Problem) {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Step != ps[j].Step {
			return ps[i].Step < ps[j].Step
		}
		return ps[i].Path < ps[j].Path
	})
}

// compareRecord compares the recomputed change set of a layer with the
// recorded one by the states they leave behind; stack is the layer and
// everything below it.
func compareRecord(ws string, stack []string, rec, got *ChangeSet) ([]Problem, error) {
	_, ra := effects(rec)
	_, ga := effects(got)
	var v *view
	var out []Problem
	for p, want := range ra {
		if have, ok := ga[p]; ok {
			if !have.equal(want) {
				out = append(out, Problem{Path: p, Reason: fmt.Sprintf("recorded %s, the layer has %s", want, have)})
			}
			continue
		}
		// Not a change any more: what the stack shows must still be
		// what was recorded (the host may have made the same change).
		if v == nil {
			var err error
			if v, err = newView(ws, stack); err != nil {
				return nil, err
			}
		}
		n, err := v.lookup(p)
		if err != nil {
			return nil, err
		}
		have := state{}
		if n != nil {
			have = state{present: true, kind: n.kind, mode: octal(n.mode), target: n.target}
			if n.kind == KindFile {
				if have.sha, err = hashFile(n.src); err != nil {
					return nil, err
				}
			}
		}
		if !have.equal(want) {
			out = append(out, Problem{Path: p, Reason: fmt.Sprintf("recorded %s, the layers show %s", want, have)})
		}
	}
	for p, have := range ga {
		// A directory the record does not name is the copy-up of a
		// parent: Apply never creates it from the layer, and a host
		// that changed it is caught by the conflict checks of the
		// recorded paths under it.
		if _, ok := ra[p]; !ok && !(have.present && have.kind == KindDir) {
			out = append(out, Problem{Path: p, Reason: fmt.Sprintf("the layer has %s, which is not in the recorded change set", have)})
		}
	}
	return out, nil
}

func planChange(pl *planned) Change {
	c := Change{Path: pl.path}
	if pl.before.present {
		c.BaseKind, c.BaseMode, c.BaseSHA256, c.BaseTarget = pl.before.kind, pl.before.mode, pl.before.sha, pl.before.target
	}
	switch {
	case !pl.after.present:
		c.Op, c.Kind = OpDeleted, pl.before.kind
		return c
	case !pl.before.present:
		c.Op = OpAdded
	case pl.before.kind == pl.after.kind && pl.before.sha == pl.after.sha && pl.before.target == pl.after.target:
		c.Op = OpMode
	default:
		c.Op = OpModified
	}
	c.Kind, c.Mode, c.SHA256, c.Target = pl.after.kind, pl.after.mode, pl.after.sha, pl.after.target
	return c
}

func randName(kind string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return ".ironvise-" + hex.EncodeToString(b[:]) + "." + kind
}

// execute writes the plan. Every step pushes its undo; on an error the
// undos run newest first, so the workspace is back as it was. Replaced
// and deleted files are kept as hard links (or renamed) beside their
// target until the end.
func execute(root *os.Root, steps []*planned) (err error) {
	var undo []func() error
	var cleanup []string
	defer func() {
		if err == nil {
			for _, p := range cleanup {
				_ = root.Remove(p)
			}
			return
		}
		var rerr []error
		for i := len(undo) - 1; i >= 0; i-- {
			if e := undo[i](); e != nil {
				rerr = append(rerr, e)
			}
		}
		if len(rerr) > 0 {
			err = fmt.Errorf("%w; rolling back also failed (the workspace is partly applied): %w", err, errors.Join(rerr...))
		}
	}()
	// Paths are relative to the workspace root, slash-separated as
	// recorded (os.Root takes them so on every platform).
	abs := func(rel string) string { return rel }
	isDir := func(s state) bool { return s.present && s.kind == KindDir }
	// 1. Set aside the non-directories that go away or change kind, in
	// one directory at the workspace root: a backup beside its file
	// would keep a deleted directory from being removed.
	var bakDir string
	for i, pl := range steps {
		b, a := pl.before, pl.after
		if !b.present || b.kind == KindDir || (a.present && a.kind != KindDir && b.kind == a.kind) {
			continue
		}
		if bakDir == "" {
			bakDir = randName("bak")
			if err := root.Mkdir(bakDir, 0o700); err != nil {
				return fmt.Errorf("overlay: apply: create the backup directory: %w", err)
			}
			undo = append(undo, func() error { return root.Remove(bakDir) })
			defer func() {
				if err == nil {
					_ = root.RemoveAll(bakDir)
				}
			}()
		}
		p := abs(pl.path)
		bak := path.Join(bakDir, fmt.Sprint(i))
		if err := root.Rename(p, bak); err != nil {
			return fmt.Errorf("overlay: apply: remove %s: %w", pl.path, err)
		}
		undo = append(undo, func() error { return root.Rename(bak, p) })
	}
	// 2. Remove directories, deepest first.
	for i := len(steps) - 1; i >= 0; i-- {
		pl := steps[i]
		if !isDir(pl.before) || isDir(pl.after) {
			continue
		}
		p := abs(pl.path)
		if err := root.Remove(p); err != nil {
			return fmt.Errorf("overlay: apply: remove directory %s: %w", pl.path, err)
		}
		mode, _ := parseMode(pl.before.mode)
		undo = append(undo, func() error {
			if err := root.Mkdir(p, 0o700); err != nil {
				return err
			}
			return root.Chmod(p, fs.FileMode(mode&0o777)|modeBits(mode))
		})
	}
	// 3. Create directories, parents first (owner-writable until step 5).
	for _, pl := range steps {
		if !isDir(pl.after) || isDir(pl.before) {
			continue
		}
		p := abs(pl.path)
		if err := root.Mkdir(p, 0o700); err != nil {
			return fmt.Errorf("overlay: apply: create directory %s: %w", pl.path, err)
		}
		undo = append(undo, func() error { return root.Remove(p) })
	}
	// 4a. Stage every new file and symlink beside its target.
	type staged struct {
		pl  *planned
		tmp string
	}
	var stg []staged
	for _, pl := range steps {
		a := pl.after
		if !a.present || a.kind == KindDir || pl.before.equal(a) || (pl.before.present && pl.before.kind == a.kind && pl.before.sha == a.sha && pl.before.target == a.target) {
			continue
		}
		tmp := path.Join(path.Dir(abs(pl.path)), randName("tmp"))
		if a.kind == KindSymlink {
			if err := root.Symlink(a.target, tmp); err != nil {
				return fmt.Errorf("overlay: apply: stage %s: %w", pl.path, err)
			}
		} else if err := stageFile(pl.src, root, tmp, a); err != nil {
			return fmt.Errorf("overlay: apply: stage %s: %w", pl.path, err)
		}
		undo = append(undo, func() error { return removeIfExists(root, tmp) })
		stg = append(stg, staged{pl, tmp})
	}
	// 4b. Move them into place; a replaced file keeps a hard link.
	for _, st := range stg {
		p := abs(st.pl.path)
		if st.pl.before.present && st.pl.before.kind == st.pl.after.kind {
			bak := path.Join(path.Dir(p), randName("bak"))
			if err := root.Link(p, bak); err != nil {
				return fmt.Errorf("overlay: apply: keep a backup of %s: %w", st.pl.path, err)
			}
			cleanup = append(cleanup, bak)
			if err := root.Rename(st.tmp, p); err != nil {
				return fmt.Errorf("overlay: apply: replace %s: %w", st.pl.path, err)
			}
			undo = append(undo, func() error { return root.Rename(bak, p) })
			continue
		}
		if err := root.Rename(st.tmp, p); err != nil {
			return fmt.Errorf("overlay: apply: create %s: %w", st.pl.path, err)
		}
		undo = append(undo, func() error { return root.Remove(p) })
	}
	// 5. Modes, deepest first so a directory is writable while its
	// content is set.
	for i := len(steps) - 1; i >= 0; i-- {
		pl := steps[i]
		a := pl.after
		if !a.present || a.kind == KindSymlink {
			continue
		}
		p := abs(pl.path)
		fi, err := root.Lstat(p)
		if err != nil {
			return fmt.Errorf("overlay: apply: %w", err)
		}
		mode, err := parseMode(a.mode)
		if err != nil {
			return err
		}
		oldMode := fi.Mode()
		if err := root.Chmod(p, fs.FileMode(mode&0o777)|modeBits(mode)); err != nil {
			return fmt.Errorf("overlay: apply: chmod %s: %w", pl.path, err)
		}
		undo = append(undo, func() error { return root.Chmod(p, oldMode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)) })
	}
	return nil
}

// modeBits converts the setuid/setgid/sticky bits of an octal mode.
func modeBits(m uint32) fs.FileMode {
	var out fs.FileMode
	if m&0o4000 != 0 {
		out |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		out |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}

func removeIfExists(root *os.Root, p string) error {
	if err := root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// stageFile copies src to the new file tmp and checks the copy's hash
// against the verified state, so a layer file swapped after the check
// is caught at the byte level.
func stageFile(src string, root *os.Root, tmp string, want state) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.sha {
		return fmt.Errorf("layer file %s changed after the check (sha256 %s, recorded %s): %w", src, got, want.sha, ErrTampered)
	}
	return out.Sync()
}
