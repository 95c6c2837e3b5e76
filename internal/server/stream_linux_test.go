//go:build linux

package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSlowClientDropped: a client that stops reading is dropped and counted,
// and appends do not wait for it.
func TestSlowClientDropped(t *testing.T) {
	opts, _, _ := newOptions(t, tsOptions{})
	opts.StreamWriteTimeout = time.Second
	ts := startOpts(t, opts)
	defer ts.Shutdown(context.Background())
	id := ts.createSession(map[string]any{"goal": "flood", "agent_loop": false})

	// A client with a tiny receive window that reads the headers and then
	// nothing at all.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", ts.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/stream?after=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", adminTok)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v", err)
	}
	healthy := ts.openStream("/api/stream?session_id="+id, adminTok)

	big := strings.Repeat("x", 256<<10)
	var worst time.Duration
	for i := 0; i < 40; i++ {
		start := time.Now()
		r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "observation", "content": big})
		if r.status != 201 {
			t.Fatalf("append %d: %d", i, r.status)
		}
		worst = max(worst, time.Since(start))
	}
	if worst > time.Second {
		t.Errorf("an append took %v while a client was stuck", worst)
	}
	got := 0
	for _, f := range collect(t, healthy, time.Second) {
		if f.event == "event" && strings.Contains(f.data, big[:100]) {
			got++
		} else {
			t.Logf("frame %.200q", f.raw)
		}
	}
	if got != 40 {
		t.Errorf("the healthy client got %d of 40 events", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	re := regexp.MustCompile(`(?m)^ironvise_sse_dropped_total (\d+)`)
	for {
		m := re.FindStringSubmatch(string(ts.call("GET", "/metrics", adminTok, nil).body))
		if len(m) == 2 && m[1] != "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stuck client was not dropped: %v", m)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("slowest append while a client was stuck: %v", worst)
}
