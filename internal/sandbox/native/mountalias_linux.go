//go:build linux

package native

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// A protected path is masked by its name, and a mount can give the same
// file another one: a bind mount of /etc at /srv/etc, of a home directory
// inside a project, the host's root file system mounted again at /host (a
// container's usual view of its host). Landlock does not tell the names
// apart (the bind mount's root is /etc's own directory), and a mask on
// /etc/shadow leaves /srv/etc/shadow readable: a workspace at or above such
// a mount handed the command what the masks hide. So the tier masks every
// other name each protected path has through the mounts of its namespace
// as well, read from /proc/self/mountinfo. The launcher's namespace is a
// copy of this one under the same mount table (a ready launcher started
// under another is not used: spare_linux.go), and the table's digest
// (mountTable) says when the names must be read again. A mount made on the
// host after the command's namespace was built reaches it only through
// shared propagation, which takes a host root; that window is the one
// hiddencache_linux.go describes for links.

// mountEntry is one mount of mountinfo (proc(5)): the file system's
// device, the directory of that file system which is mounted (root) and
// where (point).
type mountEntry struct {
	dev, root, point string
}

// parseMountinfo reads the mounts of a mountinfo file, in its order (a
// mount listed later at the same point is on top of the earlier one).
func parseMountinfo(b []byte) ([]mountEntry, error) {
	var out []mountEntry
	for n, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		// ID, parent ID, major:minor, root, mount point, options, …
		f := strings.Fields(line)
		if len(f) < 5 || !strings.Contains(f[2], ":") {
			return nil, fmt.Errorf("mountinfo line %d is malformed: %q", n+1, line)
		}
		root, err := unescapeMount(f[3])
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d: %w", n+1, err)
		}
		point, err := unescapeMount(f[4])
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d: %w", n+1, err)
		}
		out = append(out, mountEntry{dev: f[2], root: root, point: point})
	}
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134 for a backslash).
func unescapeMount(s string) (string, error) {
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

// mountAliases returns the other names that each of paths (absolute and
// clean) has through mounts (aliasesOf).
func mountAliases(mounts []mountEntry, paths []string) []string {
	devs := sharedDevices(mounts)
	var out []string
	for _, p := range paths {
		out = append(out, aliasesOf(mounts, devs, p)...)
	}
	return out
}

// sharedDevices counts the mounts of each file system mounted more than
// once; nil when there is none (then nothing has another name).
func sharedDevices(mounts []mountEntry) map[string]int {
	devs := map[string]int{}
	for _, m := range mounts {
		devs[m.dev]++
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
func aliasesOf(mounts []mountEntry, devs map[string]int, p string) []string {
	if devs == nil {
		return nil
	}
	at := -1
	for i, m := range mounts {
		if under(p, m.point) && (at < 0 || len(m.point) >= len(mounts[at].point)) {
			at = i
		}
	}
	if at < 0 || devs[mounts[at].dev] == 0 {
		return nil
	}
	m := mounts[at]
	place := joinUnder(m.root, p[len(strings.TrimSuffix(m.point, "/")):])
	var out []string
	for i, o := range mounts {
		if i == at || o.dev != m.dev || !under(place, o.root) {
			continue
		}
		if alias := joinUnder(o.point, place[len(strings.TrimSuffix(o.root, "/")):]); alias != p {
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

// mountAliasesNow is mountAliases of paths under this process's mounts.
// The table is parsed again only when its digest (mountTable) has changed,
// and each path's answer is kept until then: a tier asks about the same
// few hundred paths for every command.
func mountAliasesNow(paths []string) ([]string, error) {
	digest, ok := mountTable()
	c := &mountsCache
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ok || !c.ok || digest != c.digest {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			return nil, err
		}
		mounts, err := parseMountinfo(b)
		if err != nil {
			return nil, err
		}
		// Kept under the digest of what was parsed: a change between
		// mountTable's read and this one gives a digest that will not
		// match, and the next command reads the table again.
		c.digest, c.mounts, c.devs, c.ok = sha256.Sum256(b), mounts, sharedDevices(mounts), true
		c.memo = map[string][]string{}
	}
	var out []string
	for _, p := range paths {
		a, seen := c.memo[p]
		if !seen {
			a = aliasesOf(c.mounts, c.devs, p)
			if len(c.memo) < maxAliasMemo {
				c.memo[p] = a
			}
		}
		out = append(out, a...)
	}
	return out, nil
}

// maxAliasMemo bounds the answers kept per mount table (a tier's own list
// and a few requests' extra paths).
const maxAliasMemo = 4096

var mountsCache struct {
	mu     sync.Mutex
	digest [sha256.Size]byte
	mounts []mountEntry
	devs   map[string]int
	memo   map[string][]string
	ok     bool
}

// withMountAliases is hidden and every other name that its paths and the
// launcher's own masks (launch.FixedMasks) have through the current
// mounts, sorted and without duplicates (parents before children, as the
// launcher masks them).
func withMountAliases(hidden []string) ([]string, error) {
	aliases, err := mountAliasesNow(append(slices.Clone(hidden), launch.FixedMasks()...))
	if err != nil {
		return nil, errors.New("read the mount table for other names of the protected paths: " + err.Error() + "; nothing was run")
	}
	if len(aliases) == 0 {
		return hidden, nil
	}
	out := append(slices.Clone(hidden), aliases...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// notSystemRootByMount refuses a workspace that is a system directory
// under another name a mount gives it (/srv/etc bound from /etc, the
// host's root mounted at /host), as secretpaths.CheckWorkspace refuses the
// directory by its own name.
func notSystemRootByMount(ws string) error {
	for _, r := range secretpaths.SystemRoots(runtime.GOOS) {
		aliases, err := mountAliasesNow([]string{r})
		if err != nil {
			return errors.New("read the mount table for other names of the system directories: " + err.Error() + "; nothing was run")
		}
		if slices.Contains(aliases, ws) {
			return &secretpaths.WorkspaceError{Workspace: ws, Reason: "it is the system directory " + r + " under another name, through a mount: every command could read the host's files in it"}
		}
	}
	return nil
}
