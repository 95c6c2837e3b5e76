//go:build linux

package native

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// Every command masks the tier's protected paths under their real
// locations, and resolving them (sandbox.HiddenPaths) is the largest part
// of what a command costs the tier before its launcher: a host's list has
// hundreds of entries, about a millisecond of lstat and readlink calls and
// string work. The answer depends only on the names it read — each
// component of each path, and each link's target — and on the mount
// table, so a tier that runs many commands keeps it until one of those
// may have changed:
//
//   - an inotify descriptor watches the directory holding each name read,
//     for entries created, deleted, renamed or changed in their attributes
//     there (a re-pointed link is a new entry; a directory made
//     unsearchable is a changed attribute), and for the directory's own
//     deletion, move or unmount; an event for a name the answer did not
//     read is dropped, any other event (or a full queue) drops the answer;
//   - the mount table's digest (mounts.Digest) must be the one the answer was
//     computed under;
//   - the answer is computed a second time once the watches are in place,
//     and kept only if both computations agree and read no name outside
//     the watched ones: a change between the first computation and its
//     watch is in the second, and one after it is an event.
//
// inotify reports what happens through the local kernel, so the answer is
// kept only when every watched directory is on a file system whose
// changes all pass through it (ext2/3/4, XFS, Btrfs, F2FS, tmpfs, ramfs).
// On any other (NFS, FUSE, overlayfs, whose layers can change beneath it)
// and whenever a watch cannot be added, every command resolves the list
// anew, as without the cache, and does not try to watch it again until
// the mount table changes. A tier that runs one command
// (Options.OneCommand) or is given extra paths with a command
// (Request.Hidden) resolves them anew too.
//
// The window this leaves is the one resolving per command had: a link
// re-pointed after the answer was checked and before the command's mount
// namespace is built. The launcher checks each mask as it makes it.

// hiddenWatchMask is what a watched directory reports: every change to
// an entry's existence, name or attributes, and the directory's own end.
// IN_DONT_FOLLOW and IN_ONLYDIR: the names read are free of links up to
// their last component, so a watched path that is not a directory has
// changed since it was read.
const hiddenWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR

// hiddenEndMask are the events that drop the answer whatever they name:
// the watch is gone, the directory moved or was unmounted, or events were
// lost.
const hiddenEndMask = unix.IN_IGNORED | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_UNMOUNT | unix.IN_Q_OVERFLOW

// notifyingFS are the file systems (statfs f_type, linux/magic.h) on which
// every change to a directory passes through this kernel's inotify.
var notifyingFS = map[int64]bool{
	0xEF53:     true, // ext2/3/4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0xF2F52010: true, // f2fs
	0x01021994: true, // tmpfs
	0x858458F6: true, // ramfs
}

// hiddenCache is a tier's resolved protected list and what keeps it
// current.
type hiddenCache struct {
	mu sync.Mutex
	// fd is the inotify descriptor of the kept answer's watches; -1 when
	// no answer is kept.
	fd int
	// names are, per watch descriptor, the entries of its directory that
	// the answer read.
	names  map[int32]map[string]bool
	hidden sandbox.Hidden
	mounts [sha256.Size]byte
	// why is the reason the last answer was not kept (for tests); ""
	// when it was.
	why string
	// off: the list cannot be watched here (a file system that may not
	// notify, a watch limit reached, no inotify), found under the mount
	// table offMounts; until that table changes, every command resolves
	// the list without trying again, so that a host where the answer
	// cannot be kept pays nothing for the attempt.
	off       bool
	offMounts [sha256.Size]byte
	// closed: the tier was closed; every call resolves anew.
	closed bool
}

func newHiddenCache() *hiddenCache { return &hiddenCache{fd: -1} }

// resolve returns resolveHidden(list) — the kept answer while nothing it
// read can have changed. list must be the same on every call (the tier's
// own list). The answer's Paths are the caller's; its Absent is shared and
// must not be changed.
func (c *hiddenCache) resolve(list []string) sandbox.Hidden {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return resolveHidden(list)
	}
	if c.off {
		if m, ok := mounts.Digest(); ok && m == c.offMounts {
			return resolveHidden(list)
		}
		c.off = false
	}
	if c.fd >= 0 {
		if m, ok := mounts.Digest(); ok && m == c.mounts && c.quiet() {
			return sandbox.Hidden{Paths: slices.Clone(c.hidden.Paths), Absent: c.hidden.Absent}
		}
		c.drop()
	}
	h := c.compute(list)
	return sandbox.Hidden{Paths: slices.Clone(h.Paths), Absent: h.Absent}
}

// resolveHidden resolves lists anew, reading the file system as it is.
func resolveHidden(lists ...[]string) sandbox.Hidden {
	return sandbox.ResolveHidden(secretpaths.OSLinks{}, lists...)
}

// compute resolves list and keeps the answer when it can be watched.
func (c *hiddenCache) compute(list []string) sandbox.Hidden {
	for _, p := range list {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			// Resolved by EvalSymlinks, outside the recording reader.
			c.why = "the list has an entry that is not a clean absolute path: " + p
			return resolveHidden(list)
		}
	}
	m1, ok1 := mounts.Digest()
	first := &recordingLinks{read: map[string]bool{}}
	paths := sandbox.ResolveHidden(first, list)
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		c.turnOff(m1, ok1, "inotify_init1: "+err.Error())
		return paths
	}
	names, why := watchRead(fd, first.read)
	if why != "" {
		unix.Close(fd)
		c.turnOff(m1, ok1, why)
		return paths
	}
	second := &recordingLinks{read: map[string]bool{}}
	again := sandbox.ResolveHidden(second, list)
	m2, ok2 := mounts.Digest()
	switch {
	case !ok1 || !ok2:
		why = "the mount table cannot be read"
	case m1 != m2:
		why = "the mount table changed while the list was resolved"
	case !slices.Equal(paths.Paths, again.Paths) || !maps.Equal(paths.Absent, again.Absent):
		why = "a protected path changed while the list was resolved"
	case !subset(second.read, first.read):
		why = "the list read other names the second time"
	}
	if why != "" {
		unix.Close(fd)
		c.why = why
		return again
	}
	c.fd, c.names, c.hidden, c.mounts, c.why = fd, names, again, m2, ""
	return again
}

// turnOff records why the list cannot be watched under the mount table
// m (read before the attempt; ok: it could be read). Without a readable
// table the next command tries again.
func (c *hiddenCache) turnOff(m [sha256.Size]byte, ok bool, why string) {
	c.why = why
	c.off, c.offMounts = ok, m
}

// drop forgets the kept answer.
func (c *hiddenCache) drop() {
	if c.fd >= 0 {
		unix.Close(c.fd)
	}
	c.fd, c.names, c.hidden = -1, nil, sandbox.Hidden{}
}

// close releases the watches (Tier.Close).
func (c *hiddenCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.drop()
}

// quiet reads every queued event and reports whether none of them can
// change the answer.
func (c *hiddenCache) quiet() bool {
	var buf [16 << 10]byte
	quiet := true
	for {
		n, err := unix.Read(c.fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return quiet
		}
		if err != nil || n <= 0 {
			return false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				return false
			}
			name := cString(buf[off+unix.SizeofInotifyEvent : end])
			if ev.Mask&hiddenEndMask != 0 || name == "" || c.names[ev.Wd][name] {
				quiet = false
			}
			off = end
		}
	}
}

// cString is the NUL-padded name of an inotify event.
func cString(b []byte) string {
	if i := slices.Index(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// watchRead adds a watch for the directory of each name in read and
// returns, per watch, the names of its directory that were read; why says
// why the names cannot be watched.
func watchRead(fd int, read map[string]bool) (names map[int32]map[string]bool, why string) {
	names = map[int32]map[string]bool{}
	dirs := map[string]int32{}
	for p := range read {
		if p == "/" {
			// The root's own entry changes only with the mount table.
			continue
		}
		dir, name := filepath.Dir(p), filepath.Base(p)
		wd, ok := dirs[dir]
		if !ok {
			var st unix.Statfs_t
			if err := unix.Statfs(dir, &st); err != nil {
				return nil, "statfs " + dir + ": " + err.Error()
			}
			if !notifyingFS[int64(st.Type)] {
				return nil, dir + " is on a file system whose changes inotify may not see (type 0x" + strconv.FormatInt(int64(st.Type), 16) + ")"
			}
			w, err := unix.InotifyAddWatch(fd, dir, hiddenWatchMask)
			if err != nil {
				return nil, "inotify_add_watch " + dir + ": " + err.Error()
			}
			wd = int32(w)
			dirs[dir] = wd
			if names[wd] == nil {
				names[wd] = map[string]bool{}
			}
		}
		names[wd][name] = true
	}
	return names, ""
}

// subset reports whether every name in b is in a.
func subset(b, a map[string]bool) bool {
	for p := range b {
		if !a[p] {
			return false
		}
	}
	return true
}

// recordingLinks reads the file system and notes each name it was asked
// about.
type recordingLinks struct {
	read map[string]bool
}

func (r *recordingLinks) Lstat(name string) (fs.FileInfo, error) {
	r.read[name] = true
	return secretpaths.OSLinks{}.Lstat(name)
}

func (r *recordingLinks) Readlink(name string) (string, error) {
	r.read[name] = true
	return secretpaths.OSLinks{}.Readlink(name)
}
