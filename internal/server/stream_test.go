package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// frameShape checks the framing of docs/design/api.md#sse on one event frame.
func frameShape(t *testing.T, f sseFrame) map[string]any {
	t.Helper()
	if strings.Contains(f.raw, "\r") {
		t.Fatalf("CR in frame %q", f.raw)
	}
	if !strings.HasSuffix(f.raw, "\n\n") || strings.Count(f.raw, "\n") != 4 {
		t.Fatalf("frame %q: want exactly three lines and a blank line", f.raw)
	}
	if f.event != "event" || f.id == "" {
		t.Fatalf("frame %q: event name %q, id %q", f.raw, f.event, f.id)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(f.data), &m); err != nil {
		t.Fatalf("data %q: %v", f.data, err)
	}
	if m["id"] != mustFloat(f.id) || m["sequence"] == nil || m["payload"] == nil {
		t.Fatalf("data %v does not carry id %s, sequence and payload", m, f.id)
	}
	if _, ok := m["redacted"].(bool); !ok {
		t.Fatalf("data %v without redacted", m)
	}
	return m
}

func mustFloat(s string) float64 {
	n, _ := strconv.ParseFloat(s, 64)
	return n
}

// collect reads frames until none arrives for quiet.
func collect(t *testing.T, c *sseClient, quiet time.Duration) []sseFrame {
	t.Helper()
	var out []sseFrame
	for {
		f, ok := c.next(t, quiet)
		if !ok {
			return out
		}
		out = append(out, f)
	}
}

// TestStreamChecklist covers checklist items 24–26 and 28 and the cursor
// rules of docs/design/api.md#sse.
func TestStreamChecklist(t *testing.T) {
	ts := startServer(t, tsOptions{})
	a := ts.createSession(map[string]any{"goal": "first", "agent_loop": false})
	b := ts.createSession(map[string]any{"goal": "second", "agent_loop": false})
	for i := 0; i < 3; i++ {
		ts.call("POST", "/api/sessions/"+a+"/events", adminTok, map[string]any{"type": "thought", "content": fmt.Sprint("a", i)})
		ts.call("POST", "/api/sessions/"+b+"/events", adminTok, map[string]any{"type": "thought", "content": fmt.Sprint("b", i)})
	}

	t.Run("24 headers at once and framing", func(t *testing.T) {
		start := time.Now()
		c := ts.openStream("/api/stream", adminTok)
		if d := time.Since(start); d > time.Second {
			t.Errorf("headers after %v", d)
		}
		if ct := c.res.Header.Get("Content-Type"); ct != "text/event-stream" || c.res.Header.Get("Cache-Control") != "no-cache" || c.res.Header.Get("X-Accel-Buffering") != "no" {
			t.Errorf("headers %v", c.res.Header)
		}
		frames := collect(t, c, 500*time.Millisecond)
		if len(frames) < 10 {
			t.Fatalf("%d frames", len(frames))
		}
		last := 0.0
		for _, f := range frames {
			m := frameShape(t, f)
			if id := m["id"].(float64); id <= last {
				t.Errorf("ids out of order: %v after %v", id, last)
			} else {
				last = id
			}
		}
		if f := frames[0]; frameShape(t, f)["session_id"] != nil {
			t.Errorf("the first event (instance genesis) has a session id: %s", f.data)
		}
	})
	t.Run("25 cursors", func(t *testing.T) {
		for _, q := range []string{"?after=0", "?since=0", "?after=-5"} {
			c := ts.openStream("/api/stream"+q, adminTok)
			if f, ok := c.next(t, 5*time.Second); !ok || f.id != "1" {
				t.Errorf("%s: first frame %+v", q, f)
			}
		}
		c := ts.openStream("/api/stream?after=9999999999", adminTok)
		if c.res.StatusCode != 200 {
			t.Fatalf("far cursor: %d", c.res.StatusCode)
		}
		if f, ok := c.next(t, 700*time.Millisecond); ok {
			t.Errorf("far cursor delivered %q", f.raw)
		}
		// since wins over after, after over Last-Event-ID.
		c = ts.openStream("/api/stream?since=5&after=1", adminTok, "Last-Event-ID", "2")
		if f, _ := c.next(t, 2*time.Second); f.id != "6" {
			t.Errorf("since=5: first id %s", f.id)
		}
		c = ts.openStream("/api/stream?after=3", adminTok, "Last-Event-ID", "7")
		if f, _ := c.next(t, 2*time.Second); f.id != "4" {
			t.Errorf("after=3: first id %s", f.id)
		}
		c = ts.openStream("/api/stream", adminTok, "Last-Event-ID", "7")
		if f, _ := c.next(t, 2*time.Second); f.id != "8" {
			t.Errorf("Last-Event-ID 7: first id %s", f.id)
		}
		c = ts.openStream("/api/stream?session_id="+a+"&after=0", adminTok)
		for _, f := range collect(t, c, 500*time.Millisecond) {
			if frameShape(t, f)["session_id"] != a {
				t.Errorf("foreign event on a session stream: %s", f.data)
			}
		}
		for _, q := range []string{"?session_id=not-a-uuid", "?after=abc", "?since=1.5"} {
			if r := ts.call("GET", "/api/stream"+q, adminTok, nil); r.status != 400 {
				t.Errorf("%s: %d", q, r.status)
			}
		}
		ts.wantStatus(t, "unknown session", 404, "GET", "/api/stream?session_id="+someID, adminTok, nil)
		ts.wantStatus(t, "unknown session route 16", 404, "GET", "/api/sessions/"+someID+"/events/stream", adminTok, nil)
	})
	t.Run("26 simultaneous clients see identical ids", func(t *testing.T) {
		var clients []*sseClient
		for i := 0; i < 5; i++ {
			clients = append(clients, ts.openStream("/api/stream?after=0", adminTok))
		}
		// Events committed during the replay are delivered once too.
		for i := 0; i < 20; i++ {
			ts.call("POST", "/api/sessions/"+a+"/events", adminTok, map[string]any{"type": "thought", "content": fmt.Sprint("live", i)})
		}
		var sets []string
		for _, c := range clients {
			var ids []string
			seen := map[string]bool{}
			for _, f := range collect(t, c, 700*time.Millisecond) {
				if seen[f.id] {
					t.Errorf("id %s sent twice", f.id)
				}
				seen[f.id] = true
				ids = append(ids, f.id)
			}
			sets = append(sets, strings.Join(ids, ","))
		}
		for i := 1; i < len(sets); i++ {
			if sets[i] != sets[0] {
				t.Errorf("client %d saw %s; client 0 saw %s", i, sets[i], sets[0])
			}
		}
	})
	t.Run("28 per-session stream as the Python SDK reads it", func(t *testing.T) {
		c := ts.openStream("/api/sessions/"+b+"/events/stream", adminTok)
		var got []map[string]any
		for _, f := range collect(t, c, 500*time.Millisecond) {
			// The SDK splits on blank lines and json.loads every data: line.
			for _, line := range strings.Split(f.raw, "\n") {
				if strings.HasPrefix(line, "data:") {
					var d map[string]any
					if err := json.Unmarshal([]byte(strings.TrimSpace(line[5:])), &d); err != nil {
						t.Fatalf("data line %q: %v", line, err)
					}
					got = append(got, d)
				}
			}
		}
		if len(got) != 6 {
			t.Fatalf("%d events; want genesis, prompt_input, the prompt scan and three thoughts... got %v", len(got), got)
		}
		for i, d := range got {
			if d["session_id"] != b || int(d["sequence"].(float64)) != i {
				t.Errorf("event %d: %v", i, d)
			}
		}
	})
	t.Run("live events follow the replay", func(t *testing.T) {
		c := ts.openStream("/api/sessions/"+a+"/events/stream", adminTok)
		collect(t, c, 300*time.Millisecond)
		r := ts.call("POST", "/api/sessions/"+a+"/events", adminTok, map[string]any{"type": "thought", "content": "fresh"})
		want := strconv.Itoa(int(r.json(t)["id"].(float64)))
		start := time.Now()
		f, ok := c.next(t, time.Second)
		if !ok || f.id != want {
			t.Fatalf("live frame %+v; want id %s", f, want)
		}
		t.Logf("live event reached the stream %v after its append returned", time.Since(start))
	})
}

// TestKeepAlive: a keep-alive comment only after SSE_KEEPALIVE_SECS of
// silence, and never sooner (docs/design/api.md#sse, checklist item 27).
func TestKeepAlive(t *testing.T) {
	for _, secs := range []int{2, 10} {
		t.Run(strconv.Itoa(secs)+"s", func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tsOptions{env: map[string]string{"SSE_KEEPALIVE_SECS": strconv.Itoa(secs)}})
			id := ts.createSession(map[string]any{"goal": "quiet", "agent_loop": false})
			time.Sleep(time.Second) // let the after-append checkpoint pass
			// The server's silence starts when it takes the request, which
			// is after this instant and before openStream returns: the
			// first bounds "never sooner" exactly (a busy machine once
			// returned from openStream 0.13 s after the server began to
			// count), the second "not much later".
			asked := time.Now()
			c := ts.openStream("/api/stream?after=9999999999", adminTok)
			opened := time.Now()
			interval := time.Duration(secs) * time.Second
			f, ok := c.next(t, interval+2*time.Second)
			if !ok || f.raw != ": keep-alive\n\n" {
				t.Fatalf("first frame %q", f.raw)
			}
			if d := f.at.Sub(asked); d < interval {
				t.Errorf("keep-alive %v after the stream was asked for; want no sooner than %v", d, interval)
			}
			if d := f.at.Sub(opened); d > interval+time.Second {
				t.Errorf("keep-alive after %v of silence; want %v (at most 1 s later)", d, interval)
			}
			if secs != 2 {
				return
			}
			// Traffic restarts the timer: the next keep-alive comes a full
			// interval after the last frame written.
			evs := ts.call("GET", "/api/events?session_id="+id, adminTok, nil).list(t)
			head := int(evs[len(evs)-1]["id"].(float64))
			c2 := ts.openStream("/api/stream?session_id="+id+"&after="+strconv.Itoa(head), adminTok)
			time.Sleep(interval / 2)
			// The event frame is written after this instant and read
			// before ev.at: the same two bounds as above.
			posted := time.Now()
			ts.call("POST", "/api/sessions/"+id+"/events", adminTok, map[string]any{"type": "thought", "content": "tick"})
			ev, ok := c2.next(t, time.Second)
			if !ok || ev.event != "event" {
				t.Fatalf("event frame %q", ev.raw)
			}
			ka, ok := c2.next(t, interval+2*time.Second)
			if !ok || ka.raw != ": keep-alive\n\n" {
				t.Fatalf("keep-alive %q", ka.raw)
			}
			if d := ka.at.Sub(posted); d < interval {
				t.Errorf("keep-alive %v after the event was posted; want no sooner than %v", d, interval)
			}
			if d := ka.at.Sub(ev.at); d > interval+time.Second {
				t.Errorf("keep-alive %v after the last event frame; want %v (at most 1 s later)", d, interval)
			}
		})
	}
}

// TestStreamRedaction: no secret, long path or address reaches a stream,
// while the stored payload (GET /api/events) stays byte for byte.
func TestStreamRedaction(t *testing.T) {
	ts := startServer(t, tsOptions{})
	id := ts.createSession(map[string]any{"goal": "redact", "agent_loop": false})
	secrets := []string{"hunter2", "abc123tok", "sk-live-9999", "AKIAIOSFODNN7EXAMPLE", "/home/alice/projects/secret-service/config/database.yml", "10.20.30.40", "fe80::1ff:fe23:4567:890a"}
	body := map[string]any{"type": "action", "name": "deploy", "params": map[string]any{
		"note":     "password=hunter2 and token: abc123tok read /home/alice/projects/secret-service/config/database.yml from 10.20.30.40 or fe80::1ff:fe23:4567:890a at 10:00:00",
		"api_key":  "sk-live-9999",
		"nested":   map[string]any{"AWS_Access_Key_ID": "AKIAIOSFODNN7EXAMPLE", "count": 3},
		"Bearer":   []any{"x"},
		"harmless": "short /tmp/x path",
	}}
	r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, body)
	if r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	c := ts.openStream("/api/sessions/"+id+"/events/stream", auditorTok)
	var last sseFrame
	for _, f := range collect(t, c, 500*time.Millisecond) {
		last = f
	}
	for _, s := range secrets {
		if strings.Contains(last.raw, s) {
			t.Errorf("stream carries %q: %s", s, last.data)
		}
	}
	m := frameShape(t, last)
	p := m["payload"].(map[string]any)["params"].(map[string]any)
	if m["redacted"] != true || p["api_key"] != "[REDACTED]" || p["Bearer"] != "[REDACTED]" {
		t.Errorf("redaction: %v", m)
	}
	note := p["note"].(string)
	for _, want := range []string{"password=[REDACTED]", "token: [REDACTED]", "[REDACTED_PATH]", "[REDACTED_IP]", "at 10:00:00"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if p["harmless"] != "short /tmp/x path" || p["nested"].(map[string]any)["count"] != float64(3) {
		t.Errorf("harmless values changed: %v", p)
	}
	if m["content_hash"] == nil || m["sequence"] == nil {
		t.Error("ids and hashes must stay")
	}
	stored := ts.call("GET", "/api/events?session_id="+id, adminTok, nil)
	if !strings.Contains(string(stored.body), "hunter2") {
		t.Error("the stored payload must be returned as stored")
	}
}
