package action

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

func TestReadFile(t *testing.T) {
	ws := tempWS(t)
	os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
	os.WriteFile(filepath.Join(ws, "sub", "x.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(ws, "big.log"), make([]byte, MaxCollect+10), 0o644)
	os.Symlink("sub", filepath.Join(ws, "inside"))
	os.Symlink("/etc/hosts", filepath.Join(ws, "out"))
	if err := syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tw := newTW(t, ws, "")

	out, v, err := ReadFile(tw, "inside/x.txt")
	if err != nil || v != nil || string(out.Data) != "hello" || out.Total != 5 {
		t.Fatalf("read via inner symlink: %q %v %v", out.Data, v, err)
	}
	out, _, err = ReadFile(tw, "big.log")
	if err != nil || len(out.Data) != MaxCollect || out.Total != MaxCollect+10 {
		t.Fatalf("big file: kept %d total %d err %v", len(out.Data), out.Total, err)
	}
	_, v, _ = ReadFile(tw, "out")
	if v == nil || v.Code != verdict.PathOutsideRoots || v.Phase != verdict.PhaseExecute {
		t.Fatalf("symlink out: %+v", v)
	}
	if _, _, err = ReadFile(tw, "fifo"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("fifo: %v", err)
	}
	if _, _, err = ReadFile(tw, "sub"); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("directory: %v", err)
	}
	if _, _, err = ReadFile(tw, "missing.txt"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	// A symlink that appears after the check is refused by openat2: the
	// resolved path must contain none.
	if _, err := openBeneath(ws, "inside/x.txt"); err == nil {
		t.Fatal("openBeneath followed a symlink")
	}
	if _, err := openBeneath(ws, "../etc/hosts"); err == nil {
		t.Fatal("openBeneath left the root")
	}
}

func TestReadFileRefusesProtected(t *testing.T) {
	home := tempWS(t)
	ws := filepath.Join(home, "project")
	for _, d := range []string{ws, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	netrc := filepath.Join(home, ".netrc")
	key := filepath.Join(home, ".ssh", "id_ed25519")
	for _, f := range []string{netrc, key, filepath.Join(ws, "notes.txt")} {
		if err := os.WriteFile(f, []byte("SECRET "+f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list := secretpaths.List{Homes: []string{home}, Paths: []string{netrc, filepath.Join(home, ".ssh")}}
	cfg, err := tripwire.LoadConfigBytes([]byte(`{"allowed_roots":["`+home+`"]}`), tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	tw := tripwire.New(cfg, tripwire.Options{Workspace: ws, Protected: list})

	// By name, at execution time: the same code as the check, in the
	// execute phase.
	for _, p := range []string{key, netrc, filepath.Join(home, ".ssh")} {
		out, v, err := ReadFile(tw, p)
		if v == nil || v.Code != verdict.PathProtected || v.Phase != verdict.PhaseExecute || len(out.Data) != 0 {
			t.Fatalf("ReadFile(%s): verdict %+v, err %v, %d bytes; want an execute-phase path_protected denial", p, v, err, len(out.Data))
		}
	}
	// A symlink swapped in after the check is followed by the re-check.
	if err := os.Symlink(key, filepath.Join(ws, "swapped")); err != nil {
		t.Fatal(err)
	}
	if _, v, _ := ReadFile(tw, "swapped"); v == nil || v.Code != verdict.PathProtected {
		t.Fatalf("swapped symlink: %+v; want path_protected", v)
	}
	// A hard link is another name for the same file: refused by identity.
	if err := os.Link(netrc, filepath.Join(ws, "innocent.txt")); err != nil {
		t.Fatal(err)
	}
	out, v, err := ReadFile(tw, "innocent.txt")
	if v == nil || v.Code != verdict.PathProtected || strings.Contains(string(out.Data), "SECRET") {
		t.Fatalf("hard link: verdict %+v, err %v, data %q; want path_protected and no data", v, err, out.Data)
	}
	// Other files read as before.
	if out, v, err := ReadFile(tw, "notes.txt"); v != nil || err != nil || !strings.HasPrefix(string(out.Data), "SECRET ") {
		t.Fatalf("plain file: %q %+v %v", out.Data, v, err)
	}
}
