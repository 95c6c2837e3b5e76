package overlay

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Op is what happened to a path.
type Op string

// The operations of a change set.
const (
	OpAdded    Op = "added"
	OpModified Op = "modified" // content, symlink target or kind changed
	OpDeleted  Op = "deleted"
	OpRenamed  Op = "renamed" // a deletion and an addition of the same content in one change set
	OpMode     Op = "mode"    // only the permission bits changed
)

// Diff skip reasons (Change.DiffSkipped).
const (
	DiffBinary   = "binary"
	DiffTooLarge = "too_large"
	DiffBudget   = "budget"
)

// Change is one changed path. Base fields describe what was below (the
// earlier layers and the real workspace); the others the new entry.
type Change struct {
	Path string `json:"path"`           // slash-separated, relative to the workspace
	Op   Op     `json:"op"`             //
	From string `json:"from,omitempty"` // renamed: the old path
	Kind Kind   `json:"kind"`           // the new entry's kind; for deleted, the deleted entry's
	// BaseKind is the kind below, for modified, deleted, renamed and mode.
	BaseKind   Kind   `json:"base_kind,omitempty"`
	Mode       string `json:"mode,omitempty"`      // octal, e.g. "0644"; absent for deleted
	BaseMode   string `json:"base_mode,omitempty"` //
	Target     string `json:"target,omitempty"`    // symlink target
	BaseTarget string `json:"base_target,omitempty"`
	Size       int64  `json:"size,omitempty"`
	SHA256     string `json:"sha256,omitempty"`      // new content (files)
	BaseSHA256 string `json:"base_sha256,omitempty"` // content below (files)
	// Diff is a unified diff for text files (valid UTF-8, no NUL).
	Diff          string `json:"diff,omitempty"`
	DiffTruncated bool   `json:"diff_truncated,omitempty"`
	DiffSkipped   string `json:"diff_skipped,omitempty"` // binary, too_large or budget
}

// ChangeSet is the change set of one step (or of a whole stack).
type ChangeSet struct {
	Step    int64    `json:"step,omitempty"`
	Changes []Change `json:"changes"`
	// DiffTruncated is set when the change set's diff budget ran out.
	DiffTruncated bool `json:"diff_truncated,omitempty"`
}

// Limits bound the diffs of a change set.
type Limits struct {
	FileDiff  int   // bytes of diff per file
	SetDiff   int   // bytes of diff per change set
	DiffInput int64 // files larger than this get no diff
}

// DefaultLimits are 64 KiB per file, 1 MiB per change set, and no diff
// of files over 1 MiB.
func DefaultLimits() Limits {
	return Limits{FileDiff: 64 << 10, SetDiff: 1 << 20, DiffInput: 1 << 20}
}

func octal(m uint32) string { return fmt.Sprintf("%04o", m) }

func parseMode(s string) (uint32, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, fmt.Errorf("overlay: invalid mode %q", s)
	}
	return uint32(m), nil
}

// Compute returns the change set of upper against the stack below it:
// below are the earlier layers' upper dirs, newest first, above the real
// workspace. The layer must not be mounted while this runs.
func Compute(workspace string, below []string, upper string, lim Limits) (*ChangeSet, error) {
	old, err := newView(workspace, below)
	if err != nil {
		return nil, err
	}
	cur, err := newView(workspace, append([]string{upper}, below...))
	if err != nil {
		return nil, err
	}
	return compare(old, cur, []string{upper}, lim)
}

// Changes computes the pending layer's change set (after the command
// ended and its overlay was unmounted).
func (p *Pending) Changes(workspace string, lim Limits) (*ChangeSet, error) {
	var below []string
	for _, l := range p.below {
		below = append([]string{l.Upper}, below...)
	}
	cs, err := Compute(workspace, below, p.Upper(), lim)
	if cs != nil {
		cs.Step = p.step
	}
	return cs, err
}

// compare diffs two views at the paths the given uppers touch: only
// they can differ, so the rest of the workspace is never read, except
// the subtrees a whiteout, an opaque directory or a kind change hides.
func compare(old, cur *view, uppers []string, lim Limits) (*ChangeSet, error) {
	paths, opaque, err := touched(uppers)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for p := range paths {
		set[p] = true
	}
	for p := range paths {
		o, err := old.lookup(p)
		if err != nil {
			return nil, err
		}
		if o == nil || o.kind != KindDir {
			continue
		}
		n, err := cur.lookup(p)
		if err != nil {
			return nil, err
		}
		if n == nil || n.kind != KindDir || opaque[p] {
			err := old.walk(p, o, func(r string, _ *node) error { set[r] = true; return nil })
			if err != nil {
				return nil, err
			}
		}
	}
	sorted := make([]string, 0, len(set))
	for p := range set {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	cs := &ChangeSet{Changes: []Change{}}
	for _, p := range sorted {
		o, err := old.lookup(p)
		if err != nil {
			return nil, err
		}
		n, err := cur.lookup(p)
		if err != nil {
			return nil, err
		}
		c, changed, err := diffNodes(p, o, n)
		if err != nil {
			return nil, err
		}
		if changed {
			cs.Changes = append(cs.Changes, c)
		}
	}
	pairRenames(cs)
	if err := addDiffs(cs, old, cur, lim); err != nil {
		return nil, err
	}
	return cs, nil
}

func diffNodes(p string, o, n *node) (Change, bool, error) {
	c := Change{Path: p}
	if o == nil && n == nil {
		return c, false, nil
	}
	if o != nil {
		c.BaseKind, c.BaseMode, c.BaseTarget = o.kind, octal(o.mode), o.target
		if o.kind == KindFile {
			h, err := hashFile(o.src)
			if err != nil {
				return c, false, err
			}
			c.BaseSHA256 = h
		}
	}
	if n == nil {
		c.Op, c.Kind = OpDeleted, o.kind
		return c, true, nil
	}
	c.Kind, c.Mode, c.Target, c.Size = n.kind, octal(n.mode), n.target, n.size
	if n.kind == KindFile {
		h, err := hashFile(n.src)
		if err != nil {
			return c, false, err
		}
		c.SHA256 = h
	}
	switch {
	case o == nil:
		c.Op = OpAdded
	case o.kind != n.kind || c.SHA256 != c.BaseSHA256 || o.target != n.target:
		c.Op = OpModified
	case o.mode != n.mode:
		c.Op = OpMode
	default:
		return c, false, nil
	}
	return c, true, nil
}

// pairRenames turns a deletion and an addition of the same kind and
// content (hash for files, target for symlinks) into one rename. Pairs
// are taken in path order so the result is deterministic.
func pairRenames(cs *ChangeSet) {
	key := func(c Change) string {
		switch c.Kind {
		case KindFile:
			if c.Op == OpDeleted {
				return "f" + c.BaseSHA256
			}
			return "f" + c.SHA256
		case KindSymlink:
			if c.Op == OpDeleted {
				return "l" + c.BaseTarget
			}
			return "l" + c.Target
		}
		return ""
	}
	dels := map[string][]int{}
	for i, c := range cs.Changes {
		if c.Op == OpDeleted && c.BaseKind == c.Kind {
			if k := key(c); k != "" {
				dels[k] = append(dels[k], i)
			}
		}
	}
	drop := map[int]bool{}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if c.Op != OpAdded {
			continue
		}
		k := key(*c)
		if k == "" || len(dels[k]) == 0 {
			continue
		}
		d := cs.Changes[dels[k][0]]
		drop[dels[k][0]] = true
		dels[k] = dels[k][1:]
		c.Op, c.From = OpRenamed, d.Path
		c.BaseKind, c.BaseMode, c.BaseSHA256, c.BaseTarget = d.BaseKind, d.BaseMode, d.BaseSHA256, d.BaseTarget
	}
	out := cs.Changes[:0]
	for i, c := range cs.Changes {
		if !drop[i] {
			out = append(out, c)
		}
	}
	cs.Changes = out
}

// minDiffBudget is the least budget worth starting a diff with: below
// it not even the headers and one hunk fit.
const minDiffBudget = 256

// addDiffs adds unified diffs of text files within the limits.
func addDiffs(cs *ChangeSet, old, cur *view, lim Limits) error {
	budget := lim.SetDiff
	for i := range cs.Changes {
		c := &cs.Changes[i]
		var a, b []byte
		var err error
		switch c.Op {
		case OpAdded, OpModified:
		case OpDeleted:
		default:
			continue
		}
		oldFile := c.Op != OpAdded && c.BaseKind == KindFile
		newFile := c.Op != OpDeleted && c.Kind == KindFile
		if !oldFile && !newFile {
			continue
		}
		if budget < minDiffBudget {
			// Spent: do not even read the files.
			c.DiffSkipped, cs.DiffTruncated = DiffBudget, true
			continue
		}
		if oldFile {
			if a, err = readView(old, c.Path, lim.DiffInput); err != nil {
				return err
			}
		}
		if newFile {
			if b, err = readView(cur, c.Path, lim.DiffInput); err != nil {
				return err
			}
		}
		switch {
		case a == nil && oldFile || b == nil && newFile:
			c.DiffSkipped = DiffTooLarge
			continue
		case !isText(a) || !isText(b):
			c.DiffSkipped = DiffBinary
			continue
		}
		from, to := "a/"+c.Path, "b/"+c.Path
		if !oldFile {
			from = "/dev/null"
		}
		if !newFile {
			to = "/dev/null"
		}
		limit := min(lim.FileDiff, budget)
		d, trunc := Unified(from, to, string(a), string(b), limit)
		c.Diff, c.DiffTruncated = d, trunc
		if trunc && limit < lim.FileDiff {
			cs.DiffTruncated = true
		}
		budget -= len(d)
	}
	return nil
}

// readView reads a file of a view; nil (not an error) if it is larger
// than max.
func readView(v *view, p string, max int64) ([]byte, error) {
	n, err := v.lookup(p)
	if err != nil {
		return nil, err
	}
	if n == nil || n.kind != KindFile {
		return nil, fmt.Errorf("overlay: %s vanished while computing the change set", p)
	}
	if n.size > max {
		return nil, nil
	}
	b, err := os.ReadFile(n.src)
	if err != nil {
		return nil, fmt.Errorf("overlay: %w", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func isText(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return false
		}
	}
	return utf8.Valid(b)
}
