package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/sandbox/envallow"
)

// EnvAllowed reports whether the variable name may pass into a sandbox:
// one of the allowlist or a locale category (LC_*). The list lives in the
// leaf package envallow, which the microVM guest shares.
func EnvAllowed(name string) bool { return envallow.Allowed(name) }

// DefaultPath is the standard part of a sandboxed command's PATH, the
// whole of it where the tiers do not compute one (CommandPath).
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// toolchainDirs are where language toolchains install their commands
// outside the standard directories. Each must lie under one of execRoots.
var toolchainDirs = []string{
	"/usr/local/go/bin",    // the Go distribution's archive, unpacked as its instructions say
	"/usr/lib/go/bin",      // the golang packages of Debian, Ubuntu and Alpine
	"/usr/local/cargo/bin", // Rust's container images (CARGO_HOME=/usr/local/cargo)
}

// execRoots are the directories the native Linux tier lets a command
// execute from (systemExecDirs in
// internal/sandbox/native/launch/landlock_linux.go). A directory elsewhere
// on PATH would only turn "command not found" into "Permission denied".
var execRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"}

// CommandPath returns the PATH of a sandboxed command on this host:
// DefaultPath, then each of the toolchain directories (/usr/local/go/bin,
// /usr/lib/go/bin, /usr/local/cargo/bin) that exists and, symbolic links
// resolved, still lies under a directory the native Linux tier lets
// commands execute from. The standard directories come first, so a
// toolchain never shadows a system command. It reads the file system; a
// tier calls it once, when it is constructed.
func CommandPath() string {
	return commandPath(filepath.EvalSymlinks, os.Stat)
}

// commandPath is CommandPath with the file system calls injected.
func commandPath(resolve func(string) (string, error), stat func(string) (os.FileInfo, error)) string {
	dirs := []string{DefaultPath}
	for _, d := range toolchainDirs {
		real, err := resolve(d)
		if err != nil || !underExecRoot(real) {
			continue
		}
		if fi, err := stat(real); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return strings.Join(dirs, ":")
}

// underExecRoot reports whether the absolute, clean path p is one of
// execRoots or below one.
func underExecRoot(p string) bool {
	for _, r := range execRoots {
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// CommandEnv builds the environment of a sandboxed command: the allowlisted
// variables of candidate (the first occurrence wins), then the values the
// tier sets itself (they override the candidate), sorted for a stable
// record. A LANG default of C.UTF-8 keeps tools printing UTF-8.
func CommandEnv(candidate []string, set map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, kv := range candidate {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || seen[name] || !EnvAllowed(name) {
			continue
		}
		if _, override := set[name]; override {
			continue
		}
		seen[name] = true
		out = append(out, kv)
	}
	if _, ok := set["LANG"]; !ok && !seen["LANG"] {
		out = append(out, "LANG=C.UTF-8")
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
