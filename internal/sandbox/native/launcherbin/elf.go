//go:build linux

package launcherbin

import (
	"errors"
	"fmt"
	"runtime"
)

// elfMachine is the ELF machine number of goarch, one of the architectures
// the native tier runs on (its seccomp profiles: amd64 and arm64).
func elfMachine(goarch string) (uint16, bool) {
	switch goarch {
	case "amd64":
		return 62, true // EM_X86_64
	case "arm64":
		return 183, true // EM_AARCH64
	}
	return 0, false
}

// checkELF refuses b unless it is a 64-bit little-endian ELF executable for
// this process's architecture: a launcher overlaid for another one would
// fail at every start instead of once here.
func checkELF(b []byte) error {
	if len(b) < 20 || string(b[:4]) != "\x7fELF" {
		return errors.New("the embedded launcher is not an ELF program")
	}
	if b[4] != 2 || b[5] != 1 {
		return errors.New("the embedded launcher is not a 64-bit little-endian ELF program")
	}
	typ := uint16(b[16]) | uint16(b[17])<<8
	if typ != 2 && typ != 3 { // ET_EXEC, ET_DYN
		return fmt.Errorf("the embedded launcher is an ELF file of type %d, not an executable", typ)
	}
	want, ok := elfMachine(runtime.GOARCH)
	if !ok {
		return fmt.Errorf("no embedded launcher is used on %s", runtime.GOARCH)
	}
	if m := uint16(b[18]) | uint16(b[19])<<8; m != want {
		return fmt.Errorf("the embedded launcher is built for ELF machine %d, not %s (%d)", m, runtime.GOARCH, want)
	}
	return nil
}
