//go:build linux

package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDiskFullNamesTheCause is issue 13 item 5 with a real full disk: the
// data directory (and its SQLite ledger) lives on a small tmpfs that the
// test fills. Appends, creates and seals are answered 507 naming the full
// ledger storage and the fix, a settings write 507 naming settings.json —
// not a generic 500, nor "database unavailable" — and everything works
// again once space is freed. It needs root to mount the tmpfs.
func TestDiskFullNamesTheCause(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := filepath.Join(t.TempDir(), "data")
	os.MkdirAll(dir, 0o700)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	ts := startServer(t, tsOptions{dataDir: dir, env: map[string]string{"DATABASE_URL": "<unset>"}})
	id := ts.createSession(map[string]any{"goal": "fill the disk", "agent_loop": false})
	toSeal := ts.createSession(map[string]any{"goal": "seal on a full disk", "agent_loop": false})

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	checks := []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"append", "POST", "/api/sessions/" + id + "/events", map[string]any{"type": "thought", "content": strings.Repeat("x", 64<<10)}, "ledger database"},
		{"create", "POST", "/api/sessions", map[string]any{"goal": strings.Repeat("y", 32<<10), "agent_loop": false}, "ledger database"},
		{"seal", "POST", "/api/sessions/" + toSeal + "/seal", nil, "ledger database"},
		{"settings", "PUT", "/api/config", map[string]any{"max_steps": 7}, "settings.json"},
	}
	for _, c := range checks {
		r := ts.call(c.method, c.path, adminTok, c.body)
		body := string(r.body)
		if r.status != 507 || !strings.Contains(body, c.want) || !strings.Contains(body, "free space") {
			t.Errorf("%s on a full disk: %d %s; want 507 naming %s and the fix", c.name, r.status, body, c.want)
		}
	}
	os.Remove(filler)
	if r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "thought", "content": "space again"}); r.status != 201 {
		t.Fatalf("append after freeing space: %d %s", r.status, r.body)
	}
	if r := ts.call("PUT", "/api/config", adminTok, map[string]any{"max_steps": 7}); r.status != 200 {
		t.Fatalf("settings after freeing space: %d %s", r.status, r.body)
	}
}
