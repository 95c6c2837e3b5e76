//go:build linux

package native

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
)

// overlayDirs makes a fresh upper and work directory for one command
// below data, as the caller of overlay mode (package overlay) does under
// IronVise's data directory.
func overlayDirs(t testing.TB, data, step string, layers ...string) *sandbox.Overlay {
	t.Helper()
	o := &sandbox.Overlay{Layers: layers, Upper: filepath.Join(data, step, "upper"), Work: filepath.Join(data, step, "work")}
	for _, d := range []string{o.Upper, o.Work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// overlayfs leaves work/work with mode 000: without CAP_DAC_OVERRIDE
	// the fixture's removal needs it opened up first.
	t.Cleanup(func() { os.Chmod(filepath.Join(o.Work, "work"), 0o700) })
	return o
}

// treeState is every entry of a tree with its type, mode, owner, size,
// modification time, device number, link target and content hash: two
// equal states mean nothing under the tree was written, deleted, renamed,
// chmodded, chowned or touched.
func treeState(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s mode=%o uid=%d gid=%d size=%d mtime=%d.%d rdev=%d", rel, st.Mode, st.Uid, st.Gid, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Rdev)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" sha256=%x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// runOverlay runs cmd in overlay mode and fails the test unless the
// sandbox applied with the overlay recorded.
func runOverlay(t testing.TB, tier sandbox.Tier, fx *fixture, ov *sandbox.Overlay, cmd string) sandbox.Result {
	t.Helper()
	r := run(t, tier, fx, cmd, func(q *sandbox.Request) { q.Overlay = ov })
	if r.Enforced.Workspace != "overlay" || r.Enforced.Overlay == nil || r.Enforced.Overlay.Layers != len(ov.Layers) ||
		!strings.Contains(r.Enforced.Overlay.Options, "redirect_dir=nofollow,metacopy=off,index=off") {
		t.Fatalf("overlay not recorded: workspace %q, overlay %+v", r.Enforced.Workspace, r.Enforced.Overlay)
	}
	return r
}

// whiteout reports whether p is an overlayfs whiteout: a 0/0 character
// device.
func whiteout(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// TestOverlayWorkflow: a build, a formatter, deletions, renames of a file
// and of a directory, chmod, symlinks and hard links, all through the
// workspace in overlay mode; the real workspace is untouched, the upper
// layer holds exactly the changes (whiteouts for the deletions), and a
// second command stacked on the first's layer sees them and writes only
// its own layer.
func TestOverlayWorkflow(t *testing.T) { testOverlayWorkflow(t, sandbox.Options{}) }

func testOverlayWorkflow(t *testing.T, opts sandbox.Options) {
	fx := newFixture(t)
	data := fx.hostDir(t, "data")
	opts.Hidden = append(opts.Hidden, data)
	tier := newTestTier(t, opts)
	build := "cc -o build/hello hello.c && "
	if _, err := os.Stat("/usr/bin/cc"); err != nil {
		build = "printf 'binary' > build/hello && "
	}
	writeFile(t, fx.ws, "hello.c", "int main(void) { return 0; }\n")
	writeFile(t, fx.ws, "old.txt", "to be deleted\n")
	if err := os.MkdirAll(filepath.Join(fx.ws, "lib", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fx.ws, "lib/deep/x.txt", "x\n")
	before := treeState(t, fx.ws)

	ov1 := overlayDirs(t, data, "1")
	r := runOverlay(t, tier, fx, ov1, "set -e; mkdir -p build && echo artefact > build/out && "+build+
		"sed -i s/alpha/ALPHA/ src/main.txt && "+
		"rm old.txt && mv README README.md && mv lib lib2 && "+
		"chmod 600 hello.c && ln -s README.md link && ln build/out build/out.hard && "+
		"ls -la build && cat src/main.txt && echo DONE")
	exitZero(t, r)
	contains(t, r, "ALPHA 1")
	contains(t, r, "DONE")
	if after := treeState(t, fx.ws); after != before {
		t.Fatalf("the real workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	up := ov1.Upper
	for _, p := range []string{"build/out", "build/hello", "build/out.hard", "src/main.txt", "README.md", "lib2/deep/x.txt", "hello.c"} {
		if _, err := os.Lstat(filepath.Join(up, p)); err != nil {
			t.Errorf("the upper layer lacks %s: %v", p, err)
		}
	}
	for _, p := range []string{"old.txt", "README", "lib"} {
		if !whiteout(filepath.Join(up, p)) {
			t.Errorf("the upper layer has no whiteout for the deleted %s", p)
		}
	}
	if target, err := os.Readlink(filepath.Join(up, "link")); err != nil || target != "README.md" {
		t.Errorf("symlink in the upper layer: %q, %v", target, err)
	}
	if fi, err := os.Stat(filepath.Join(up, "hello.c")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("chmod not in the upper layer: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(up, "src/main.txt")); !strings.Contains(string(b), "ALPHA 1") {
		t.Errorf("sed -i result not in the upper layer: %q", b)
	}
	// Exactly the changes: nothing of the workspace that was not touched
	// was copied up.
	for _, p := range []string{"probe.py", "src/needle", "lib2/deep/../../probe.py"} {
		if _, err := os.Lstat(filepath.Join(up, p)); err == nil {
			t.Errorf("the upper layer holds the untouched %s", p)
		}
	}
	layer1 := treeState(t, up)

	// A second command on top of the first's layer.
	ov2 := overlayDirs(t, data, "2", ov1.Upper)
	r = runOverlay(t, tier, fx, ov2, "cat build/out; test ! -e old.txt && test ! -e README && test -L link && cat lib2/deep/x.txt && echo second > second.txt && rm build/out && echo OK2")
	exitZero(t, r)
	contains(t, r, "artefact\nx\nOK2")
	if got := treeState(t, up); got != layer1 {
		t.Fatalf("the first layer changed under the second command:\n%s\nwant:\n%s", got, layer1)
	}
	if after := treeState(t, fx.ws); after != before {
		t.Fatalf("the real workspace changed under the second command")
	}
	unchanged(t, filepath.Join(ov2.Upper, "second.txt"), "second\n")
	if !whiteout(filepath.Join(ov2.Upper, "build/out")) {
		t.Error("the second layer has no whiteout for build/out, which only the first layer held")
	}
}

// TestOverlayEscapes: in overlay mode the command still writes nowhere
// but through the workspace: outside it, through symlinks it planted to
// /etc or a writable host directory, into its upper directory or the
// data directory by name, or overlayfs's own marks (a whiteout device,
// overlay xattrs). The real workspace stays byte-for-byte unchanged.
func TestOverlayEscapes(t *testing.T) { testOverlayEscapes(t, sandbox.Options{}) }

func testOverlayEscapes(t *testing.T, opts sandbox.Options) {
	fx := newFixture(t)
	data := fx.hostDir(t, "data")
	opts.Hidden = append(opts.Hidden, data)
	tier := newTestTier(t, opts)
	// A layer stack outside the data directory too, where only the
	// tier's own masks and Landlock keep it out of reach.
	loose := fx.hostDir(t, "loose")
	before := treeState(t, fx.ws)
	for _, tc := range []struct {
		name, cmd string
		ov        func() *sandbox.Overlay
	}{
		{"data_dir", "", func() *sandbox.Overlay { return overlayDirs(t, data, "1") }},
		{"outside_data_dir", "", func() *sandbox.Overlay { return overlayDirs(t, loose, "1") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ov := tc.ov()
			cmd := strings.Join([]string{
				"echo pwned > " + fx.victim + " && echo VICTIM-WRITTEN",
				"echo new > " + filepath.Join(fx.out, "new") + " && echo OUT-WRITTEN",
				"ln -s /etc etclink && echo x > etclink/ironvise-evil && echo ETC-WRITTEN",
				"ln -s " + fx.out + " outlink && echo x > outlink/evil && echo OUTLINK-WRITTEN",
				"ln " + fx.victim + " hardlink && echo x >> hardlink && echo HARDLINK-WRITTEN",
				"ln -s " + fx.victim + " victimlink && echo x >> victimlink && echo VICTIMLINK-WRITTEN",
				"ls " + ov.Upper + " && echo UPPER-LISTED",
				"echo x > " + filepath.Join(ov.Upper, "planted") + " && echo UPPER-WRITTEN",
				"echo x > " + filepath.Join(ov.Work, "planted") + " && echo WORK-WRITTEN",
				"ls " + data + "/1 && echo DATA-LISTED",
				"mknod fake c 0 0 && echo WHITEOUT-MADE",
				`python3 -c 'import os; os.setxattr("src", "trusted.overlay.opaque", b"y")' 2>/dev/null && echo TRUSTED-XATTR`,
				// Overlayfs (6.7+) stores it escaped (user.overlay.overlay.opaque),
				// for a nested overlay; checked below.
				`python3 -c 'import os; os.setxattr("src", "user.overlay.opaque", b"y")' 2>/dev/null && echo USER-XATTR-SET`,
				"cp /bin/true ./mytrue && ./mytrue && echo EXEC-WS",
				"echo ok > inside.txt && echo INSIDE-WRITTEN",
				"true",
			}, "; ")
			r := runOverlay(t, tier, fx, ov, cmd)
			for _, bad := range []string{"VICTIM-WRITTEN", "HARDLINK-WRITTEN", "VICTIMLINK-WRITTEN", "OUT-WRITTEN", "ETC-WRITTEN", "OUTLINK-WRITTEN", "UPPER-LISTED", "UPPER-WRITTEN",
				"WORK-WRITTEN", "DATA-LISTED", "WHITEOUT-MADE", "TRUSTED-XATTR", "EXEC-WS"} {
				if strings.Contains(r.Stdout, bad) {
					t.Errorf("escape: %s\n%s", bad, r.Observation())
				}
			}
			contains(t, r, "INSIDE-WRITTEN")
			unchanged(t, fx.victim, fx.victimText)
			absent(t, filepath.Join(fx.out, "new"))
			absent(t, filepath.Join(fx.out, "evil"))
			absent(t, "/etc/ironvise-evil")
			absent(t, filepath.Join(ov.Upper, "planted"))
			absent(t, filepath.Join(ov.Work, "planted"))
			absent(t, filepath.Join(ov.Upper, "fake"))
			unchanged(t, filepath.Join(ov.Upper, "inside.txt"), "ok\n")
			// No mark of overlayfs's own in the layer: an attribute the
			// command set is escaped, never read as opaque.
			for _, x := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
				if _, err := unix.Lgetxattr(filepath.Join(ov.Upper, "src"), x, make([]byte, 16)); err == nil {
					t.Errorf("the layer's src carries %s", x)
				}
			}
			if after := treeState(t, fx.ws); after != before {
				t.Fatalf("the real workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestOverlayDirectoryRename: renaming a directory of a lower layer gets
// EXDEV from overlayfs (redirect_dir=nofollow), and mv falls back to copying:
// the command's `mv dir dir2` works.
func TestOverlayDirectoryRename(t *testing.T) {
	fx := newFixture(t)
	data := fx.hostDir(t, "data")
	tier := newTestTier(t, sandbox.Options{Hidden: []string{data}})
	ov := overlayDirs(t, data, "1")
	r := runOverlay(t, tier, fx, ov, `python3 -c '
import os, errno
try:
    os.rename("src", "src3"); print("RENAMED")
except OSError as e:
    print("rename:", errno.errorcode[e.errno])
' && mv src src2 && ls src2 && test ! -e src && echo MOVED`)
	exitZero(t, r)
	contains(t, r, "rename: EXDEV")
	contains(t, r, "main.txt\nMOVED")
	if _, err := os.Stat(filepath.Join(fx.ws, "src", "main.txt")); err != nil {
		t.Fatalf("the real workspace lost src: %v", err)
	}
}

// TestOverlayAbortsFailClosed: every layer stack the tier cannot mount
// safely aborts the run with what failed and the fix, and the command
// never runs, on the real workspace or anywhere.
func TestOverlayAbortsFailClosed(t *testing.T) {
	fx := newFixture(t)
	data := fx.hostDir(t, "data")
	tier := newTestTier(t, sandbox.Options{Hidden: []string{data}})
	step := 0
	fresh := func() *sandbox.Overlay {
		step++
		return overlayDirs(t, data, fmt.Sprint(step))
	}
	colon := filepath.Join(data, "a:b")
	cases := []struct {
		name, want string
		ov         func() *sandbox.Overlay
		inject     map[string]int
		container  bool
	}{
		{"missing_upper", "the upper directory", func() *sandbox.Overlay {
			o := fresh()
			os.Remove(o.Upper)
			return o
		}, nil, false},
		{"missing_work", "the work directory", func() *sandbox.Overlay {
			o := fresh()
			os.Remove(o.Work)
			return o
		}, nil, false},
		{"empty_names", "names no upper or no work", func() *sandbox.Overlay { return &sandbox.Overlay{} }, nil, false},
		{"relative", "not an absolute path", func() *sandbox.Overlay { o := fresh(); o.Upper = "upper"; return o }, nil, false},
		{"upper_not_empty", "must be a fresh, empty directory", func() *sandbox.Overlay {
			o := fresh()
			writeFile(t, o.Upper, "stale", "x")
			return o
		}, nil, false},
		{"upper_is_work", "are the same or one holds the other", func() *sandbox.Overlay { o := fresh(); o.Work = o.Upper; return o }, nil, false},
		{"upper_is_lower", "are the same or one holds the other", func() *sandbox.Overlay { o := fresh(); o.Layers = []string{o.Upper}; return o }, nil, false},
		{"upper_in_workspace", "are the same or one holds the other", func() *sandbox.Overlay {
			o := fresh()
			o.Upper = filepath.Join(fx.ws, "upper")
			os.Mkdir(o.Upper, 0o755)
			return o
		}, nil, false},
		{"layer_holds_workspace", "are the same or one holds the other", func() *sandbox.Overlay { o := fresh(); o.Layers = []string{fx.base}; return o }, nil, false},
		{"layer_is_workspace", "are the same or one holds the other", func() *sandbox.Overlay { o := fresh(); o.Layers = []string{fx.ws}; return o }, nil, false},
		{"layer_missing", "layer 1", func() *sandbox.Overlay { o := fresh(); o.Layers = []string{filepath.Join(data, "nope")}; return o }, nil, false},
		{"layer_is_file", "not a directory", func() *sandbox.Overlay { o := fresh(); o.Layers = []string{fx.secret}; return o }, nil, false},
		{"different_filesystems", "different file systems", func() *sandbox.Overlay {
			o := fresh()
			shm, err := os.MkdirTemp("/dev/shm", "ironvise-work-")
			if err != nil {
				t.Skip("no /dev/shm")
			}
			t.Cleanup(func() { os.RemoveAll(shm) })
			o.Work = shm
			return o
		}, nil, false},
		{"colon_in_path", "mount options cannot carry", func() *sandbox.Overlay {
			o := fresh()
			os.Mkdir(colon, 0o700)
			o.Upper = colon
			return o
		}, nil, false},
		{"too_many_layers", "squashed", func() *sandbox.Overlay {
			o := fresh()
			for i := range 200 {
				l := filepath.Join(data, "layers", fmt.Sprintf("%03d-%s", i, strings.Repeat("l", 20)))
				os.MkdirAll(l, 0o755)
				o.Layers = append(o.Layers, l)
			}
			return o
		}, nil, false},
		{"kernel_refuses_mount", "mount an overlayfs on the workspace", fresh, map[string]int{launch.StepOverlay: int(syscall.EINVAL)}, false},
		{"mount_skipped", "sandbox setup failed", fresh, map[string]int{launch.StepOverlay: launch.InjectSkip}, false},
		{"container_mode", "container mode", fresh, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := tier
			if tc.inject != nil {
				tr = newTestTier(t, sandbox.Options{Hidden: []string{data}})
				tr.inject = tc.inject
			}
			if tc.container {
				tr = newTestTier(t, sandbox.Options{Hidden: []string{data}, ContainerMode: true})
			}
			ov := tc.ov()
			marker := "ran-" + tc.name
			r := tr.Run(context.Background(), sandbox.Request{Command: "echo x > " + marker + "; echo x > /tmp/" + marker, Workspace: fx.ws, Timeout: 60 * time.Second, Overlay: ov})
			if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, tc.want) || !strings.Contains(r.Reason, "fix") {
				t.Fatalf("%s: %s; want aborted with %q and a fix", r.Headline(), r.Reason, tc.want)
			}
			absent(t, filepath.Join(fx.ws, marker))
			absent(t, filepath.Join("/tmp", marker))
			if ov.Upper != "" && filepath.IsAbs(ov.Upper) {
				absent(t, filepath.Join(ov.Upper, marker))
			}
			t.Logf("%s", r.Reason)
		})
	}
}

// TestOverlaySwitchedUser: with ECTO_SANDBOX_USER the overlay shows the
// workspace with its real owners and modes (the tier gives the fresh upper
// directory the workspace's), and the command changes what that user's
// permissions allow: a world-writable file and directory, not a file
// of root's. Its new files are its own in the layer; the real workspace
// is untouched.
func TestOverlaySwitchedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching user needs root")
	}
	fx := newFixture(t)
	data := fx.hostDir(t, "data")
	tier := newTestTier(t, sandbox.Options{User: "nobody", Hidden: []string{data}})
	if err := os.Chmod(fx.ws, 0o777); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fx.ws, "shared.txt", "shared\n")
	if err := os.Chmod(filepath.Join(fx.ws, "shared.txt"), 0o666); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, fx.ws)
	ov := overlayDirs(t, data, "1")
	r := runOverlay(t, tier, fx, ov, "id -u; echo more >> shared.txt && echo SHARED-OK; echo new > new.txt && echo NEW-OK; echo x >> README && echo README-WRITTEN; stat -c '%a %u' .")
	contains(t, r, "65534\nSHARED-OK\nNEW-OK")
	contains(t, r, "777 0")
	if strings.Contains(r.Stdout, "README-WRITTEN") {
		t.Fatalf("the switched user wrote root's 0644 file:\n%s", r.Observation())
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(ov.Upper, "new.txt"), &st); err != nil || st.Uid != 65534 {
		t.Fatalf("new.txt in the layer: uid %d, %v; want 65534", st.Uid, err)
	}
	unchanged(t, filepath.Join(ov.Upper, "shared.txt"), "shared\nmore\n")
	if after := treeState(t, fx.ws); after != before {
		t.Fatalf("the real workspace changed:\n%s\n%s", before, after)
	}
}
