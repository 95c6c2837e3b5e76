package tripwire

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/verdict"
)

// FS is the file-system view path resolution reads. Production uses the
// OS; tests may substitute a fixture for states the OS cannot produce
// safely (say so where they do).
type FS interface {
	secretpaths.LinkReader
	// ReadDir lists a directory, to expand a glob that may name a
	// protected path.
	ReadDir(name string) ([]fs.DirEntry, error)
}

// OSFS is the operating system's file system.
type OSFS struct{ secretpaths.OSLinks }

// ReadDir implements FS.
func (OSFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// PathKind says how a path is used (docs/design/checks.md#policy-precedence).
type PathKind string

// Path uses.
const (
	KindReadFile      PathKind = "read_file"
	KindRedirectRead  PathKind = "redirect_read"
	KindRedirectWrite PathKind = "redirect_write"
	// KindWriteFile is write_file's path: a file the agent writes itself
	// once the checks allow it.
	KindWriteFile PathKind = "write_file"
)

// Problem is a reason a path or URL cannot pass, as a code and a message.
type Problem struct {
	Code    verdict.Code
	Message string
}

// PathView is one path of an intent, lexically and physically resolved
// (docs/design/checks.md#tripwire-paths steps 1–4).
type PathView struct {
	Kind PathKind
	// Raw is the path as written (for redirections, the static target).
	Raw string
	// Lexical is the path joined to the workspace and cleaned.
	Lexical string
	// Resolved has every existing symlink resolved, component by
	// component; the non-existing rest is appended literally.
	Resolved string
	// Problem is set when steps 1–4 already fail.
	Problem *Problem
	// Scratch marks a $TMPDIR target: the sandbox's scratch directory,
	// permitted for reads and writes
	// (docs/design/checks.md#redirection-targets).
	Scratch bool
	// Dynamic marks a target that cannot be determined statically.
	Dynamic bool
}

// errMagicLink reports a symlink under /proc: such "magic links" (for
// example /proc/self/root, /proc/<pid>/cwd, /proc/self/fd/N) resolve to
// objects of the reading process, not to stable paths, so a path through
// one cannot be checked against the roots.
var errMagicLink = errors.New("path runs through a /proc magic link")

// pathView computes steps 1–4 of docs/design/checks.md#tripwire-paths for one
// path.
func (t *Tripwire) pathView(kind PathKind, raw string) PathView {
	v := PathView{Kind: kind, Raw: raw}
	if p := t.invalidPath(raw); p != "" {
		v.Problem = &Problem{verdict.PathInvalid, fmt.Sprintf("%s: %s", quote(raw), p)}
		return v
	}
	p := raw
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.workspace, p)
	}
	for _, c := range t.splitRaw(raw) {
		if c == ".." {
			// A ".." that reaches a protected path says more than "..":
			// name the protection.
			if pp := t.protectedPath(filepath.Clean(p)); pp != nil {
				v.Problem = pp.at(raw)
				return v
			}
			v.Problem = &Problem{verdict.PathTraversal, fmt.Sprintf("%s: \"..\" components are not allowed", quote(raw))}
			return v
		}
	}
	v.Lexical = filepath.Clean(p)
	res, err := t.resolve(v.Lexical)
	if err != nil {
		v.Problem = &Problem{verdict.PathUnresolvable, fmt.Sprintf("%s: cannot resolve: %v", quote(raw), err)}
		return v
	}
	v.Resolved = res
	return v
}

// invalidPath returns why raw is invalid (step 1), or "".
func (t *Tripwire) invalidPath(raw string) string {
	switch {
	case raw == "":
		return "empty path"
	case strings.IndexByte(raw, 0) >= 0:
		return "contains NUL"
	case strings.HasPrefix(raw, "~"):
		// ~ is never expanded: the executor would open a file literally
		// named "~", while a reader of the log would think "home".
		return "a leading ~ is not expanded; use an absolute path"
	case t.windows && (strings.HasPrefix(raw, `\\`) || strings.HasPrefix(raw, "//")):
		return "UNC and device paths are not allowed"
	}
	rest := raw
	if t.windows && len(raw) >= 2 && raw[1] == ':' && isASCIILetter(raw[0]) {
		rest = raw[2:]
	}
	// A colon after the drive prefix names an NTFS alternate data stream
	// (file.txt:hidden), which would read data the path does not show.
	if strings.Contains(rest, ":") {
		return `":" is not allowed (alternate data streams)`
	}
	return ""
}

func (t *Tripwire) splitRaw(raw string) []string {
	if t.windows {
		return strings.FieldsFunc(raw, func(r rune) bool { return r == '/' || r == '\\' })
	}
	return strings.Split(raw, "/")
}

// resolve expands symlinks component by component through t.fs (see
// [secretpaths.Resolve]), refusing /proc magic links.
func (t *Tripwire) resolve(abs string) (string, error) {
	return secretpaths.Resolve(t.fs, abs, t.refuseMagicLink)
}

// resolveFrom is resolve continuing from cur, a directory path that holds
// no symlink, with the components todo.
func (t *Tripwire) resolveFrom(cur string, todo []string) (string, error) {
	return secretpaths.ResolveFrom(t.fs, cur, todo, t.refuseMagicLink)
}

// refuseMagicLink fails for a symlink under /proc (see errMagicLink).
func (t *Tripwire) refuseMagicLink(link string) error {
	if !t.windows && (link == "/proc" || strings.HasPrefix(link, "/proc/")) {
		return fmt.Errorf("%s: %w", link, errMagicLink)
	}
	return nil
}

// within reports whether p is root or below it, comparing whole components
// (so /tmp/ws2/x is not under /tmp/ws).
func (t *Tripwire) within(p, root string) bool {
	return secretpaths.WithinFold(p, root, t.foldCase)
}

func (t *Tripwire) underAny(p string, roots []string) bool {
	for _, r := range roots {
		if t.within(p, r) {
			return true
		}
	}
	return false
}

// checkPath applies step 5 to a computed view.
func (t *Tripwire) checkPath(v PathView) *Problem {
	if v.Problem != nil {
		return v.Problem
	}
	if v.Scratch {
		return nil
	}
	// Security: a protected path is refused whatever the roots say, so an
	// allowed_roots or writable_roots entry that contains the data
	// directory or a home cannot open them up. Both names count: the one
	// written and the one a symlink leads to.
	for _, p := range []string{v.Lexical, v.Resolved} {
		if pp := t.protectedPath(p); pp != nil {
			return pp.at(v.Raw)
		}
	}
	if v.Kind == KindRedirectWrite {
		if ok, p := t.overlayWrite(v); ok {
			return p
		}
		if !t.underAny(v.Resolved, t.cfg.WritableRoots) {
			return &Problem{verdict.RedirectWriteDenied, fmt.Sprintf("write to %s is outside writable_roots", v.Resolved)}
		}
		return nil
	}
	if v.Kind == KindWriteFile {
		return t.checkWrite(v)
	}
	if !t.underAny(v.Resolved, t.cfg.AllowedRoots) && !t.underAny(v.Resolved, t.cfg.WritableRoots) {
		return &Problem{verdict.PathOutsideRoots, fmt.Sprintf("%s is outside the allowed roots", v.Resolved)}
	}
	return nil
}

// CheckPathAtOpen repeats steps 1–5 for read_file just before the executor
// opens the file (docs/design/checks.md#tripwire-paths step 6), and returns
// the resolved path to open with O_NOFOLLOW. A change on disk between the
// check and the open (a swapped symlink) is caught here.
func (t *Tripwire) CheckPathAtOpen(raw string) (string, verdict.Verdict) {
	v := t.pathView(KindReadFile, raw)
	if p := t.checkPath(v); p != nil {
		return "", verdict.Denial(verdict.CheckTripwire, p.Code, p.Message)
	}
	return v.Resolved, verdict.Pass(verdict.CheckTripwire)
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// RootOf returns the allowed or writable root that contains a resolved
// path, so the executor can open the file relative to that root.
func (t *Tripwire) RootOf(resolved string) (string, bool) {
	for _, roots := range [][]string{t.cfg.AllowedRoots, t.cfg.WritableRoots} {
		for _, r := range roots {
			if t.within(resolved, r) {
				return r, true
			}
		}
	}
	return "", false
}
