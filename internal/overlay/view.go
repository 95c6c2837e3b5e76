package overlay

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Kind is the type of a file system entry.
type Kind string

// The kinds a change set reports. Anything else (a fifo, a socket, a
// device) is "other": it is recorded but Apply refuses it.
const (
	KindFile    Kind = "file"
	KindDir     Kind = "dir"
	KindSymlink Kind = "symlink"
	KindOther   Kind = "other"
)

// layerDir is one directory of a stack. Whiteouts and opaque markers
// mean something only in a layer, never in the real workspace, where a
// character device 0/0 is just a file.
type layerDir struct {
	path  string
	layer bool
}

// node is an entry of a merged view: the topmost entry of its name, and
// for a directory every directory merged into it, newest first.
type node struct {
	kind   Kind
	mode   uint32 // permission bits and setuid/setgid/sticky
	size   int64
	target string // symlink target
	src    string // the file that holds the content
	dirs   []layerDir
}

// view is the merged view overlayfs shows for a stack of layers above
// a workspace; it is computed from the directories, without a mount.
type view struct {
	root *node
}

// newView returns the view of layers (newest first) above base.
func newView(base string, layers []string) (*view, error) {
	fi, err := os.Lstat(base)
	if err != nil {
		return nil, fmt.Errorf("overlay: workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("overlay: workspace %s is not a directory", base)
	}
	root := nodeOf(fi, base)
	for _, l := range layers {
		root.dirs = append(root.dirs, layerDir{path: l, layer: true})
	}
	root.dirs = append(root.dirs, layerDir{path: base})
	return &view{root: root}, nil
}

func nodeOf(fi fs.FileInfo, p string) *node {
	n := &node{mode: uint32(fi.Mode().Perm()), src: p}
	if fi.Mode()&fs.ModeSetuid != 0 {
		n.mode |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		n.mode |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		n.mode |= 0o1000
	}
	switch {
	case fi.Mode().IsRegular():
		n.kind, n.size = KindFile, fi.Size()
	case fi.IsDir():
		n.kind = KindDir
	case fi.Mode()&fs.ModeSymlink != 0:
		n.kind = KindSymlink
	default:
		n.kind = KindOther
	}
	return n
}

// child resolves name in the directory n the way overlayfs does: the
// topmost entry wins; a whiteout hides everything below; a non-directory
// ends the merge; an opaque directory hides the directories below it.
func (v *view) child(n *node, name string) (*node, error) {
	var out *node
	for _, d := range n.dirs {
		p := filepath.Join(d.path, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("overlay: %w", err)
		}
		if d.layer {
			wh, err := isWhiteout(p, fi)
			if err != nil {
				return nil, err
			}
			if wh {
				break
			}
		}
		if !fi.IsDir() {
			if out == nil {
				out = nodeOf(fi, p)
				if out.kind == KindSymlink {
					t, err := os.Readlink(p)
					if err != nil {
						return nil, fmt.Errorf("overlay: %w", err)
					}
					out.target = t
				}
				if d.layer && out.kind == KindFile {
					if err := checkMetacopy(p); err != nil {
						return nil, err
					}
				}
			}
			break
		}
		if out == nil {
			out = nodeOf(fi, p)
		}
		out.dirs = append(out.dirs, layerDir{path: p, layer: d.layer})
		if d.layer {
			opaque, err := dirOpaque(p)
			if err != nil {
				return nil, err
			}
			if opaque {
				break
			}
		}
	}
	return out, nil
}

// lookup resolves a slash-separated relative path; nil if absent.
func (v *view) lookup(rel string) (*node, error) {
	n := v.root
	if rel == "" {
		return n, nil
	}
	for _, c := range strings.Split(rel, "/") {
		if n.kind != KindDir {
			return nil, nil
		}
		next, err := v.child(n, c)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return nil, nil
		}
		n = next
	}
	return n, nil
}

// names returns the merged names of directory n, sorted (whiteouts
// included; child drops them).
func (v *view) names(n *node) ([]string, error) {
	seen := map[string]bool{}
	for _, d := range n.dirs {
		ents, err := os.ReadDir(d.path)
		if err != nil {
			return nil, fmt.Errorf("overlay: %w", err)
		}
		for _, e := range ents {
			seen[e.Name()] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// walk calls fn for every entry under rel (not rel itself), parents
// before children.
func (v *view) walk(rel string, n *node, fn func(rel string, n *node) error) error {
	if n == nil || n.kind != KindDir {
		return nil
	}
	names, err := v.names(n)
	if err != nil {
		return err
	}
	for _, name := range names {
		c, err := v.child(n, name)
		if err != nil {
			return err
		}
		if c == nil {
			continue
		}
		p := joinRel(rel, name)
		if err := fn(p, c); err != nil {
			return err
		}
		if err := v.walk(p, c, fn); err != nil {
			return err
		}
	}
	return nil
}

func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// hashFile returns the SHA-256 of a file's content.
func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("overlay: hash: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("overlay: hash %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// touched lists every path present in the given layer uppers (whiteouts
// included) and the paths of the opaque directories among them.
func touched(uppers []string) (paths map[string]bool, opaque map[string]bool, err error) {
	paths, opaque = map[string]bool{}, map[string]bool{}
	for _, u := range uppers {
		err := filepath.WalkDir(u, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return fmt.Errorf("overlay: read layer: %w", err)
			}
			if p == u {
				return nil
			}
			r, err := filepath.Rel(u, p)
			if err != nil {
				return fmt.Errorf("overlay: %w", err)
			}
			r = filepath.ToSlash(r)
			paths[r] = true
			if d.IsDir() {
				o, err := dirOpaque(p)
				if err != nil {
					return err
				}
				if o {
					opaque[r] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return paths, opaque, nil
}
