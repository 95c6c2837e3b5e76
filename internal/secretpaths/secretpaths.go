// Package secretpaths computes the host paths that no command IronVise runs
// may see or name — IronVise's own data directory and files, and the
// credential stores of every home directory — and decides which directories
// may serve as a workspace.
//
// # Why one list
//
// The same list serves two layers: the tripwire refuses an action that names
// a listed path (reason code path_protected), and the sandbox tiers cover
// every listed path that exists with an empty read-only mount. If the two
// lists were computed apart, a path one layer hides could slip past the
// other. The composition root (internal/cli) calls [Compute] once per run
// and hands the result to both.
//
// # What is listed
//
//   - the data directory ($ECTO_DATA_DIR: keys, the default ledger,
//     settings, tokens, tripwire.json, policies) and IronVise's files that
//     the configuration places outside it ([Sources].Named);
//   - [DenyList] under every home directory that could be visible: IronVise's
//     own $HOME, root's, every home in /etc/passwd and every directory in
//     /home (/Users on macOS), so that a workspace of /home does not show
//     another user's ~/.ssh;
//   - the same stores where their tools' variables moved them (KUBECONFIG,
//     GNUPGHOME, XDG_CONFIG_HOME, …) and the operator's own entries
//     (tripwire.json "protected_paths", parsed by [ParseEntry]).
//
// Each path is listed as written and, when a symlink leads elsewhere, at its
// real location too. The list is sorted, free of duplicates, and no entry
// lies inside another (the outer one already hides it).
//
// # Usage
//
//	list, err := secretpaths.Compute(secretpaths.Sources{DataDir: cfg.DataDir, Home: cfg.Host.Home, …})
//	if err := secretpaths.CheckWorkspace(ws, list); err != nil { … } // "/" or /etc, or inside a listed path
//	tw := tripwire.New(tc, tripwire.Options{Workspace: ws, Protected: list})
//	opts.Hidden = list.Paths // sandbox.Options
//
// # Limitations
//
// Paths are compared by name. A hard link to a protected file placed
// elsewhere beforehand is a different name; read_file compares the file it
// opened with the listed files, but the sandbox masks names only: the
// listed ones and the other names mounts give them (package
// sandbox/mounts), not a hard link's. A home
// directory created after Compute ran is not covered until the next run
// (the next command for exec and audit, the next start for serve). The
// list is only as complete as the known locations of each tool's secrets.
package secretpaths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
)

// Source is a path IronVise hides together with the setting that named it,
// so that an error can say which setting to fix.
type Source struct {
	// Name is the setting, such as "DATABASE_URL" or "GNUPGHOME".
	Name string
	// Path is the absolute path.
	Path string
}

// Sources are the inputs of [Compute]. Everything is typed here;
// internal/config reads the environment.
type Sources struct {
	// DataDir is IronVise's data directory ($ECTO_DATA_DIR), absolute.
	// Required.
	DataDir string
	// Named are further absolute paths to hide: IronVise's files outside
	// the data directory (a SQLite ledger and its -wal, -shm and -journal
	// companions, the .env file it read, a mock LLM script) and credential
	// stores that their tools' own variables moved (KUBECONFIG, GNUPGHOME,
	// …).
	Named []Source
	// Home is the home directory of the user IronVise runs as ($HOME, or
	// %USERPROFILE% on Windows); "" when there is none.
	Home string
	// ConfigHome and DataHome are $XDG_CONFIG_HOME and $XDG_DATA_HOME when
	// set: the deny list's ~/.config and ~/.local/share entries are applied
	// there too.
	ConfigHome, DataHome string
	// AppData and LocalAppData are %APPDATA% and %LOCALAPPDATA% (Windows):
	// the deny list's AppData\Roaming and AppData\Local entries are applied
	// there too.
	AppData, LocalAppData string
	// Extra are the operator's entries (tripwire.json "protected_paths").
	Extra []Entry

	// Where homes are found; zero means the host's (see homeSources). Tests
	// point them at fixtures; they are unexported so that no caller can
	// narrow the set of homes.
	passwdFile  string
	homeParents []string
	fixedHomes  []string
}

// List is the computed protected-path list.
type List struct {
	// Paths are absolute and clean, sorted, without duplicates, and no
	// entry lies inside another. Missing paths are listed too: a store
	// created later is still refused by the tripwire, and the sandbox
	// masks the ones that exist when a command starts.
	Paths []string
	// Homes are the home directories the deny list was applied to, sorted.
	// The tripwire expands ~ and $HOME in commands to each of them.
	Homes []string
}

// Errors of this package, compared with errors.Is.
var (
	// ErrSource means an input of Compute cannot be used: a relative path,
	// or a path that would hide the whole file system or a system
	// directory. The message names the setting.
	ErrSource = errors.New("secretpaths: unusable path")
	// ErrHomes means the home directories could not be enumerated, so the
	// credential stores of some users could not be listed.
	ErrHomes = errors.New("secretpaths: cannot enumerate home directories")
	// ErrEntry means a protected_paths entry is invalid.
	ErrEntry = errors.New("secretpaths: invalid entry")
	// ErrWorkspace means a directory cannot be a workspace.
	ErrWorkspace = errors.New("secretpaths: workspace refused")
)

// Compute builds the list from src. It reads /etc/passwd and lists /home
// (see [Sources]); it fails rather than return a list that silently misses
// a home it could not enumerate.
func Compute(src Sources) (List, error) {
	// One pass asks about each name once (see Memo): the deny list repeats
	// the same parents under every home.
	return computeThrough(src, Memo(OSLinks{}))
}

// computeThrough is Compute reading links through links.
func computeThrough(src Sources, links LinkReader) (List, error) {
	hs := src.homeSources()
	named := append([]Source{{Name: "ECTO_DATA_DIR", Path: src.DataDir}}, src.Named...)
	for _, n := range named {
		if err := checkSource(links, n); err != nil {
			return List{}, err
		}
	}
	homes, err := discoverHomes(links, src.Home, hs)
	if err != nil {
		return List{}, err
	}
	var raw []string
	for _, n := range named {
		raw = append(raw, n.Path)
	}
	deny := DenyList(runtime.GOOS)
	for _, h := range homes {
		for _, rel := range deny {
			raw = append(raw, filepath.Join(h, filepath.FromSlash(rel)))
		}
	}
	// Stores that a variable moved out of the home keep their name
	// relative to that variable's directory.
	rebase := []struct{ base, prefix string }{
		{src.ConfigHome, ".config/"}, {src.DataHome, ".local/share/"},
		{src.AppData, "AppData/Roaming/"}, {src.LocalAppData, "AppData/Local/"},
	}
	for _, rb := range rebase {
		if rb.base == "" || !filepath.IsAbs(rb.base) {
			continue
		}
		for _, rel := range deny {
			if rest, ok := strings.CutPrefix(rel, rb.prefix); ok {
				raw = append(raw, filepath.Join(rb.base, filepath.FromSlash(rest)))
			}
		}
	}
	for _, e := range src.Extra {
		if !e.HomeRelative {
			raw = append(raw, e.Path)
			continue
		}
		for _, h := range homes {
			raw = append(raw, filepath.Join(h, e.Path))
		}
	}
	var all []string
	for _, p := range raw {
		p = filepath.Clean(p)
		all = append(all, p)
		// The real location too: a command can name either.
		if r, err := Resolve(links, p, nil); err == nil && r != p {
			all = append(all, r)
		}
	}
	return List{Paths: minimal(all), Homes: homes}, nil
}

// With returns l with paths (absolute, clean) added under List's rules:
// sorted, without duplicates, none inside another.
func (l List) With(paths []string) List {
	if len(paths) == 0 {
		return l
	}
	return List{Paths: minimal(append(slices.Clone(l.Paths), paths...)), Homes: l.Homes}
}

// checkSource refuses a path that cannot be hidden sensibly: relative, or
// the root or a system directory (masking /usr would break every command,
// masking / everything).
func checkSource(links LinkReader, s Source) error {
	switch {
	case s.Path == "":
		return fmt.Errorf("%w: %s is empty; set it to an absolute path", ErrSource, s.Name)
	case !filepath.IsAbs(s.Path):
		return fmt.Errorf("%w: %s=%q is not an absolute path; set it to one", ErrSource, s.Name, s.Path)
	}
	if root, ok := systemRoot(links, filepath.Clean(s.Path), runtime.GOOS); ok {
		return fmt.Errorf("%w: %s=%q is the system directory %s, which cannot be hidden from commands; point %s at its own directory", ErrSource, s.Name, s.Path, root, s.Name)
	}
	return nil
}

// minimal sorts, deduplicates and drops every path that lies inside another
// listed path.
func minimal(paths []string) []string {
	fold := foldCase(runtime.GOOS)
	key := func(p string) string {
		if fold {
			return strings.ToLower(p)
		}
		return p
	}
	set := make(map[string]bool, len(paths))
	for _, p := range paths {
		set[key(p)] = true
	}
	var out []string
	for _, p := range paths {
		inner := false
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if set[key(d)] {
				inner = true
				break
			}
			if d == filepath.Dir(d) {
				break
			}
		}
		if !inner {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

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
	// clean says cur is in filepath.Clean's form, which every step below
	// leaves it in: a name is then appended to it as is, where
	// filepath.Join would clean the whole path again for every component
	// (with the rest of a missing path, 28 % of a pass over the protected
	// list in a CPU profile of BenchmarkCompute).
	clean := cur == filepath.Clean(cur)
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			// cur holds no symlink, so its lexical parent is its physical
			// parent.
			cur, clean = filepath.Dir(cur), true
			continue
		}
		var next string
		if clean && !strings.ContainsAny(c, separators) {
			next = appendName(cur, c)
		} else {
			next = filepath.Join(cur, c)
		}
		fi, err := r.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return joinRest(next, todo), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur, clean = next, true
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
			clean = cur == filepath.Clean(cur)
			target = target[len(tv):]
		}
		todo = append(SplitPath(target), todo...)
	}
	return cur, nil
}

// joinRest is filepath.Join of dir, in filepath.Clean's form (the walk's
// path so far always is), and the components rest. Most entries of the
// protected list end here, under a directory that does not exist: when
// each component is a plain name, joining them needs no cleaning.
func joinRest(dir string, rest []string) string {
	for _, c := range rest {
		if c == "" || c == "." || c == ".." || strings.ContainsAny(c, separators) {
			return filepath.Join(append([]string{dir}, rest...)...)
		}
	}
	if len(rest) == 0 {
		return dir
	}
	return appendName(dir, strings.Join(rest, string(filepath.Separator)))
}

// separators are the characters that end a path component here.
const separators = "/" + string(filepath.Separator)

// appendName is filepath.Join(dir, name) for a dir in filepath.Clean's
// form and a name that is one component other than "", "." and "..".
func appendName(dir, name string) string {
	switch {
	case dir == ".":
		return name
	case os.IsPathSeparator(dir[len(dir)-1]):
		return dir + name // the root, or a volume's
	}
	return dir + string(filepath.Separator) + name
}

// SplitPath returns the components of p, split at '/' and at the
// platform's separator, without empty ones.
func SplitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator })
}

// foldCase reports the platforms whose file systems compare names without
// case by default.
func foldCase(goos string) bool { return goos == "darwin" || goos == "windows" }

// Within reports whether p is root or lies below it, comparing whole
// components (/tmp/ws2 is not inside /tmp/ws), without case on macOS and
// Windows.
func Within(p, root string) bool { return WithinFold(p, root, foldCase(runtime.GOOS)) }

// WithinFold is Within with the case rule given: fold compares without
// case (the tripwire applies the rules of the system it was built for).
func WithinFold(p, root string, fold bool) bool {
	if fold {
		p, root = strings.ToLower(p), strings.ToLower(root)
	}
	if p == root {
		return true
	}
	// p starts with root and a separator; without building root plus
	// one, which tiers and the tripwire would allocate for every pair of
	// a long list.
	if strings.HasSuffix(root, string(filepath.Separator)) {
		return strings.HasPrefix(p, root)
	}
	return len(p) > len(root) && p[len(root)] == filepath.Separator && strings.HasPrefix(p, root)
}

// Covering returns the listed path that is p or contains it.
func (l List) Covering(p string) (string, bool) {
	for _, e := range l.Paths {
		if Within(p, e) {
			return e, true
		}
	}
	return "", false
}
