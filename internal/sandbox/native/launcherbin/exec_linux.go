//go:build linux

package launcherbin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
}

// Embedded returns the embedded launcher ready to start, made once per
// process: ErrNotEmbedded when the build has none, otherwise why it
// cannot be used.
func Embedded() (*Executable, error) { return load() }

var load = sync.OnceValues(func() (*Executable, error) {
	b, err := fs.ReadFile(files, file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotEmbedded
	}
	if err != nil {
		return nil, err
	}
	return makeExecutable(b, wantSHA256)
})

// FromBytes makes the launcher program b executable as Embedded makes the
// embedded one, for a build stamped with the SHA-256 want: the tests use
// it with a launcher they built.
func FromBytes(b []byte, want string) (*Executable, error) { return makeExecutable(b, want) }

// makeExecutable copies b, which must hash to want, into a sealed memory
// file and returns it once the program in it answers launch.CheckArg.
func makeExecutable(b []byte, want string) (*Executable, error) {
	sum := sha256.Sum256(b)
	got := hex.EncodeToString(sum[:])
	switch {
	case want == "":
		return nil, errors.New("this ironvise binary carries no SHA-256 to check the embedded launcher against; build it with scripts/build-ironvise.sh")
	case got != want:
		return nil, fmt.Errorf("the embedded launcher (sha256 %s) is not the one this binary was built with (sha256 %s); build it with scripts/build-ironvise.sh", got, want)
	}
	if err := checkELF(b); err != nil {
		return nil, err
	}
	fd, err := sealedFile(b)
	if err != nil {
		return nil, err
	}
	path := "/proc/self/fd/" + strconv.Itoa(fd)
	// Security: the hash is checked again on the sealed file, which is
	// what runs: between its creation and its seals a process allowed
	// to open this one's descriptors could have written to it.
	err = sealedHash(fd, len(b), got)
	if err == nil {
		err = check(path)
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Executable{Path: path, SHA256: got, Size: len(b)}, nil
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
	buf := make([]byte, 256<<10)
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
	for rest := b; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("write the launcher into its memory file: %w", err)
		}
		rest = rest[n:]
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
