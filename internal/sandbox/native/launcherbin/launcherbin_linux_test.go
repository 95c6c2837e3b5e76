package launcherbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The launcher program itself runs in package native's tests
// (embedded_linux_test.go), which build it; these test the pieces.

func TestCheckELF(t *testing.T) {
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := elfMachine(runtime.GOARCH); !ok {
		t.Skip("no launcher is embedded on " + runtime.GOARCH)
	}
	if err := checkELF(self); err != nil {
		t.Fatalf("this test binary: %v", err)
	}
	mutate := func(off int, v ...byte) []byte {
		b := append([]byte(nil), self[:64]...)
		copy(b[off:], v)
		return b
	}
	other := byte(62)
	if runtime.GOARCH == "amd64" {
		other = 183
	}
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"text":         {[]byte("#!/bin/sh\necho pwned\n"), "not an ELF program"},
		"short":        {self[:10], "not an ELF program"},
		"32-bit":       {mutate(4, 1), "64-bit"},
		"big-endian":   {mutate(5, 2), "little-endian"},
		"relocatable":  {mutate(16, 1, 0), "not an executable"},
		"core":         {mutate(16, 4, 0), "not an executable"},
		"another arch": {mutate(18, other, 0), "built for ELF machine"},
	} {
		if err := checkELF(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, tc.want)
		}
	}
}

// TestSealedFile: the memory file holds the bytes, above the descriptors a
// launcher's start places, and nothing can change it.
func TestSealedFile(t *testing.T) {
	want := []byte("launcher bytes\x00\x01")
	fd, err := sealedFile(want)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if fd < minFD {
		t.Errorf("descriptor %d, want at least %d", fd, minFD)
	}
	got, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || string(got) != string(want) {
		t.Fatalf("content %q, %v; want %q", got, err, want)
	}
	if _, err := unix.Pwrite(fd, []byte("X"), 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("write into the sealed file: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 1); !errors.Is(err, unix.EPERM) {
		t.Errorf("shrink the sealed file: %v, want EPERM", err)
	}
	if err := unix.Ftruncate(fd, 1<<20); !errors.Is(err, unix.EPERM) {
		t.Errorf("grow the sealed file: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("add seals after F_SEAL_SEAL: %v, want EPERM", err)
	}
	// Reopened for writing through /proc, it is the same sealed file.
	if f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_WRONLY, 0); err == nil {
		_, werr := f.Write([]byte("X"))
		f.Close()
		if werr == nil {
			t.Error("a write through a reopened descriptor succeeded")
		}
	}
	if _, err := unix.Mmap(fd, 0, len(want), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); !errors.Is(err, unix.EPERM) {
		t.Errorf("shared writable mapping of the sealed file: %v, want EPERM", err)
	}
}

// TestNotEmbedded: a test binary is built without the overlay.
func TestNotEmbedded(t *testing.T) {
	if _, _, ok := Info(); ok {
		t.Fatal("Info reports an embedded launcher in a test binary")
	}
	if _, err := Embedded(false); !errors.Is(err, ErrNotEmbedded) {
		t.Fatalf("Embedded() = %v, want ErrNotEmbedded", err)
	}
}

// TestFromBytesRefusesBeforeRunning: a program that is not an ELF
// executable, or not the stamped one, is refused and never run.
func TestFromBytesRefusesBeforeRunning(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	script := []byte("#!/bin/sh\ntouch " + marker + "\n")
	sum := sha256.Sum256(script)
	if _, err := FromBytes(script, hex.EncodeToString(sum[:])); err == nil || !strings.Contains(err.Error(), "not an ELF program") {
		t.Fatalf("a script with its own hash: err = %v, want the ELF refusal", err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	other := sha256.Sum256([]byte("something else"))
	if _, err := FromBytes(self, hex.EncodeToString(other[:])); err == nil || !strings.Contains(err.Error(), "not the one this binary was built with") {
		t.Fatalf("an ELF program of another hash: err = %v, want the hash refusal", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused program ran")
	}
}

// TestSealedHash: the read-back finds a change made to the memory file
// before it was sealed, and accepts the file as written.
func TestSealedHash(t *testing.T) {
	b := []byte("the launcher as embedded")
	sum := sha256.Sum256(b)
	want := hex.EncodeToString(sum[:])
	fd, err := sealedFile(b)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := sealedHash(fd, len(b), want); err != nil {
		t.Fatalf("the file as written: %v", err)
	}
	if err := sealedHash(fd, len(b)+1, want); err == nil || !strings.Contains(err.Error(), "not the") {
		t.Fatalf("a size that differs: %v", err)
	}
	// A file written to after the bytes went in and before the seals.
	fd2, err := unix.MemfdCreate("tampered", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd2)
	tampered := append([]byte(nil), b...)
	tampered[0] ^= 1
	if _, err := unix.Write(fd2, tampered); err != nil {
		t.Fatal(err)
	}
	if err := sealedHash(fd2, len(b), want); err == nil || !strings.Contains(err.Error(), "something wrote to it") {
		t.Fatalf("a tampered file: %v", err)
	}
}
