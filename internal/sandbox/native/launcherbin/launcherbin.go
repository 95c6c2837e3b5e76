// Package launcherbin holds the native Linux tier's sandbox launcher as a
// program of its own, embedded in the ironvise binary when the build puts
// it there (scripts/build-ironvise.sh, which `make build` runs), and makes
// it executable.
//
// # Why a launcher of its own
//
// The tier starts one launcher per command (package launch). Re-executing
// the ironvise binary for it means starting a 25–39 MB Go program: the
// runtime registers the interface tables of every package linked in and
// walks its whole function table, and each page it touches is a page
// fault. The launcher alone is a 2 MB program with a few dozen interface
// tables. Measured on a 2-core virtual machine whose page faults are slow
// (docs/operate/performance-log.md#exec-2026-12-03-late-night): a launcher started until it
// gives up for want of a specification took 13.7 ms as the ironvise binary
// and 6.0 ms as its own program (5.1 ms for a Go program that does
// nothing), and eight clients at once through one `ironvise serve` ran
// 15–18 % more commands per second.
//
// # How it is built and trusted
//
// The build compiles package launcherbin/launcher first and hands the
// result to the main build with `go build -overlay`, as the file
// bin/launcher of this package, which the source tree holds empty: no
// launcher binary is ever committed, so none can go stale, and a plain
// `go build` (or `go test`) embeds nothing and the tier re-executes the
// ironvise binary. The main build is stamped with the launcher's SHA-256
// (wantSHA256): the launcher is the one built from the same tree in the
// same run, so both speak the same specification format. Both builds are
// reproducible, and `ironvise version` prints the hash.
//
// The launcher runs from a sealed memory file: nothing on disk can be
// swapped under it. The kernel fills the file from the part of the
// running executable that holds the embedded bytes (sendfile, so that
// this process faults none of its 2 MB in; from memory when that part
// cannot be matched to the file), the file is sealed, and the sealed file
// is read back and must hash to the stamp before anything runs from it:
// what runs is what the binary was built with, trusted exactly as far as
// the ironvise binary is. A tier of many commands also runs it once
// (launch.CheckArg) before it relies on it; a process of one command does
// not, as its launcher's start is the same test and falls back to the
// ironvise binary.
//
// # Limitations
//
// A kernel or policy that refuses executable memory files
// (vm.memfd_noexec=2) leaves the tier on the ironvise binary, with a
// warning (at debug level in a process of one command, which is only
// slower for it; the doctor says which launcher a tier uses and why).
package launcherbin

import (
	"crypto/sha256"
	_ "embed" // the launcher program, below
	"encoding/hex"
	"errors"
	"unsafe"
)

// program is the launcher the build overlaid on bin/launcher, which the
// source tree holds empty: "" in any other build. It stays in the
// binary's read-only data; nothing copies it onto the heap.
//
//go:embed bin/launcher
var program string

// wantSHA256 is the SHA-256 of the launcher the build embedded, stamped by
// scripts/build-ironvise.sh (-X); empty in any other build.
var wantSHA256 string

// ErrNotEmbedded is the answer of a build without the launcher.
var ErrNotEmbedded = errors.New("this build has no embedded sandbox launcher (build with scripts/build-ironvise.sh or make build)")

// Embeds reports whether the build embedded a launcher.
func Embeds() bool { return program != "" }

// Info describes the embedded launcher: its size and SHA-256, for
// `ironvise version` and the doctor. ok is false when there is none.
func Info() (size int, sha string, ok bool) {
	if program == "" {
		return 0, "", false
	}
	sum := sha256.Sum256(programBytes())
	return len(program), hex.EncodeToString(sum[:]), true
}

// programBytes is program without a copy. Its memory is read-only: a
// write to it would fault.
func programBytes() []byte { return unsafe.Slice(unsafe.StringData(program), len(program)) }
