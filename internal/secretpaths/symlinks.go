package secretpaths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// LinkReader is what the symlink walk reads of a file system. The host's is
// [OSLinks]; the tripwire reads through its own file-system view, which its
// tests replace with fixtures for states the OS cannot produce safely.
type LinkReader interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

// OSLinks reads the operating system's file system.
type OSLinks struct{}

// Lstat implements LinkReader.
func (OSLinks) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// Readlink implements LinkReader.
func (OSLinks) Readlink(name string) (string, error) { return os.Readlink(name) }

// maxSymlinks bounds symlink expansion, like the kernel's ELOOP limit.
const maxSymlinks = 40

// Resolve expands the symlinks of an absolute path component by component,
// as the kernel would: an existing component is followed through Lstat and
// Readlink (so a dangling symlink still names its target); at the first
// component that does not exist the rest is appended literally, so a path
// that does not exist yet resolves through its existing parents. Any other
// error (a loop, a permission error, a link refused) fails: the caller
// cannot know where such a path leads.
//
// refuse, when not nil, is asked about each symlink before it is read, and
// its error ends the walk.
func Resolve(r LinkReader, abs string, refuse func(link string) error) (string, error) {
	vol := filepath.VolumeName(abs)
	return ResolveFrom(r, vol+string(filepath.Separator), SplitPath(abs[len(vol):]), refuse)
}

// ResolveFrom is [Resolve] continuing from cur, a directory path that holds
// no symlink, with the components todo.
func ResolveFrom(r LinkReader, cur string, todo []string, refuse func(link string) error) (string, error) {
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// cur holds no symlink, so its lexical parent is its physical
			// parent.
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := r.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return filepath.Join(append([]string{next}, todo...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", next)
		}
		if refuse != nil {
			if err := refuse(next); err != nil {
				return "", err
			}
		}
		target, err := r.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			cur = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		todo = append(SplitPath(target), todo...)
	}
	return cur, nil
}

// SplitPath returns the components of p, split at '/' and at the
// platform's separator, without empty ones.
func SplitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator })
}
