package localsock

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/execclient"
)

func TestListenModesStaleAndLive(t *testing.T) {
	data := t.TempDir()
	path := Path(data)
	os.MkdirAll(filepath.Dir(path), 0o755)
	// A socket a crashed daemon left behind: nothing listens on it.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()

	l, err := Listen(data)
	if err != nil {
		t.Fatalf("the stale socket was not replaced: %v", err)
	}
	go l.Serve(context.Background(), func(_ context.Context, req *Request) *Response {
		return &Response{Stdout: []byte(req.Command), Code: 7}
	})
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 || st.Mode().Type() != os.ModeSocket {
		t.Fatalf("socket mode %v", st.Mode())
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Fatalf("run dir mode %v", st.Mode())
	}
	// A live socket is never replaced.
	if _, err := Listen(data); err == nil || !strings.Contains(err.Error(), "answers") {
		t.Fatalf("second Listen: %v", err)
	}
	conn, err := execclient.Dial(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code, msg := execclient.Exchange(context.Background(), conn, &Request{Command: "echo hi", Workspace: "/w"}, &out, &errb)
	conn.Close()
	if msg != nil || code != 7 || out.String() != "echo hi" {
		t.Fatalf("call: %d %q %v", code, out.String(), msg)
	}
	l.Close()
	if _, err := os.Lstat(path); err == nil {
		t.Fatal("Close left the socket")
	}
}

func TestListenRefusesNonSocket(t *testing.T) {
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "run"), 0o700)
	os.WriteFile(Path(data), []byte("x"), 0o600)
	if _, err := Listen(data); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a file: %v", err)
	}
}

func TestReadMessageStrictAndCapped(t *testing.T) {
	var buf bytes.Buffer
	WriteMessage(&buf, map[string]any{"command": "x", "extra": 1})
	if err := ReadMessage(&buf, MaxRequest, new(Request)); err == nil {
		t.Fatal("an unknown member was accepted")
	}
	buf.Reset()
	WriteMessage(&buf, &Request{Command: strings.Repeat("a", 100)})
	if err := ReadMessage(&buf, 50, new(Request)); err == nil {
		t.Fatal("a message above the cap was read")
	}
}
