package execclient

import (
	"os"
	"path"
)

// abs is filepath.Abs, written with package path: path/filepath imports
// strings, which Go initialises too late for the thin path. On Linux the
// two agree.
func abs(p string) (string, error) {
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return path.Join(wd, p), nil
}

func containsSeparator(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return true
		}
	}
	return false
}

// absAsOpened is p made absolute without cleaning it: the kernel reads
// "dir/.." through a symbolic link as the link target's parent, and a
// trailing slash or "." after a file's name as an error, where path.Clean
// would drop both and name another file.
func absAsOpened(p string) (string, error) {
	if path.IsAbs(p) {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return wd + "/" + p, nil
}
