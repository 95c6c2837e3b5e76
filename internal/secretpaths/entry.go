package secretpaths

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// Entry is one operator entry of tripwire.json "protected_paths", parsed.
type Entry struct {
	// Path is absolute and clean, or, when HomeRelative, a clean path
	// relative to each home directory.
	Path         string
	HomeRelative bool
}

// String returns the entry as an operator writes it.
func (e Entry) String() string {
	if e.HomeRelative {
		return "~" + string(filepath.Separator) + e.Path
	}
	return e.Path
}

// ParseEntry validates one protected_paths entry: an absolute path, or "~/"
// followed by a path relative to every home directory. The error says what
// is wrong and what is accepted; it does not name the entry's position,
// which the caller adds.
func ParseEntry(s string) (Entry, error) {
	bad := func(format string, args ...any) (Entry, error) {
		return Entry{}, fmt.Errorf("%w: %q: %s (accepted: an absolute path such as /srv/secrets, or ~/ and a path under every home such as ~/.config/myapp)",
			ErrEntry, s, fmt.Sprintf(format, args...))
	}
	switch {
	case s == "":
		return bad("empty path")
	case strings.IndexByte(s, 0) >= 0:
		return bad("contains NUL")
	case strings.ContainsAny(s, "*?["):
		// A glob would read as protection while matching nothing: the
		// list is of paths, compared component by component.
		return bad("globs are not supported; list each path")
	}
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if c == ".." {
			return bad(`".." components are not allowed`)
		}
	}
	if rest, ok := cutHome(s); ok {
		rest = filepath.Clean(filepath.FromSlash(rest))
		if rest == "." || rest == "" {
			// Homes include / and system directories for system
			// accounts: hiding every whole home would hide the system.
			return bad("a whole home directory cannot be protected; list the directories under it")
		}
		if filepath.IsAbs(rest) || filepath.VolumeName(rest) != "" {
			return bad("the part after ~/ must be relative")
		}
		return Entry{Path: rest, HomeRelative: true}, nil
	}
	if strings.HasPrefix(s, "~") {
		return bad("only ~/ (every home) is supported; name one user's file by its absolute path")
	}
	if !filepath.IsAbs(s) {
		return bad("neither absolute nor ~/-relative")
	}
	p := filepath.Clean(s)
	if root, ok := systemRoot(OSLinks{}, p, runtime.GOOS); ok {
		return bad("it is the system directory %s, which commands need; list the files under it instead", root)
	}
	return Entry{Path: p}, nil
}

// cutHome strips a leading "~/" (or "~\" on Windows), or reports a bare "~".
func cutHome(s string) (string, bool) {
	if s == "~" {
		return "", true
	}
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		return rest, true
	}
	if filepath.Separator == '\\' {
		if rest, ok := strings.CutPrefix(s, `~\`); ok {
			return rest, true
		}
	}
	return "", false
}
