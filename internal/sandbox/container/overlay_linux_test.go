//go:build linux

package container

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// The tests below run real containers in overlay mode with Podman (they
// skip like the other Podman tests) and need root, which mounts the
// overlay.

// ownerUID is the workspace owner of the tests: an unprivileged user, as a
// real project's.
const ownerUID, ownerGID = 1000, 1000

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("overlay mode mounts the overlay as root: run the test as root")
	}
}

// overlayWorkspace returns a workspace owned by ownerUID with a file to
// keep, one to rewrite, one to delete, one to rename and a directory.
func overlayWorkspace(t *testing.T) string {
	t.Helper()
	ws := workspace(t)
	files := map[string]string{
		"keep.txt": "keep\n", "fmt.txt": "old style\n", "del.txt": "delete me\n",
		"ren.txt": "rename me\n", "dir/inner.txt": "inner\n",
	}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, ws, ownerUID, ownerGID)
	return ws
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	if err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
}

// newLayer returns a fresh step layer, as package overlay makes it: an
// empty upper and work directory side by side, root's, mode 0700.
func newLayer(t *testing.T) *sandbox.Overlay {
	t.Helper()
	step := t.TempDir()
	ov := &sandbox.Overlay{Upper: filepath.Join(step, "upper"), Work: filepath.Join(step, "work")}
	for _, d := range []string{ov.Upper, ov.Work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return ov
}

// treeHash is a digest of everything under root: paths, kinds, modes,
// owners, contents, link targets.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v %d:%d", strings.TrimPrefix(p, root), fi.Mode(), st.Uid, st.Gid)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// mountsMentioning counts the host's mounts whose line in mountinfo names
// one of the paths: the idmapped layers show their source, the overlay
// IronVise's mount directory.
func mountsMentioning(t *testing.T, paths ...string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		for _, p := range append(paths, "ironvise-overlay-") {
			if p != "" && strings.Contains(line, p) {
				n++
				break
			}
		}
	}
	return n
}

// isWhiteout reports whether p is an overlayfs whiteout (a 0/0 character
// device).
func isWhiteout(t *testing.T, p string) bool {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fi.Mode()&fs.ModeCharDevice != 0 && st.Rdev == 0
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPodmanOverlayMode: a command writes, rewrites (sed -i), deletes and
// renames files and a directory in the workspace; its changes land in the
// upper layer, owned by the workspace's owner; the real workspace is
// untouched; nothing stays mounted. Writes outside the workspace, through a
// symlink out of it and to a protected path still fail. A second command,
// with the first layer below its own, sees the first's changes and leaves
// that layer alone.
func TestPodmanOverlayMode(t *testing.T) {
	needRoot(t)
	ws := overlayWorkspace(t)
	if err := os.Symlink("/etc", filepath.Join(ws, "etc-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, ".secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".secret", "key"), []byte("TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chownTree(t, ws, ownerUID, ownerGID)
	tier := newPodman(t, func(o *sandbox.Options) { o.Hidden = []string{filepath.Join(ws, ".secret")} })
	before := treeHash(t, ws)
	ov := newLayer(t)

	res := run(t, tier, sandbox.Request{Workspace: ws, Overlay: ov, Command: strings.Join([]string{
		`set -e`,
		`echo created > new.txt`,
		`sed -i 's/old/new/' fmt.txt`,
		`rm del.txt`,
		`mv ren.txt renamed.txt`,
		`mv dir dir2`,
		`mkdir -p build/out && echo artefact > build/out/a.o`,
		`cat fmt.txt keep.txt dir2/inner.txt`,
		`id -u`,
		// Still refused: the image, the host through a symlink, a
		// protected path (masked, read-only), moving the mask away.
		`if (echo x > /bin/planted) 2>/dev/null; then echo ROOT-WRITABLE; fi`,
		`if (echo x > etc-link/planted) 2>/dev/null; then echo ETC-WRITABLE; fi`,
		`if cat .secret/key 2>/dev/null | grep -q TOPSECRET; then echo SECRET-READ; fi`,
		`if (echo x > .secret/key) 2>/dev/null; then echo SECRET-WRITABLE; fi`,
		`if mv .secret moved 2>/dev/null; then echo SECRET-MOVED; fi`,
	}, "\n")})
	wantOK(t, res, 0)
	if res.Stdout != "new style\nkeep\ninner\n65534\n" {
		t.Fatalf("stdout %q; want the rewritten file, the kept ones, uid 65534 and no escape", res.Stdout)
	}
	if res.Enforced == nil || res.Enforced.Workspace != "overlay" {
		t.Fatalf("the result does not record the overlay: %+v", res.Enforced)
	}
	if after := treeHash(t, ws); after != before {
		t.Fatal("the real workspace changed in overlay mode")
	}
	if _, err := os.Stat("/etc/planted"); err == nil {
		os.Remove("/etc/planted")
		t.Fatal("the command wrote /etc through a symlink")
	}
	// The upper layer holds exactly the changes, the owner's on disk.
	up := ov.Upper
	for name, want := range map[string]string{"new.txt": "created\n", "fmt.txt": "new style\n", "renamed.txt": "rename me\n", "build/out/a.o": "artefact\n", "dir2/inner.txt": "inner\n"} {
		if got := readFile(t, filepath.Join(up, name)); got != want {
			t.Fatalf("upper %s = %q; want %q", name, got, want)
		}
		fi, _ := os.Lstat(filepath.Join(up, name))
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != ownerUID || st.Gid != ownerGID {
			t.Fatalf("upper %s is %d:%d; want the workspace owner's %d:%d", name, st.Uid, st.Gid, ownerUID, ownerGID)
		}
	}
	for _, gone := range []string{"del.txt", "ren.txt", "dir"} {
		if !isWhiteout(t, filepath.Join(up, gone)) {
			t.Fatalf("upper %s is not a whiteout", gone)
		}
	}
	if _, err := os.Lstat(filepath.Join(up, "keep.txt")); err == nil {
		t.Fatal("an unchanged file was copied up")
	}
	if _, err := os.Lstat(filepath.Join(up, ".secret")); err == nil {
		t.Fatal("the protected path reached the upper layer")
	}
	if n := mountsMentioning(t, ws, filepath.Dir(up)); n != 0 {
		t.Fatalf("%d mounts left after the run", n)
	}

	// Step two, on top of step one.
	layer1 := treeHash(t, up)
	ov2 := newLayer(t)
	ov2.Layers = []string{up}
	res = run(t, tier, sandbox.Request{Workspace: ws, Overlay: ov2, Command: `cat new.txt fmt.txt; test ! -e del.txt && test ! -e dir && echo gone; echo again >> new.txt; rm renamed.txt`})
	wantOK(t, res, 0)
	if res.Stdout != "created\nnew style\ngone\n" {
		t.Fatalf("second step stdout %q; want the first step's changes", res.Stdout)
	}
	if got := readFile(t, filepath.Join(ov2.Upper, "new.txt")); got != "created\nagain\n" {
		t.Fatalf("second upper new.txt = %q", got)
	}
	if !isWhiteout(t, filepath.Join(ov2.Upper, "renamed.txt")) {
		t.Fatal("the second step's deletion of a first-step file is not a whiteout in its own layer")
	}
	if treeHash(t, up) != layer1 {
		t.Fatal("the second step changed the first step's layer")
	}
	if treeHash(t, ws) != before {
		t.Fatal("the real workspace changed in the second step")
	}
	if n := mountsMentioning(t, ws, filepath.Dir(up), filepath.Dir(ov2.Upper)); n != 0 {
		t.Fatalf("%d mounts left after the second run", n)
	}
}

// TestPodmanOverlayModeLeavesReadOnlyAlone: without an overlay the
// workspace stays read-only, as before.
func TestPodmanOverlayModeLeavesReadOnlyAlone(t *testing.T) {
	ws := overlayWorkspace(t)
	res := run(t, newPodman(t), sandbox.Request{Workspace: ws, Command: `if (echo x > keep.txt) 2>/dev/null; then echo WRITABLE; fi`})
	wantOK(t, res, 0)
	if res.Stdout != "" {
		t.Fatalf("stdout %q: the workspace is writable without overlay mode", res.Stdout)
	}
	if res.Enforced == nil || res.Enforced.Workspace != "" {
		t.Fatalf("a read-only run records workspace %q", res.Enforced.Workspace)
	}
}

// TestPodmanOverlayModeTimeoutAndCancelUnmount: a run cut off by its
// timeout or by cancellation leaves no mount behind, and the real
// workspace untouched.
func TestPodmanOverlayModeTimeoutAndCancelUnmount(t *testing.T) {
	needRoot(t)
	tier := newPodman(t)
	t.Run("timeout", func(t *testing.T) {
		ws := overlayWorkspace(t)
		before := treeHash(t, ws)
		ov := newLayer(t)
		res := tier.Run(context.Background(), sandbox.Request{Workspace: ws, Overlay: ov, Timeout: 3 * time.Second, Command: `echo x > written.txt; sleep 60`})
		if res.Status != sandbox.StatusTimeout {
			t.Fatalf("got %s; want timeout", res.Headline())
		}
		// The command ran in overlay mode until it was cut off.
		if got := readFile(t, filepath.Join(ov.Upper, "written.txt")); got != "x\n" {
			t.Fatalf("upper written.txt = %q", got)
		}
		if n := mountsMentioning(t, ws, filepath.Dir(ov.Upper)); n != 0 {
			t.Fatalf("%d mounts left after the timeout", n)
		}
		if treeHash(t, ws) != before {
			t.Fatal("the real workspace changed")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ws := overlayWorkspace(t)
		before := treeHash(t, ws)
		ov := newLayer(t)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			// Cancel once the command has written its file, i.e. runs.
			for i := 0; i < 600; i++ {
				if _, err := os.Stat(filepath.Join(ov.Upper, "written.txt")); err == nil {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			cancel()
		}()
		res := tier.Run(ctx, sandbox.Request{Workspace: ws, Overlay: ov, Command: `echo x > written.txt; sleep 60`})
		cancel()
		if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "run cancelled") {
			t.Fatalf("got %s; want aborted, cancelled", res.Headline())
		}
		if n := mountsMentioning(t, ws, filepath.Dir(ov.Upper)); n != 0 {
			t.Fatalf("%d mounts left after the cancellation", n)
		}
		if treeHash(t, ws) != before {
			t.Fatal("the real workspace changed")
		}
	})
}

// TestPodmanOverlayModeRunsAreSeparate: two overlay runs on one workspace
// at once each see their own changes only, and each lands in its own
// upper layer.
func TestPodmanOverlayModeRunsAreSeparate(t *testing.T) {
	needRoot(t)
	tier := newPodman(t)
	ws := overlayWorkspace(t)
	before := treeHash(t, ws)
	ovs := []*sandbox.Overlay{newLayer(t), newLayer(t)}
	results := make([]sandbox.Result, 2)
	var wg sync.WaitGroup
	for i := range ovs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me, other := fmt.Sprint(i), fmt.Sprint(1-i)
			// Each waits (bounded) for the other to have written its
			// marker in the other's view, then checks it sees none.
			cmd := fmt.Sprintf(`echo %[1]s > mark-%[1]s; echo run-%[1]s > keep.txt; sleep 3; test -e mark-%[2]s && echo SEES-OTHER; cat keep.txt`, me, other)
			results[i] = tier.Run(context.Background(), sandbox.Request{Workspace: ws, Overlay: ovs[i], Command: cmd})
		}()
	}
	wg.Wait()
	for i, res := range results {
		wantOK(t, res, 0)
		if want := fmt.Sprintf("run-%d\n", i); res.Stdout != want {
			t.Fatalf("run %d stdout %q; want %q", i, res.Stdout, want)
		}
		if got := readFile(t, filepath.Join(ovs[i].Upper, "keep.txt")); got != fmt.Sprintf("run-%d\n", i) {
			t.Fatalf("run %d upper keep.txt = %q", i, got)
		}
		if _, err := os.Lstat(filepath.Join(ovs[i].Upper, fmt.Sprintf("mark-%d", 1-i))); err == nil {
			t.Fatalf("run %d's layer holds the other run's file", i)
		}
	}
	if treeHash(t, ws) != before {
		t.Fatal("the real workspace changed")
	}
	if n := mountsMentioning(t, ws); n != 0 {
		t.Fatalf("%d mounts left", n)
	}
}

// TestPodmanOverlayModeAborts: a stack that cannot be mounted aborts the
// run before any container exists; the command does not run and the real
// workspace is untouched.
func TestPodmanOverlayModeAborts(t *testing.T) {
	needRoot(t)
	tier := newPodman(t)
	for _, tc := range []struct {
		name string
		prep func(t *testing.T, ws string, ov *sandbox.Overlay)
		want string
	}{
		{"root's workspace", func(t *testing.T, ws string, _ *sandbox.Overlay) { chownTree(t, ws, 0, 0) }, "belongs to root"},
		{"upper not empty", func(t *testing.T, _ string, ov *sandbox.Overlay) {
			if err := os.WriteFile(filepath.Join(ov.Upper, "stale"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is not empty"},
		{"work missing", func(t *testing.T, _ string, ov *sandbox.Overlay) { os.Remove(ov.Work) }, "no such file"},
		{"upper not set", func(_ *testing.T, _ string, ov *sandbox.Overlay) { ov.Upper = "" }, "not set"},
		{"upper in the workspace", func(t *testing.T, ws string, ov *sandbox.Overlay) {
			ov.Upper, ov.Work = filepath.Join(ws, "upper"), filepath.Join(ws, "work")
			for _, d := range []string{ov.Upper, ov.Work} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}, "overlaps the workspace"},
		{"workspace as a layer", func(_ *testing.T, ws string, ov *sandbox.Overlay) { ov.Layers = []string{ws} }, "overlaps the workspace"},
		{"upper and work apart", func(t *testing.T, _ string, ov *sandbox.Overlay) {
			ov.Work = filepath.Join(t.TempDir(), "work")
			if err := os.Mkdir(ov.Work, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not siblings"},
		{"symlinked layer", func(t *testing.T, _ string, ov *sandbox.Overlay) {
			l := filepath.Join(t.TempDir(), "layer")
			if err := os.Symlink("/etc", l); err != nil {
				t.Fatal(err)
			}
			ov.Layers = []string{l}
		}, "not a directory"},
		{"upper in the workspace through a symlinked parent", func(t *testing.T, ws string, ov *sandbox.Overlay) {
			if err := os.Mkdir(filepath.Join(ws, "step"), 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(t.TempDir(), "data")
			if err := os.Symlink(filepath.Join(ws, "step"), link); err != nil {
				t.Fatal(err)
			}
			ov.Upper, ov.Work = filepath.Join(link, "upper"), filepath.Join(link, "work")
			for _, d := range []string{ov.Upper, ov.Work} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}, "overlaps the workspace"},
		{"too many layers", func(t *testing.T, _ string, ov *sandbox.Overlay) {
			base := t.TempDir()
			for i := range 100 {
				l := filepath.Join(base, fmt.Sprint(i))
				if err := os.Mkdir(l, 0o700); err != nil {
					t.Fatal(err)
				}
				ov.Layers = append(ov.Layers, l)
			}
		}, "does not fit"},
		{"read-only fallback", func(t *testing.T, _ string, ov *sandbox.Overlay) {
			// A work directory of an id the idmap leaves unmapped: root
			// may not write it through the idmapped mount, and overlayfs
			// falls back to a read-only mount.
			if err := os.Chown(ov.Work, 4242, 4242); err != nil {
				t.Fatal(err)
			}
		}, "mounted read-only"},
		{"upper on overlayfs", func(t *testing.T, _ string, ov *sandbox.Overlay) {
			// The layer directories live on an overlayfs, which can be
			// neither idmapped nor an upper layer: the mount fails.
			base := t.TempDir()
			for _, d := range []string{"l", "u", "w", "m"} {
				if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			m := filepath.Join(base, "m")
			if err := syscall.Mount("overlay", m, "overlay", 0, "lowerdir="+base+"/l,upperdir="+base+"/u,workdir="+base+"/w"); err != nil {
				t.Skipf("cannot mount an overlay for the test: %v", err)
			}
			t.Cleanup(func() { syscall.Unmount(m, syscall.MNT_DETACH) })
			ov.Upper, ov.Work = filepath.Join(m, "upper"), filepath.Join(m, "work")
			for _, d := range []string{ov.Upper, ov.Work} {
				if err := os.Mkdir(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
		}, "idmap the mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := overlayWorkspace(t)
			ov := newLayer(t)
			tc.prep(t, ws, ov)
			before, mounts := treeHash(t, ws), mountsMentioning(t, ws, filepath.Dir(ov.Upper))
			res := tier.Run(context.Background(), sandbox.Request{Workspace: ws, Overlay: ov, Command: "echo ran > keep.txt; echo RAN"})
			if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, tc.want) || !strings.Contains(res.Reason, "fix") {
				t.Fatalf("got %s: %s; want aborted with %q and a fix", res.Status, res.Reason, tc.want)
			}
			if res.ExitCode != nil || res.Enforced != nil || strings.Contains(res.Stdout, "RAN") {
				t.Fatalf("the command ran: %+v", res)
			}
			if treeHash(t, ws) != before {
				t.Fatal("the real workspace changed")
			}
			if n := mountsMentioning(t, ws, filepath.Dir(ov.Upper)); n != mounts {
				t.Fatalf("%d mounts left", n-mounts)
			}
		})
	}
}
