package tripwire

import (
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// In overlay mode redirections into the workspace are allowed (they land
// in the session's layer); outside the workspace, into protected or
// sensitive files, they stay refused; and a script an earlier command of
// the session changed is unreviewed code, because the tripwire reads the
// real workspace while the command would run the overlay's version. In ro
// mode the same writes are refused (the first case fails there).
func TestOverlayMode(t *testing.T) {
	ws := workspace(t)
	ro := setup(t, ws, nil)
	changed := map[string]bool{filepath.Join(ws, "sub", "x.txt"): true}
	ov := ro.WithOverlay(func(p string) bool { return changed[p] })
	if ro.Overlay() || !ov.Overlay() {
		t.Fatal("Overlay() does not report the mode")
	}
	run(t, ro, []tcase{
		{"ro: redirect into workspace", rc("echo x > out.txt"), verdict.RedirectWriteDenied, "", nil},
		{"ro: workspace script", rc("sh sub/x.txt"), verdict.OK, "", []string{"script_file"}},
	})
	run(t, ov, []tcase{
		{"overlay: redirect into workspace", rc("echo x > out.txt"), verdict.OK, "", nil},
		{"overlay: append in a subdirectory", rc("echo x >> " + ws + "/sub/log.txt"), verdict.OK, "", nil},
		{"overlay: redirect outside", rc("echo x > /etc/passwd"), verdict.RedirectWriteDenied, "outside writable_roots", nil},
		{"overlay: sibling with a prefix name", rc("echo x > " + ws + "2/x"), verdict.RedirectWriteDenied, "", nil},
		{"overlay: git hook", rc("echo x > .git/hooks/pre-commit"), verdict.PathWriteSensitive, "", nil},
		{"overlay: ci pipeline", rc("echo x > .github/workflows/ci.yml"), verdict.PathWriteSensitive, "", nil},
		{"overlay: traversal out", rc("echo x > sub/../../x"), verdict.PathTraversal, "", nil},
		{"overlay: script the session changed", rc("sh sub/x.txt"), verdict.CmdDynamicProgram, "workspace overlay", nil},
		{"overlay: script it did not change", rc("sh notes.txt"), verdict.OK, "", []string{"script_file"}},
	})
}
