package execclient

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/localsock/wire"
)

// fakeDaemon listens on dataDir's socket and hands each connection to
// serve.
func fakeDaemon(t *testing.T, serve func(c *net.UnixConn)) string {
	t.Helper()
	data := t.TempDir()
	os.MkdirAll(filepath.Dir(wire.Path(data)), 0o700)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: wire.Path(data), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return data
}

func exchange(t *testing.T, ctx context.Context, data string) (int, string, string, string) {
	t.Helper()
	conn, err := Dial(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out, errb bytes.Buffer
	req := &wire.Request{Command: "echo hi", Workspace: "/w", Justification: "why", Env: []string{"LANG=C"}}
	code, msg := Exchange(ctx, conn, req, &out, &errb)
	m := ""
	if msg != nil {
		m = msg.Error()
	}
	return code, out.String(), errb.String(), m
}

func TestExchangeAnswer(t *testing.T) {
	got := make(chan localsock.Request, 1)
	data := fakeDaemon(t, func(c *net.UnixConn) {
		var req localsock.Request
		if err := localsock.ReadMessage(c, localsock.MaxRequest, &req); err != nil {
			t.Error(err)
		}
		got <- req
		localsock.WriteMessage(c, &localsock.Response{Stdout: []byte("out\x00\xff"), Stderr: []byte("err\n"), Code: 3, Error: "daemon says <no>"})
	})
	code, out, errOut, msg := exchange(t, context.Background(), data)
	if code != 3 || out != "out\x00\xff" || errOut != "err\n" || msg != "daemon says <no>" {
		t.Fatalf("exchange: %d %q %q %q", code, out, errOut, msg)
	}
	if req := <-got; req.Command != "echo hi" || req.Justification != "why" || len(req.Env) != 1 {
		t.Fatalf("the daemon read %+v", req)
	}
}

// TestExchangeRefused: a daemon that answers without reading (a refused
// peer) is heard even when the request cannot be written.
func TestExchangeRefused(t *testing.T) {
	data := fakeDaemon(t, func(c *net.UnixConn) {
		localsock.WriteMessage(c, &localsock.Response{Code: 2, Error: "refused this connection", NotStarted: true})
		c.CloseWrite()
	})
	code, _, _, msg := exchange(t, context.Background(), data)
	if code != ExitUsage || msg != "refused this connection" {
		t.Fatalf("exchange: %d %q", code, msg)
	}
}

// TestExchangeHangUpIsAborted: a daemon that takes the request and goes
// away is exec's aborted exit, never a second run.
func TestExchangeHangUpIsAborted(t *testing.T) {
	for name, serve := range map[string]func(c *net.UnixConn){
		"closed": func(c *net.UnixConn) {
			var req localsock.Request
			localsock.ReadMessage(c, localsock.MaxRequest, &req)
		},
		"truncated": func(c *net.UnixConn) {
			var req localsock.Request
			localsock.ReadMessage(c, localsock.MaxRequest, &req)
			c.Write([]byte{0, 0, 1, 0, '{'})
		},
		"garbage": func(c *net.UnixConn) {
			var req localsock.Request
			localsock.ReadMessage(c, localsock.MaxRequest, &req)
			c.Write([]byte{0, 0, 0, 2, '[', ']'})
		},
		"oversized": func(c *net.UnixConn) {
			var req localsock.Request
			localsock.ReadMessage(c, localsock.MaxRequest, &req)
			c.Write([]byte{0xff, 0, 0, 0})
		},
	} {
		t.Run(name, func(t *testing.T) {
			data := fakeDaemon(t, serve)
			code, _, _, msg := exchange(t, context.Background(), data)
			if code != ExitAborted || !strings.HasPrefix(msg, "the daemon at "+wire.Path(data)+" failed mid-request (") ||
				!strings.HasSuffix(msg, "); the command may have run, so it is not run again (see 'ironvise sessions')") {
				t.Fatalf("exchange: %d %q", code, msg)
			}
		})
	}
}

// TestExchangeInterruptHangsUp: when ctx ends (Ctrl-C), the daemon sees
// the client hang up, and exec's exit is aborted.
func TestExchangeInterruptHangsUp(t *testing.T) {
	hungUp := make(chan bool, 1)
	read := make(chan bool, 1)
	data := fakeDaemon(t, func(c *net.UnixConn) {
		var req localsock.Request
		localsock.ReadMessage(c, localsock.MaxRequest, &req)
		read <- true
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		hungUp <- err == io.EOF
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-read
		cancel()
	}()
	code, _, _, msg := exchange(t, ctx, data)
	if code != ExitAborted || msg != "interrupted: context canceled; the daemon was told to stop the command" {
		t.Fatalf("exchange: %d %q", code, msg)
	}
	if !<-hungUp {
		t.Fatal("the daemon did not see the client hang up")
	}
}

// TestExchangeWaitContextAfterSend: the thin path sets up its Ctrl-C
// handling only once the request is sent (it costs a thread the runtime
// starts and waits for), so exchangeThen must ask for the context after
// the whole request is written, and the context it gets must still end the
// wait.
func TestExchangeWaitContextAfterSend(t *testing.T) {
	read := make(chan localsock.Request, 1)
	hungUp := make(chan struct{})
	data := fakeDaemon(t, func(c *net.UnixConn) {
		var req localsock.Request
		if err := localsock.ReadMessage(c, localsock.MaxRequest, &req); err != nil {
			t.Error(err)
		}
		read <- req
		// Never answers: only the client's hang-up ends this.
		c.Read(make([]byte, 1))
		close(hungUp)
	})
	conn, err := Dial(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req := &wire.Request{Command: "echo hi", Workspace: "/w", Justification: "why"}
	code, msg := exchangeThen(conn, req, io.Discard, io.Discard, func() context.Context {
		select {
		case got := <-read:
			if got.Command != "echo hi" || got.Justification != "why" {
				t.Errorf("the daemon read %+v", got)
			}
		case <-time.After(10 * time.Second):
			t.Error("the context was asked for before the daemon had the whole request")
		}
		time.AfterFunc(20*time.Millisecond, cancel)
		return ctx
	})
	if code != ExitAborted || msg == nil || !strings.HasPrefix(msg.Error(), "interrupted: context canceled") {
		t.Fatalf("exchange: %d %v", code, msg)
	}
	select {
	case <-hungUp:
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon never saw the hang-up")
	}
}
