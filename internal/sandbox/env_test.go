package sandbox

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

// dirInfo is a directory's FileInfo for the fake file systems below.
type dirInfo string

func (d dirInfo) Name() string       { return string(d) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

// fileInfo is a regular file's.
type fileInfo struct{ dirInfo }

func (fileInfo) Mode() fs.FileMode { return 0o644 }
func (fileInfo) IsDir() bool       { return false }

func TestCommandPath(t *testing.T) {
	cases := []struct {
		name  string
		links map[string]string      // symbolic links: path → target
		fs    map[string]fs.FileInfo // what exists after resolution
		want  string
	}{
		{"nothing extra", nil, nil, DefaultPath},
		{"go archive", nil, map[string]fs.FileInfo{"/usr/local/go/bin": dirInfo("bin")}, DefaultPath + ":/usr/local/go/bin"},
		{"every toolchain, in a fixed order", nil, map[string]fs.FileInfo{
			"/usr/local/cargo/bin": dirInfo("bin"), "/usr/lib/go/bin": dirInfo("bin"), "/usr/local/go/bin": dirInfo("bin"),
		}, DefaultPath + ":/usr/local/go/bin:/usr/lib/go/bin:/usr/local/cargo/bin"},
		{"a link inside the exec roots", map[string]string{"/usr/lib/go/bin": "/usr/lib/go-1.22/bin"},
			map[string]fs.FileInfo{"/usr/lib/go-1.22/bin": dirInfo("bin")}, DefaultPath + ":/usr/lib/go/bin"},
		// Landlock checks the resolved file: a command there could not
		// run.
		{"a link out of the exec roots", map[string]string{"/usr/local/go/bin": "/opt/go/bin"},
			map[string]fs.FileInfo{"/opt/go/bin": dirInfo("bin")}, DefaultPath},
		{"a link to a look-alike root", map[string]string{"/usr/local/go/bin": "/usrx/go/bin"},
			map[string]fs.FileInfo{"/usrx/go/bin": dirInfo("bin")}, DefaultPath},
		{"a file, not a directory", nil, map[string]fs.FileInfo{"/usr/local/go/bin": fileInfo{"bin"}}, DefaultPath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resolve := func(p string) (string, error) {
				if l, ok := tc.links[p]; ok {
					return l, nil
				}
				if _, ok := tc.fs[p]; ok {
					return p, nil
				}
				return "", os.ErrNotExist
			}
			stat := func(p string) (fs.FileInfo, error) {
				if fi, ok := tc.fs[p]; ok {
					return fi, nil
				}
				return nil, os.ErrNotExist
			}
			if got := commandPath(resolve, stat); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

// TestToolchainDirsUnderExecRoots: a directory put on PATH that the
// native tier does not let commands execute from is a bug of the list.
func TestToolchainDirsUnderExecRoots(t *testing.T) {
	for _, d := range toolchainDirs {
		if !underExecRoot(d) {
			t.Errorf("%s is not under %v", d, execRoots)
		}
		if strings.Contains(DefaultPath, d) {
			t.Errorf("%s is already in DefaultPath", d)
		}
	}
}
