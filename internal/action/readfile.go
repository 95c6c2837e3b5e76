package action

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// ErrNotRegular is returned for a path that is not a regular file (a
// directory, a device, a FIFO): reading one could hang or never end.
var ErrNotRegular = errors.New("action: not a regular file")

// ReadFile re-checks path with the tripwire and reads it. A denial returns
// the execute-phase verdict and no output; an I/O failure returns an error
// (which the caller turns into an observation).
func ReadFile(tw *tripwire.Tripwire, path string) (Output, *verdict.Verdict, error) {
	resolved, v := tw.CheckPathAtOpen(path)
	if v.Denied() {
		v.Phase = verdict.PhaseExecute
		return Output{}, &v, nil
	}
	root, ok := tw.RootOf(resolved)
	if !ok {
		// CheckPathAtOpen just placed it under a root; anything else is a
		// bug, and the safe answer is not to read.
		return Output{}, nil, fmt.Errorf("read %s: no root contains the resolved path", resolved)
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil {
		return Output{}, nil, fmt.Errorf("read %s: %w", resolved, err)
	}
	f, err := openBeneath(root, rel)
	if err != nil {
		return Output{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Output{}, nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Output{}, nil, fmt.Errorf("read %s: %w (%s)", path, ErrNotRegular, st.Mode().Type())
	}
	if v := protectedFile(tw, path, st); v != nil {
		return Output{}, v, nil
	}
	out, err := collect(f)
	if err != nil {
		return out, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil, nil
}

// protectedFile compares the file that was opened with every listed path
// that is a file. Security: a hard link is a second name for the same file,
// so a link placed in the workspace to ~/.netrc or the ledger passes every
// name check; its identity does not.
func protectedFile(tw *tripwire.Tripwire, path string, opened os.FileInfo) *verdict.Verdict {
	if opened.Sys() == nil {
		return nil // no identity to compare (a file system without inodes)
	}
	for _, p := range tw.Protected().Paths {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || !os.SameFile(opened, st) {
			continue
		}
		v := verdict.Denial(verdict.CheckTripwire, verdict.PathProtected,
			fmt.Sprintf("%q is another name (a hard link) for the protected file %s: IronVise hides its own data and every credential store from commands", path, p))
		v.Phase = verdict.PhaseExecute
		return &v
	}
	return nil
}

// openFile is the portable fallback: no symlink is followed in the last
// component. It is used where openat2 does not exist.
func openFile(root, rel string) (*os.File, error) {
	return os.OpenFile(filepath.Join(root, rel), os.O_RDONLY|oNoFollow|oNonBlock, 0)
}
