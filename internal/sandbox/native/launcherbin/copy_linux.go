//go:build linux

package launcherbin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// copyInto writes b to the empty file dst.
//
// When b lies in this binary's read-only data, as the embedded launcher
// does, the kernel copies it from the executable's file (sendfile): read
// through memory, its 2 MB would first be faulted into this process page
// by page, which on a machine whose page faults are slow cost a process
// of one command more than the smaller launcher saved it
// (docs/operate/performance-log.md#exec-2026-12-04-afternoon). Anything else
// (a launcher a test built, a binary whose mappings cannot be matched to
// its file) is written from memory. Which way it went does not matter to
// the caller: the sealed file is hashed before it runs.
func copyInto(dst int, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if f, off, ok := fileOf(b); ok {
		err := sendAll(dst, f, off, len(b))
		f.Close()
		if err == nil {
			return nil
		}
		// Start again from memory, with the file emptied.
		if err := unix.Ftruncate(dst, 0); err != nil {
			return fmt.Errorf("empty the launcher's memory file after sendfile failed: %w", err)
		}
		if _, err := unix.Seek(dst, 0, 0); err != nil {
			return fmt.Errorf("rewind the launcher's memory file after sendfile failed: %w", err)
		}
	}
	for rest := b; len(rest) > 0; {
		n, err := unix.Write(dst, rest)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write the launcher into its memory file: %w", err)
		}
		rest = rest[n:]
	}
	return nil
}

// sendAll copies n bytes of src from off to dst's position.
func sendAll(dst int, src *os.File, off int64, n int) error {
	for n > 0 {
		m, err := unix.Sendfile(dst, int(src.Fd()), &off, n)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if m == 0 {
			return errors.New("the executable ended early")
		}
		n -= m
	}
	return nil
}

// fileOf opens the running executable and returns where b lies in it, when
// b lies wholly in one mapping of that file (/proc/self/maps, matched to
// the open file by device and inode).
func fileOf(b []byte) (*os.File, int64, bool) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, 0, false
	}
	start := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))
	m, ok := mappingOf(maps, start, uint64(len(b)))
	if !ok {
		return nil, 0, false
	}
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, 0, false
	}
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Ino != m.inode ||
		uint64(unix.Major(st.Dev)) != m.major || uint64(unix.Minor(st.Dev)) != m.minor {
		f.Close()
		return nil, 0, false
	}
	return f, int64(m.offset + start - m.start), true
}

// mapping is one line of /proc/self/maps.
type mapping struct {
	start, end, offset uint64
	major, minor       uint64
	inode              uint64
}

// mappingOf finds the file mapping of maps (the text of /proc/self/maps)
// that holds the n bytes at addr.
func mappingOf(maps []byte, addr, n uint64) (mapping, bool) {
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		m, ok := parseMapping(sc.Bytes())
		if ok && m.inode != 0 && m.start <= addr && addr < m.end {
			return m, n <= m.end-addr
		}
	}
	return mapping{}, false
}

// parseMapping parses "start-end perms offset major:minor inode [path]",
// all numbers but the inode in hexadecimal.
func parseMapping(line []byte) (mapping, bool) {
	f := bytes.Fields(line)
	if len(f) < 5 {
		return mapping{}, false
	}
	rng := bytes.SplitN(f[0], []byte("-"), 2)
	dev := bytes.SplitN(f[3], []byte(":"), 2)
	if len(rng) != 2 || len(dev) != 2 {
		return mapping{}, false
	}
	var m mapping
	var errs [6]error
	m.start, errs[0] = strconv.ParseUint(string(rng[0]), 16, 64)
	m.end, errs[1] = strconv.ParseUint(string(rng[1]), 16, 64)
	m.offset, errs[2] = strconv.ParseUint(string(f[2]), 16, 64)
	m.major, errs[3] = strconv.ParseUint(string(dev[0]), 16, 64)
	m.minor, errs[4] = strconv.ParseUint(string(dev[1]), 16, 64)
	m.inode, errs[5] = strconv.ParseUint(string(f[4]), 10, 64)
	if errors.Join(errs[:]...) != nil || m.end <= m.start {
		return mapping{}, false
	}
	return m, true
}
