package secretpaths

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// # Why a pass shares its answers
//
// The protected list is a few hundred paths: the deny list under each of a
// dozen or more homes, most of which hold none of the stores. Resolving
// each path on its own asks the kernel about the same parents again and
// again (/root, /root/.config, … once per entry under them): about 1,600
// lstat calls for one list on a stock Linux host, paid every time a command
// starts. One pass over the list asks about each name once ([Memo]): an
// entry under a missing directory costs nothing, since the walk stops at
// the first missing component and that answer is already known.
//
// The answers live for one pass only. A cache kept across commands would
// have to decide when a name changed, and a symlink created or re-pointed
// between two commands must be seen by the second (the sandbox masks what
// the link leads to when the command starts), so every pass starts empty.

// Memo returns a LinkReader that asks r about each name at most once and
// then repeats r's answer, error included. It is meant for one pass over a
// list (a Compute, one command's HiddenPaths) and must not be kept longer:
// it never sees a change made after its first answer about a name. It is
// not safe for concurrent use.
func Memo(r LinkReader) LinkReader {
	return &memo{r: r, stats: map[string]statAnswer{}, links: map[string]linkAnswer{}}
}

type statAnswer struct {
	fi  fs.FileInfo
	err error
}

type linkAnswer struct {
	target string
	err    error
}

type memo struct {
	r     LinkReader
	stats map[string]statAnswer
	links map[string]linkAnswer
}

func (m *memo) Lstat(name string) (fs.FileInfo, error) {
	a, ok := m.stats[name]
	if !ok {
		a.fi, a.err = m.r.Lstat(name)
		m.stats[name] = a
	}
	return a.fi, a.err
}

func (m *memo) Readlink(name string) (string, error) {
	a, ok := m.links[name]
	if !ok {
		a.target, a.err = m.r.Readlink(name)
		m.links[name] = a
	}
	return a.target, a.err
}

// maxEvalLinks is filepath.EvalSymlinks' bound on the links one path may
// expand (the kernel's is maxSymlinks; RealPath keeps the library's so that
// its answers stay those of EvalSymlinks).
const maxEvalLinks = 255

// RealPath returns what filepath.EvalSymlinks(p) returns, reading the file
// system through r: p with every symlink expanded, or an error when a
// component is missing, a non-directory is followed by more of the path, a
// link cannot be read or too many links are expanded. Unlike [Resolve], a
// path that does not exist has no real location. The sandbox tiers use it
// (sandbox.HiddenPaths) with a [Memo] so that a list costs one lstat per
// distinct name.
//
// Only a clean absolute path is walked through r; any other p (and every p
// on Windows, where EvalSymlinks asks the system for the final path instead
// of walking links) goes to filepath.EvalSymlinks itself, so the answer is
// the library's in every case.
func RealPath(r LinkReader, p string) (string, error) {
	if runtime.GOOS == "windows" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return filepath.EvalSymlinks(p)
	}
	return realPath(r, p)
}

// realPath expands the symlinks of the clean absolute Unix path p. dest is
// the part done, free of symlinks, so ".." takes its lexical parent; rest
// is what remains, as text, because "is more of the path left" is a
// question about the text (a link to "file/" leaves a "/" behind it).
func realPath(r LinkReader, p string) (string, error) {
	const sep = string(filepath.Separator)
	dest, rest := sep, p
	links := 0
	for {
		rest = strings.TrimLeft(rest, sep)
		if rest == "" {
			return filepath.Clean(dest), nil
		}
		i := strings.Index(rest, sep)
		if i < 0 {
			i = len(rest)
		}
		c := rest[:i]
		rest = rest[i:]
		switch c {
		case ".":
			continue
		case "..":
			// At the root, ".." is the root (the kernel's rule).
			dest = filepath.Dir(dest)
			continue
		}
		// dest is clean and c one plain component: the joined path is
		// clean as it is (filepath.Join would scan it again).
		if dest == sep {
			dest = sep + c
		} else {
			dest = dest + sep + c
		}
		fi, err := r.Lstat(dest)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && rest != "" {
				return "", &fs.PathError{Op: "walk", Path: dest, Err: syscall.ENOTDIR}
			}
			continue
		}
		if links++; links > maxEvalLinks {
			return "", errors.New("EvalSymlinks: too many links")
		}
		target, err := r.Readlink(dest)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			dest = sep
		} else {
			dest = filepath.Dir(dest)
		}
		rest = target + rest
	}
}
