//go:build linux

// Package mounts reads the mount table of IronVise's mount namespace: its
// digest, kept until the kernel says the table changed (the native tier's
// ready launchers and cached mask list are only good under the table they
// were made under), and the other names a mount gives a path.
//
// A protected path is masked by its name, and a mount can give the same
// file another one: a bind mount of /etc at /srv/etc, of a home directory
// inside a project, the host's root file system mounted again at /host (a
// container's usual view of its host). Landlock does not tell the names
// apart (the bind mount's root is /etc's own directory), and a container
// engine's recursive bind of the workspace carries the mounts inside it
// along; a mask on /etc/shadow leaves /srv/etc/shadow readable. So the
// tiers mask every other name each protected path has (Aliases) as well.
package mounts

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/secretpaths"
)

// Digest is the digest of the mount table (/proc/self/mountinfo); false
// when it cannot be read.
//
// The native tier asks for it several times per command, and reading the
// table costs more than the rest of what it checks: the digest is kept
// until the table changes. The kernel marks an open mountinfo file with
// POLLPRI (and POLLERR) once a mount or unmount has happened in its mount
// namespace since that file was last polled (proc(5)); the table is read
// again after such a mark, after any failure to poll, and whenever the
// watch cannot be opened. Polling comes before reading, so a change during
// the read is marked for the next call.
func Digest() ([sha256.Size]byte, bool) {
	d, _, ok := current()
	return d, ok
}

// current is Digest, with the table's bytes when it read them just now
// (nil when the watch said nothing changed), so that Aliases parses what
// was hashed instead of reading the file a second time.
func current() ([sha256.Size]byte, []byte, bool) {
	w := &watch
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 && !w.unusable {
		// A raw descriptor: one os.Open made would join the runtime's
		// epoll set, whose own polls of it would consume the mark.
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.unusable = true
		} else {
			w.fd = int32(fd)
		}
	}
	if w.fd >= 0 && w.ok {
		fds := []unix.PollFd{{Fd: w.fd, Events: unix.POLLPRI}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 0 {
			return w.digest, nil, true
		}
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		w.ok = false
		return [sha256.Size]byte{}, nil, false
	}
	w.digest, w.ok = sha256.Sum256(b), true
	return w.digest, b, true
}

// watch is Digest's cache: the digest of the table as last read and the
// descriptor of mountinfo polled for changes since (never closed: one per
// process).
var watch = struct {
	mu       sync.Mutex
	fd       int32 // -1 until opened
	unusable bool  // the file could not be opened; every call reads
	digest   [sha256.Size]byte
	ok       bool // digest holds a table read since the watch opened
}{fd: -1}

// Entry is one mount of mountinfo (proc(5)): the file system's device,
// the directory of that file system which is mounted (Root) and where
// (Point).
type Entry struct {
	Dev, Root, Point string
}

// Parse reads the mounts of a mountinfo file, in its order (a mount listed
// later at the same point is on top of the earlier one).
func Parse(b []byte) ([]Entry, error) {
	var out []Entry
	for n, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		// ID, parent ID, major:minor, root, mount point, options, …
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(f[2], ":") {
			return nil, fmt.Errorf("mountinfo line %d is malformed: %q", n+1, line)
		}
		root, err := unescape(f[3])
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d: %w", n+1, err)
		}
		point, err := unescape(f[4])
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d: %w", n+1, err)
		}
		out = append(out, Entry{Dev: f[2], Root: root, Point: point})
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134 for a backslash).
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		v := 0
		for _, c := range s[i+1 : i+4] {
			if c < '0' || c > '7' {
				return "", fmt.Errorf("bad escape in %q", s)
			}
			v = v*8 + int(c-'0')
		}
		if v > 0xff {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// AliasesIn returns the other names that each of paths (absolute and
// clean) has through mounts (aliasesOf).
func AliasesIn(mounts []Entry, paths []string) []string {
	devs := sharedDevices(mounts)
	var out []string
	for _, p := range paths {
		out = append(out, aliasesOf(mounts, devs, p)...)
	}
	return out
}

// sharedDevices counts the mounts of each file system mounted more than
// once; nil when there is none (then nothing has another name).
func sharedDevices(mounts []Entry) map[string]int {
	devs := map[string]int{}
	for _, m := range mounts {
		devs[m.Dev]++
	}
	for d, n := range devs {
		if n < 2 {
			delete(devs, d)
		}
	}
	if len(devs) == 0 {
		return nil
	}
	return devs
}

// aliasesOf returns the other names of p: p's place in its file system is
// found from the mount it lies under (the deepest, the last one at that
// point), and each other mount of the same file system whose root holds
// that place names it again under its mount point. Only mounts seen in
// mounts count: each one a recursive bind carries along is listed in
// mountinfo too. devs is sharedDevices(mounts).
func aliasesOf(mounts []Entry, devs map[string]int, p string) []string {
	if devs == nil {
		return nil
	}
	at := -1
	for i, m := range mounts {
		if under(p, m.Point) && (at < 0 || len(m.Point) >= len(mounts[at].Point)) {
			at = i
		}
	}
	if at < 0 || devs[mounts[at].Dev] == 0 {
		return nil
	}
	m := mounts[at]
	place := joinUnder(m.Root, p[len(strings.TrimSuffix(m.Point, "/")):])
	var out []string
	for i, o := range mounts {
		if i == at || o.Dev != m.Dev || !under(place, o.Root) {
			continue
		}
		if alias := joinUnder(o.Point, place[len(strings.TrimSuffix(o.Root, "/")):]); alias != p {
			out = append(out, alias)
		}
	}
	return out
}

// under reports whether the clean absolute path p is dir or lies in it
// (without building dir+"/": it runs for every path and mount).
func under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir) && (len(p) == len(dir) || p[len(dir)] == '/')
}

// joinUnder is dir followed by rest, which is empty or starts with "/".
func joinUnder(dir, rest string) string {
	if dir == "/" {
		if rest == "" {
			return "/"
		}
		return rest
	}
	return dir + rest
}

// Aliases is AliasesIn of paths under this process's mounts. The table is
// parsed again only when its Digest has changed, and each path's answer is
// kept until then: a tier asks about the same few hundred paths for every
// command. An error means the table could not be read or parsed; a caller
// that masks fails closed on it.
func Aliases(paths []string) ([]string, error) {
	digest, b, ok := current()
	c := &cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || !c.ok || digest != c.digest {
		if b == nil {
			// The watch had the digest, this cache not the table.
			var err error
			if b, err = os.ReadFile("/proc/self/mountinfo"); err != nil {
				return nil, err
			}
		}
		mounts, err := Parse(b)
		if err != nil {
			return nil, err
		}
		// Kept under the digest of what was parsed: a change since
		// the watch's read gives a digest that will not match, and the
		// next call reads the table again.
		c.digest, c.mounts, c.devs, c.ok = sha256.Sum256(b), mounts, sharedDevices(mounts), true
		c.memo = map[string][]string{}
	}
	var out []string
	for _, p := range paths {
		a, seen := c.memo[p]
		if !seen {
			a = aliasesOf(c.mounts, c.devs, p)
			if len(c.memo) < maxMemo {
				c.memo[p] = a
			}
		}
		out = append(out, a...)
	}
	return out, nil
}

// maxMemo bounds the answers kept per mount table (a tier's own list and
// a few requests' extra paths).
const maxMemo = 4096

var cache struct {
	mu     sync.Mutex
	digest [sha256.Size]byte
	mounts []Entry
	devs   map[string]int
	memo   map[string][]string
	ok     bool
}

// CheckWorkspace refuses a workspace that is a system directory under
// another name a mount gives it (/srv/etc bound from /etc, the host's root
// mounted at /host), as secretpaths.CheckWorkspace refuses the directory by
// its own name.
func CheckWorkspace(ws string) error {
	for _, r := range secretpaths.SystemRoots(runtime.GOOS) {
		aliases, err := Aliases([]string{r})
		if err != nil {
			return errors.New("read the mount table for other names of the system directories: " + err.Error() + "; nothing was run")
		}
		if slices.Contains(aliases, ws) {
			return &secretpaths.WorkspaceError{Workspace: ws, Reason: "it is the system directory " + r + " under another name, through a mount: every command could read the host's files in it"}
		}
	}
	return nil
}

// WithAliases is paths and every other name that they and extra (names
// masked elsewhere, such as the native launcher's fixed masks) have
// through the current mounts, sorted and without duplicates (parents
// before children, as the tiers mask them). The native and container
// tiers both mask this list; a table that cannot be read is an error, on
// which they fail closed.
func WithAliases(paths, extra []string) ([]string, error) {
	aliases, err := Aliases(append(slices.Clone(paths), extra...))
	if err != nil {
		return nil, errors.New("read the mount table for other names of the protected paths: " + err.Error() + "; nothing was run")
	}
	if len(aliases) == 0 {
		return paths, nil
	}
	out := append(slices.Clone(paths), aliases...)
	slices.Sort(out)
	return slices.Compact(out), nil
}
