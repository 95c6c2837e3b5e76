package launcherbin

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inRodata is a constant large enough to span pages: the linker places it
// in the test binary's read-only data, a mapping of the executable file
// as the embedded launcher is of the ironvise binary.
const inRodata = "ironvise launcher copy test: " +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" +
	"fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

// TestFileOfReadOnlyData: bytes of the binary's read-only data are found
// in the executable at the offset that holds them; bytes on the heap are
// not found anywhere.
func TestFileOfReadOnlyData(t *testing.T) {
	b := unsafeBytes(inRodata)
	f, off, ok := fileOf(b)
	if !ok {
		t.Fatal("a constant of the test binary was not found in its executable's mappings")
	}
	got := make([]byte, len(b))
	_, err := f.ReadAt(got, off)
	if err != nil || !bytes.Equal(got, b) {
		f.Close()
		t.Fatalf("the executable at offset %d holds %q (%v), want the constant", off, got, err)
	}
	// The kernel's copy of that range (what copyInto does before it falls
	// back to writing from memory, which TestCopyInto cannot tell apart).
	fd, err := unix.MemfdCreate("sendfile-test", unix.MFD_CLOEXEC)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	defer unix.Close(fd)
	err = sendAll(fd, f, off, len(b))
	f.Close()
	if err != nil {
		t.Fatalf("sendfile from the executable: %v", err)
	}
	sent, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !bytes.Equal(sent, b) {
		t.Fatalf("sendfile copied %q (%v), want the constant", sent, err)
	}
	if f, _, ok := fileOf([]byte(strings.Clone(inRodata))); ok {
		f.Close()
		t.Fatal("a copy on the heap was found in the executable")
	}
}

// TestCopyInto: the memory file receives the bytes exactly, from the
// executable (sendfile) or from memory.
func TestCopyInto(t *testing.T) {
	for name, b := range map[string][]byte{
		"read-only data": unsafeBytes(inRodata),
		"heap":           bytes.Repeat([]byte("heap bytes "), 10000),
	} {
		fd, err := unix.MemfdCreate("copy-test", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		if err := copyInto(fd, b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(fd))
		unix.Close(fd)
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s: the file holds %d bytes (%v), want the %d given", name, len(got), err, len(b))
		}
	}
}

// TestMappingOf: the mapping that holds a range, and none for a range
// that crosses a mapping's end, an anonymous mapping or a malformed line.
func TestMappingOf(t *testing.T) {
	maps := []byte(`00400000-00c5e000 r-xp 00000000 fd:01 1234 /usr/local/bin/ironvise
00c5e000-01400000 r--p 0085e000 fd:01 1234 /usr/local/bin/ironvise
01400000-01500000 rw-p 00000000 00:00 0
garbage line
7ffd1000-zzzz r--p 00000000 fd:01 99 /x
`)
	m, ok := mappingOf(maps, 0x00c5f000, 0x1000)
	if !ok || m.offset != 0x85e000 || m.start != 0xc5e000 || m.major != 0xfd || m.minor != 1 || m.inode != 1234 {
		t.Fatalf("mappingOf = %+v, %v", m, ok)
	}
	for name, r := range map[string][2]uint64{
		"across the end": {0x013ff000, 0x2000},
		"anonymous":      {0x01400000, 0x10},
		"unmapped":       {0x10, 0x10},
	} {
		if m, ok := mappingOf(maps, r[0], r[1]); ok {
			t.Errorf("%s: found %+v", name, m)
		}
	}
	for _, line := range []string{"", "x-y r--p 0 fd:01 1", "10-20 r--p 0 fd01 1 /x", "20-10 r--p 0 fd:01 1 /x", "10-20 r--p 0 fd:01 inode /x"} {
		if m, ok := parseMapping([]byte(line)); ok {
			t.Errorf("%q parsed as %+v", line, m)
		}
	}
}

// unsafeBytes is s without a copy, as programBytes is the program.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
