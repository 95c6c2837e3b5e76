package action

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

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
