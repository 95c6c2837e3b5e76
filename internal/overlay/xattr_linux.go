package overlay

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// getxattr returns the value of an xattr of p (not following symlinks),
// ok false if it is absent.
func getxattr(p, name string) (val string, ok bool, err error) {
	buf := make([]byte, 256)
	n, err := unix.Lgetxattr(p, name, buf)
	switch {
	case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP):
		return "", false, nil
	case errors.Is(err, unix.ERANGE):
		return "", true, nil // longer than any value we compare with
	case err != nil:
		return "", false, fmt.Errorf("overlay: getxattr %s %s: %w", name, p, err)
	}
	return string(buf[:n]), true, nil
}

// isWhiteout reports whether a layer entry is an overlay whiteout: a
// character device 0/0, or a zero-size file carrying the overlay.whiteout
// xattr in the trusted or user (userxattr) namespace.
func isWhiteout(p string, fi fs.FileInfo) (bool, error) {
	if fi.Mode()&fs.ModeCharDevice != 0 {
		st, ok := fi.Sys().(*syscall.Stat_t)
		return ok && st.Rdev == 0, nil
	}
	if !fi.Mode().IsRegular() || fi.Size() != 0 {
		return false, nil
	}
	for _, ns := range []string{"trusted", "user"} {
		_, ok, err := getxattr(p, ns+".overlay.whiteout")
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// dirOpaque reports whether a layer directory is opaque (overlay.opaque
// = "y"). A redirected directory (redirect_dir=on, a directory renamed
// inside the overlay) is refused: its content would come from another
// path below, and reporting it as new would hide the rename's source.
func dirOpaque(p string) (bool, error) {
	for _, ns := range []string{"trusted", "user"} {
		if _, ok, err := getxattr(p, ns+".overlay.redirect"); err != nil {
			return false, err
		} else if ok {
			return false, fmt.Errorf("layer directory %s is a redirect (mount with redirect_dir=off): %w", p, ErrUnsupported)
		}
	}
	for _, ns := range []string{"trusted", "user"} {
		v, ok, err := getxattr(p, ns+".overlay.opaque")
		if err != nil {
			return false, err
		}
		if ok && v == "y" {
			return true, nil
		}
	}
	return false, nil
}

// checkMetacopy refuses a metadata-only copy-up (metacopy=on): the file
// in the layer has no content, so hashing it would record a lie.
func checkMetacopy(p string) error {
	for _, ns := range []string{"trusted", "user"} {
		if _, ok, err := getxattr(p, ns+".overlay.metacopy"); err != nil {
			return err
		} else if ok {
			return fmt.Errorf("layer file %s is a metacopy (mount with metacopy=off): %w", p, ErrUnsupported)
		}
	}
	return nil
}
