package secretpaths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// unixRoots are the directories of a Unix host that hold the system itself
// (programs, configuration, devices, kernel interfaces, runtime state),
// including the /bin-style names that are symlinks into /usr on merged-/usr
// systems.
var unixRoots = []string{"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr", "/var"}

// darwinRoots are macOS's (/etc, /var and /tmp are symlinks into /private).
var darwinRoots = []string{"/", "/Applications", "/Library", "/System", "/bin", "/cores", "/dev", "/etc", "/private", "/private/etc", "/private/var", "/sbin", "/usr", "/var"}

// windowsRoots are relative to each volume root.
var windowsRoots = []string{``, `Windows`, `Program Files`, `Program Files (x86)`, `ProgramData`}

// SystemRoots returns the system directories of goos that can be neither a
// workspace nor a protected path (hiding one would break every command).
// On Windows they are relative to the volume root ("" is the root itself).
func SystemRoots(goos string) []string {
	return append([]string(nil), systemRoots(goos)...)
}

// systemRoots is SystemRoots without the copy, for this package's own
// reads (CheckWorkspace runs for every command).
func systemRoots(goos string) []string {
	switch goos {
	case "darwin":
		return darwinRoots
	case "windows":
		return windowsRoots
	}
	return unixRoots
}

// systemRoot reports whether the clean absolute path p is a system
// directory of goos, by its own name or, through a symlink, as the real
// location of one (/usr/bin for /bin on merged-/usr systems). It returns
// the system directory's name.
func systemRoot(links LinkReader, p string, goos string) (string, bool) {
	fold := foldCase(goos)
	eq := func(a, b string) bool {
		if fold {
			return strings.EqualFold(a, b)
		}
		return a == b
	}
	if goos == "windows" {
		vol := filepath.VolumeName(p)
		if vol == "" {
			return "", false
		}
		for _, r := range windowsRoots {
			root := vol + `\` + r
			if eq(p, root) {
				return root, true
			}
		}
		return "", false
	}
	for _, r := range systemRoots(goos) {
		if eq(p, r) {
			return r, true
		}
		// The real location of a symlinked root (/bin -> usr/bin) is as
		// much a system directory as its name.
		if real, err := Resolve(links, r, nil); err == nil && real != r && eq(p, real) {
			return r, true
		}
	}
	return "", false
}

// WorkspaceError says why a directory cannot be a workspace and what to do.
// It unwraps to ErrWorkspace.
type WorkspaceError struct {
	Workspace string
	Reason    string
}

// Error implements error.
func (e *WorkspaceError) Error() string {
	return fmt.Sprintf("workspace %s refused: %s; fix: pass --workspace with the project directory the agent should work in", e.Workspace, e.Reason)
}

// Unwrap implements errors unwrapping to ErrWorkspace.
func (e *WorkspaceError) Unwrap() error { return ErrWorkspace }

// CheckWorkspace refuses a workspace (absolute, symlink-resolved) that is
// the file-system root or a system directory, or that lies inside a listed
// path. A workspace that contains listed paths (a home directory) is fine:
// the sandbox hides them and the tripwire refuses them.
func CheckWorkspace(ws string, l List) error {
	ws = filepath.Clean(ws)
	if !filepath.IsAbs(ws) {
		return &WorkspaceError{Workspace: ws, Reason: "it is not an absolute path"}
	}
	if !maybeSystemRoot(ws) {
		return CheckNotInside(ws, l)
	}
	if root, ok := systemRoot(Memo(OSLinks{}), ws, runtime.GOOS); ok {
		reason := fmt.Sprintf("it is the system directory %s: every command could read the host's configuration, keys and other users' files in it", root)
		if ws == filepath.VolumeName(ws)+string(filepath.Separator) {
			reason = "it is the root of the file system: every command could read every file of the host"
		}
		return &WorkspaceError{Workspace: ws, Reason: reason}
	}
	return CheckNotInside(ws, l)
}

// CheckNotInside is the second half of [CheckWorkspace]: it refuses a
// workspace (absolute, clean) that lies inside a listed path. A caller
// that ran CheckWorkspace on the same workspace with an empty list moments
// before runs this with the full list instead of both checks again.
func CheckNotInside(ws string, l List) error {
	// Security: a workspace inside the data directory or a credential
	// store would hand the command the very files the list hides (the
	// sandbox cannot mask the workspace itself).
	if p, ok := l.Covering(filepath.Clean(ws)); ok {
		return &WorkspaceError{Workspace: ws, Reason: fmt.Sprintf("it lies inside %s, which IronVise hides from every command (its own data or a credential store)", p)}
	}
	return nil
}

// maybeSystemRoot reports whether ws can be a system directory of this
// host at all. By its name or as the real location of one, it is then the
// same file as that directory, so one stat of each rules out most
// workspaces without resolving the system directories' links — which
// CheckWorkspace otherwise did for every command, twice through the daemon
// (the command line and the native tier): 0.50 ms of serve's CPU per
// command on the development host, 0.26 with this (docs/operate/performance.md). A
// workspace that cannot be examined, a system directory that answers
// anything but "does not exist" (a missing one has no real location
// either), and Windows, whose system directories are per volume, all
// answer true: systemRoot decides.
func maybeSystemRoot(ws string) bool {
	if runtime.GOOS == "windows" {
		return true
	}
	wfi, err := os.Stat(ws)
	if err != nil {
		return true
	}
	for _, r := range systemRoots(runtime.GOOS) {
		fi, err := os.Stat(r)
		switch {
		case err == nil && os.SameFile(wfi, fi):
			return true
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return true
		}
	}
	return false
}
