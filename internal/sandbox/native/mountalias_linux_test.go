//go:build linux

package native

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/mounts/mountstest"
)

// TestHiddenPathThroughABindMount: a protected path, or one of the
// launcher's own masks, that a bind mount also shows under another name
// in the workspace is masked there too. It failed before the tier masked
// the other names: the command read the secrets through the bind mounts.
func TestHiddenPathThroughABindMount(t *testing.T) {
	for _, opts := range userOptions(t) {
		t.Run(optsName(opts), func(t *testing.T) {
			fx := newFixture(t)
			// The store lies outside every root the command may read;
			// a bind mount shows its home inside the workspace.
			netrc := filepath.Join(fx.home, ".netrc")
			writeFile(t, fx.home, ".netrc", "machine example.com password NETRC-"+fx.secretText+"\n")
			os.Chmod(netrc, 0o644)
			mountstest.Bind(t, fx.home, filepath.Join(fx.ws, "home"))
			mountstest.Bind(t, "/etc", filepath.Join(fx.ws, "etc"))
			opts.Hidden = []string{filepath.Join(fx.home, ".ssh"), netrc}
			tier := newTestTier(t, opts)
			shadow, _ := os.ReadFile("/etc/shadow")
			firstLine, _, _ := strings.Cut(string(shadow), "\n")
			for _, cmd := range []string{
				`cat home/.ssh/id_ed25519`, `cat home/.netrc`, `ls -la home/.ssh`,
				`grep -r -a -e PRIVATE -e NETRC- . 2>&1`,
				`cat etc/shadow`, `cat etc/gshadow`,
			} {
				r := run(t, tier, fx, cmd)
				noLeak(t, r, fx.secretText)
				if len(firstLine) > 8 {
					noLeak(t, r, firstLine)
				}
			}
			// The rest of what the mounts show is still there.
			r := run(t, tier, fx, `head -n 1 etc/passwd; ls -A home`)
			contains(t, r, "root:")
			contains(t, r, ".netrc")
			// The bind mount of /etc is no workspace, as /etc is not.
			r = tier.Run(context.Background(), sandbox.Request{Command: "true", Workspace: filepath.Join(fx.ws, "etc"), Timeout: time.Minute})
			if r.Status != sandbox.StatusAborted || !strings.Contains(r.Reason, "system directory /etc under another name") {
				t.Fatalf("a workspace that is /etc by a bind mount: %s %s", r.Status, r.Reason)
			}
		})
	}
}

// TestMasksListTheOtherNames: the tier's list for the launcher holds the
// names bind mounts give the protected paths, and only while the mounts
// are there.
func TestMasksListTheOtherNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make bind mounts")
	}
	fx := newFixture(t)
	store := filepath.Join(fx.home, ".ssh")
	tier := newTestTier(t, sandbox.Options{Hidden: []string{store}})
	alias := filepath.Join(fx.ws, "h")
	os.Mkdir(alias, 0o755)
	masks, err := tier.masks(fx.ws, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(masks, filepath.Join(alias, ".ssh")) {
		t.Fatalf("an alias before any mount: %q", masks)
	}
	if err := unix.Mount(fx.home, alias, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("bind mount: %v", err)
	}
	masks, err = tier.masks(fx.ws, nil)
	unix.Unmount(alias, unix.MNT_DETACH)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(masks, filepath.Join(alias, ".ssh")) {
		t.Fatalf("the bind mount's name for %s is not masked: %q", store, masks)
	}
	masks, _ = tier.masks(fx.ws, nil)
	if slices.Contains(masks, filepath.Join(alias, ".ssh")) {
		t.Fatalf("the alias outlived its mount: %q", masks)
	}
}
