package action

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const (
	oNoFollow = unix.O_NOFOLLOW
	oNonBlock = unix.O_NONBLOCK
)

// openBeneath opens rel relative to root with openat2: the resolution may
// not leave root (RESOLVE_BENEATH), may not cross any symlink
// (RESOLVE_NO_SYMLINKS — the path was already fully resolved, so a symlink
// now means the file system changed since the check) and may not use a
// /proc magic link. O_NONBLOCK keeps the open of a FIFO from waiting for a
// writer (the caller then refuses anything but a regular file; for regular
// files the flag has no effect). Kernels before 5.6 lack openat2; there the open falls
// back to O_NOFOLLOW on the last component after the re-check.
func openBeneath(root, rel string) (*os.File, error) {
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dirfd)
	how := &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd, err := unix.Openat2(dirfd, rel, how)
	if errors.Is(err, unix.ENOSYS) {
		return openFile(root, rel)
	}
	if err != nil {
		return nil, &os.PathError{Op: "openat2", Path: rel, Err: err}
	}
	return os.NewFile(uintptr(fd), rel), nil
}
