//go:build linux

package launcherbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	fd     int // the memory file
}

// Embedded returns the embedded launcher ready to start, made once per
// process: ErrNotEmbedded when the build has none, otherwise why it
// cannot be used. With run, the program has also answered
// launch.CheckArg from its memory file (once per process), so that a
// tier of many commands learns at its start that it must fall back to
// the ironvise binary. A process of one command passes run false: that
// run would cost about what the embedded launcher saves it, and its one
// launcher's start is the same test (a start that fails falls back to the
// ironvise binary; package native's launch).
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
	if program == "" {
		return nil, ErrNotEmbedded
	}
	return makeExecutable(programBytes(), wantSHA256)
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
	e, err := makeExecutable(b, want)
	if err != nil {
		return nil, err
	}
	if err := check(e.Path); err != nil {
		unix.Close(e.fd)
		return nil, err
	}
	return e, nil
}

// makeExecutable copies b, which must hash to want, into a sealed memory
// file.
//
// The hash that counts is the sealed file's: it is what runs, and between
// the file's creation and its seals a process allowed to open this one's
// descriptors could have written to it. b itself is hashed only when that
// check fails, to say which of the two differs: hashing it first as well
// cost a standalone exec a second SHA-256 of 2 MB.
func makeExecutable(b []byte, want string) (*Executable, error) {
	if want == "" {
		return nil, errors.New("this ironvise binary carries no SHA-256 to check the embedded launcher against; build it with scripts/build-ironvise.sh")
	}
	if err := checkELF(b); err != nil {
		return nil, err
	}
	fd, err := sealedFile(b)
	if err != nil {
		return nil, err
	}
	if err := sealedHash(fd, len(b), want); err != nil {
		unix.Close(fd)
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			return nil, fmt.Errorf("the embedded launcher (sha256 %x) is not the one this binary was built with (sha256 %s); build it with scripts/build-ironvise.sh", sum, want)
		}
		return nil, err
	}
	return &Executable{Path: "/proc/self/fd/" + strconv.Itoa(fd), SHA256: want, Size: len(b), fd: fd}, nil
}

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
	buf := make([]byte, readBuf)
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

// readBuf is the size of the buffer the sealed file is read back through:
// a few pages, where a larger one would be that many fresh pages.
const readBuf = 64 << 10

// minFD is the lowest descriptor the memory file may have: above every
// descriptor a launcher's start places (stdin to launch.ProxyFD), which
// would otherwise replace it in the child before its exec opened it.
const minFD = 10

// sealedFile returns a close-on-exec memory file holding b that nothing
// can write, grow, shrink or reseal.
func sealedFile(b []byte) (int, error) {
	const name = "ironvise-launcher"
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate(name, flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3, which added MFD_EXEC, a memory file is
		// executable without it.
		fd, err = unix.MemfdCreate(name, flags)
	}
	if err != nil {
		return -1, fmt.Errorf("create the launcher's memory file: memfd_create: %w", err)
	}
	if fd < minFD {
		high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, minFD)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("move the launcher's memory file above descriptor %d: %w", minFD, err)
		}
		fd = high
	}
	if err := copyInto(fd, b); err != nil {
		unix.Close(fd)
		return -1, err
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
		return -1, fmt.Errorf("seal the launcher's memory file: %w", err)
	}
	return fd, nil
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
