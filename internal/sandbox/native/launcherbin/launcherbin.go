// Package launcherbin holds the native Linux tier's sandbox launcher as a
// program of its own, embedded in the ironvise binary when the build puts
// it there (scripts/build-ironvise.sh, which `make build` runs), and makes
// it executable for a process that starts many launchers.
//
// # Why a launcher of its own
//
// The tier starts one launcher per command (package launch). Re-executing
// the ironvise binary for it means starting a 39 MB Go program: the
// runtime registers the interface tables of every package linked in and
// walks its whole function table, and each page it touches is a page
// fault. The launcher alone is a 2 MB program with a few dozen interface
// tables. Measured on a 2-core virtual machine whose page faults are slow
// (docs/operate/performance.md#exec-2026-12-03-late-night): a launcher started until it
// gives up for want of a specification took 13.7 ms as the ironvise binary
// and 6.0 ms as its own program (5.1 ms for a Go program that does
// nothing), and eight clients at once through one `ironvise serve` ran
// 15–18 % more commands per second.
//
// # How it is built and trusted
//
// The build compiles package launcherbin/launcher first and hands the
// result to the main build with `go build -overlay`, as the file
// bin/launcher of this package: the source tree never holds a launcher
// binary, so none can go stale, and a plain `go build` (or `go test`)
// embeds nothing and the tier re-executes the ironvise binary as before.
// The main build is stamped with the launcher's SHA-256 (wantSHA256), and
// the embedded bytes must hash to it: the launcher is the one built from
// the same tree in the same run, so both speak the same specification
// format. Both builds are reproducible, and `ironvise version` prints the
// hash. The launcher runs from a sealed memory file copied from the
// binary's own read-only data: nothing on disk can be swapped under it,
// and it is trusted exactly as far as the ironvise binary is. Before the
// tier uses it, the sealed copy is read back and hashed again, and run
// once (launch.CheckArg).
//
// # Limitations
//
// Copying 3 MB into a memory file costs more than a launcher start saves
// for a process that runs one command, so only long-lived tiers (serve,
// an agent run) use it (sandbox.Options.OneCommand). A kernel or policy
// that refuses executable memory files (vm.memfd_noexec=2) leaves the tier
// on the ironvise binary, with a warning.
package launcherbin

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"io/fs"
)

// files is this package's bin directory: a placeholder, and the launcher
// when the build overlaid one.
//
//go:embed all:bin
var files embed.FS

// file is the launcher's name in files.
const file = "bin/launcher"

// wantSHA256 is the SHA-256 of the launcher the build embedded, stamped by
// scripts/build-ironvise.sh (-X); empty in any other build.
var wantSHA256 string

// ErrNotEmbedded is the answer of a build without the launcher.
var ErrNotEmbedded = errors.New("this build has no embedded sandbox launcher (build with scripts/build-ironvise.sh or make build)")

// Info describes the embedded launcher: its size and SHA-256, for
// `ironvise version` and the doctor. ok is false when there is none.
func Info() (size int, sha string, ok bool) {
	b, err := fs.ReadFile(files, file)
	if err != nil {
		return 0, "", false
	}
	sum := sha256.Sum256(b)
	return len(b), hex.EncodeToString(sum[:]), true
}
