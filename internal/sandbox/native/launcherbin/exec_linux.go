//go:build linux

package launcherbin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// Executable is the embedded launcher made executable for the rest of the
// process's life.
type Executable struct {
	// Path starts it: /proc/self/fd/N, a sealed memory file. A child
	// resolves it in its own descriptor table, where N is still open
	// until its exec completes.
	Path   string
	SHA256 string
	Size   int
	// fd is the memory file's descriptor.
	fd int
}

// Embedded returns the embedded launcher ready to start, made once per
// process: ErrNotEmbedded when the build has none, otherwise why it
// cannot be used. With run, the program has also answered
// launch.CheckArg from its memory file (once per process), so that a
// tier of many commands learns at its start that it must fall back to
// the ironvise binary. A process of one command passes run false: that
// run costs about what the embedded launcher saves it, and its one
// launcher's start is the same test (a start that fails falls back to the
// ironvise binary, see package native's launch).
func Embedded(run bool) (*Executable, error) {
	e, err := load()
	if err == nil && run {
		err = checked()
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

var load = sync.OnceValues(func() (*Executable, error) {
	if _, err := fs.Stat(files, file); errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotEmbedded
	}
	return makeExecutable(func() (io.Reader, error) { return files.Open(file) }, wantSHA256)
})

var checked = sync.OnceValue(func() error {
	e, err := load()
	if err != nil {
		return err
	}
	return check(e.Path)
})

// FromBytes makes the launcher program b executable as Embedded(true)
// makes the embedded one, for a build stamped with the SHA-256 want: the
// tests use it with a launcher they built.
func FromBytes(b []byte, want string) (*Executable, error) {
	e, err := makeExecutable(func() (io.Reader, error) { return bytes.NewReader(b), nil }, want)
	if err == nil {
		if err = check(e.Path); err != nil {
			e.close()
			e = nil
		}
	}
	return e, err
}

// makeExecutable copies the program that open reads, which must hash to
// want, into a sealed memory file.
//
// The bytes are streamed from the binary's read-only data through a small
// buffer and hashed once, as the sealed file they became: copying the
// whole program onto the heap first and hashing it there as well cost a
// process some 550 fresh pages and a second SHA-256
// (docs/operate/performance.md#exec-2026-12-04-afternoon). The hash of
// the sealed file is the one that matters — it is what runs, and between
// the file's creation and its seals a process allowed to open this one's
// descriptors could have written to it — so the source is hashed only
// when that check fails, to say which of the two differs.
func makeExecutable(open func() (io.Reader, error), want string) (*Executable, error) {
	if want == "" {
		return nil, errors.New("this ironvise binary carries no SHA-256 to check the embedded launcher against; build it with scripts/build-ironvise.sh")
	}
	r, err := open()
	if err != nil {
		return nil, err
	}
	fd, size, head, err := sealedFile(r)
	if err != nil {
		return nil, err
	}
	if err := sealedHash(fd, size, want); err != nil {
		unix.Close(fd)
		if got, herr := sourceHash(open); herr == nil && got != want {
			return nil, fmt.Errorf("the embedded launcher (sha256 %s) is not the one this binary was built with (sha256 %s); build it with scripts/build-ironvise.sh", got, want)
		}
		return nil, err
	}
	if err := checkELF(head); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Executable{Path: "/proc/self/fd/" + strconv.Itoa(fd), SHA256: want, Size: size, fd: fd}, nil
}

// sourceHash is the SHA-256 of what open reads.
func sourceHash(open func() (io.Reader, error)) (string, error) {
	r, err := open()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// close closes the memory file of an Executable no one will start.
func (e *Executable) close() { unix.Close(e.fd) }

// sealedHash reads the sealed file fd back and requires size bytes that
// hash to want.
func sealedHash(fd, size int, want string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat the launcher's memory file: %w", err)
	}
	if st.Size != int64(size) {
		return fmt.Errorf("the launcher's memory file holds %d bytes, not the %d written", st.Size, size)
	}
	h := sha256.New()
	buf := make([]byte, copyBuf)
	for off := int64(0); off < st.Size; {
		n, err := unix.Pread(fd, buf, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the launcher's memory file back: %w", err)
		}
		if n == 0 {
			return errors.New("read the launcher's memory file back: it ended early")
		}
		h.Write(buf[:n])
		off += int64(n)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("the launcher's sealed memory file hashes to %s, not %s: something wrote to it before it was sealed", got, want)
	}
	return nil
}

// copyBuf is the size of the buffer the program is copied and read back
// through: a few pages, where a buffer of the program's size would be
// hundreds of fresh ones.
const copyBuf = 64 << 10

// minFD is the lowest descriptor the memory file may have: above every
// descriptor a launcher's start places (stdin to launch.ProxyFD), which
// would otherwise replace it in the child before its exec opened it.
const minFD = 10

// sealedFile returns a close-on-exec memory file holding what r reads,
// which nothing can write, grow, shrink or reseal, with its size and its
// first bytes (the ELF header, at most headSize of them).
func sealedFile(r io.Reader) (fd, size int, head []byte, err error) {
	const name = "ironvise-launcher"
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err = unix.MemfdCreate(name, flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3, which added MFD_EXEC, a memory file is
		// executable without it.
		fd, err = unix.MemfdCreate(name, flags)
	}
	if err != nil {
		return -1, 0, nil, fmt.Errorf("create the launcher's memory file: memfd_create: %w", err)
	}
	if fd < minFD {
		high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, minFD)
		unix.Close(fd)
		if err != nil {
			return -1, 0, nil, fmt.Errorf("move the launcher's memory file above descriptor %d: %w", minFD, err)
		}
		fd = high
	}
	size, head, err = copyInto(fd, r)
	if err != nil {
		unix.Close(fd)
		return -1, 0, nil, err
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	// F_SEAL_EXEC (Linux 6.3) also freezes the execute bits; an older
	// kernel refuses the unknown seal, and the others still hold.
	_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals|unix.F_SEAL_EXEC)
	if errors.Is(err, unix.EINVAL) {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals)
	}
	if err != nil {
		unix.Close(fd)
		return -1, 0, nil, fmt.Errorf("seal the launcher's memory file: %w", err)
	}
	return fd, size, head, nil
}

// headSize is how much of the program sealedFile returns: its ELF header.
const headSize = 64

// copyInto writes what r reads into fd and returns how many bytes it
// wrote and the first headSize of them.
func copyInto(fd int, r io.Reader) (int, []byte, error) {
	buf := make([]byte, copyBuf)
	size := 0
	var head []byte
	for {
		n, rerr := io.ReadFull(r, buf)
		if size == 0 {
			head = append([]byte(nil), buf[:min(n, headSize)]...)
		}
		for rest := buf[:n]; len(rest) > 0; {
			w, err := unix.Write(fd, rest)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return 0, nil, fmt.Errorf("write the launcher into its memory file: %w", err)
			}
			rest = rest[w:]
			size += w
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			return size, head, nil
		case rerr != nil:
			return 0, nil, fmt.Errorf("read the embedded launcher: %w", rerr)
		}
	}
}

// check runs the launcher at path with launch.CheckArg and requires
// launch.CheckReply.
func check(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, launch.CheckArg)
	cmd.Env = launch.Env()
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return fmt.Errorf("run the embedded launcher from its memory file: %w", err)
	}
	if got := strings.TrimSpace(string(out)); got != launch.CheckReply {
		return fmt.Errorf("the embedded launcher answered %q to %s, not %q", got, launch.CheckArg, launch.CheckReply)
	}
	return nil
}
