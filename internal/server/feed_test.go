package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// TestFeedRendersFramesOnlyForStreams: with no stream open the feed keeps
// events unrendered; the first stream renders each frame once, byte for
// byte as SSEFrame renders the stored event.
func TestFeedRendersFramesOnlyForStreams(t *testing.T) {
	ts := startServer(t, tsOptions{})
	start := ts.feed.startIndex()
	id := ts.createSession(map[string]any{"goal": "lazy frames", "agent_loop": false})
	body := map[string]any{"type": "action", "name": "deploy", "params": map[string]any{"note": "password=hunter2 from 10.20.30.40"}}
	if r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, body); r.status != 201 {
		t.Fatalf("append: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	size, err := ts.ledger().LogSize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ts.feed.head() < size; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed did not reach index %d", size)
		}
	}
	ring := func() []*frame {
		frames, _, behind := ts.feed.since(start, int(size-start))
		if behind || int64(len(frames)) != size-start {
			t.Fatalf("ring holds %d frames from %d (behind %v); want %d", len(frames), start, behind, size-start)
		}
		return frames
	}
	for _, f := range ring() {
		f.once.Do(func() {}) // stands in for a render: it must be the first
		if f.ev == nil || f.sse != nil {
			t.Fatalf("frame %d was rendered with no stream open", f.index)
		}
	}
	// The Do above consumed the frames' once; build fresh ones from the
	// same events as the feed would and stream those.
	ts.feed.mu.Lock()
	for i := start; i < size; i++ {
		old := ts.feed.ring[i%ringSize]
		ts.feed.ring[i%ringSize] = newFrame(*old.ev)
	}
	ts.feed.mu.Unlock()

	c := ts.openStream("/api/stream?since="+strconv.FormatInt(start, 10), adminTok)
	got := collect(t, c, 500*time.Millisecond)
	stored, err := ts.ledger().EventsByLog(ctx, start, int(size-start))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range stored {
		want[strconv.FormatInt(stored[i].ID(), 10)] = string(SSEFrame(&stored[i]))
	}
	seen := 0
	for _, f := range got {
		w, ok := want[f.id]
		if !ok {
			continue // a later event (the checkpoint after the appends)
		}
		seen++
		if f.raw != w {
			t.Errorf("frame %s: streamed %q; SSEFrame of the stored event %q", f.id, f.raw, w)
		}
	}
	if seen != len(want) {
		t.Fatalf("the stream carried %d of the %d events", seen, len(want))
	}
	for _, f := range ring() {
		if f.sse == nil || f.ev != nil {
			t.Errorf("frame %d: a stream read it, yet it holds no rendering", f.index)
		}
	}
}

// BenchmarkFeedFrame compares publishing one event to the ring rendered at
// once (the feed before frames were rendered on first read) with
// publishing it unrendered, as a server with no stream open now does.
func BenchmarkFeedFrame(b *testing.B) {
	e := ledger.Event{LogIndex: 41, Type: "action", Payload: []byte(`{"type":"action","name":"deploy","params":{"note":"password=hunter2 read /home/alice/projects/app/config.yml from 10.20.30.40","count":3}}`)}
	b.Run("rendered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			frameSink = newFrame(e)
			frameSink.bytes()
		}
	})
	b.Run("unrendered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			frameSink = newFrame(e)
		}
	})
}

var frameSink *frame

// TestFeedPublishesOwnCommitsFromMemory: the events this process commits
// reach the feed from the commit itself, without being read back from
// the log; events another process commits are read from the log, and a
// commit of this process that follows them waits for them, so the feed
// stays in log order without a gap. (The poll is off: every read below is
// the feed's answer to a commit.)
func TestFeedPublishesOwnCommitsFromMemory(t *testing.T) {
	opts, _, _ := newOptions(t, tsOptions{env: map[string]string{"DATABASE_URL": "<unset>"}})
	opts.FeedPoll = time.Hour
	ts := startOpts(t, opts)
	ctx := context.Background()
	waitHead := func(what string) int64 {
		t.Helper()
		size, err := ts.ledger().LogSize(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ts.feed.head() < size; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the feed did not reach index %d (at %d)", what, size, ts.feed.head())
			}
		}
		return size
	}
	appendOne := func(id, note string) {
		t.Helper()
		body := map[string]any{"type": "action", "name": "deploy", "params": map[string]any{"note": note}}
		if r := ts.call("POST", "/api/sessions/"+id+"/events", adminTok, body); r.status != 201 {
			t.Fatalf("append: %d %s", r.status, r.body)
		}
	}
	start := waitHead("start")
	read := ts.feed.readEvents.Load()
	id := ts.createSession(map[string]any{"goal": "own commits", "agent_loop": false})
	for i := range 5 {
		appendOne(id, "step "+strconv.Itoa(i))
	}
	mid := waitHead("own commits")
	if n := ts.feed.readEvents.Load() - read; n != 0 {
		t.Fatalf("%d of this process's %d events were read back from the log", n, mid-start)
	}

	other, err := ledgerdb.Open(ctx, "", 0, ledger.Options{DataDir: ts.dataDir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := other.CreateSession(ctx, ledger.SessionSpec{Goal: "another process"})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	read = ts.feed.readEvents.Load()
	appendOne(id, "after the other process")
	end := waitHead("after another process's commit")
	if n := ts.feed.readEvents.Load() - read; n == 0 {
		t.Fatal("the other process's events were not read from the log")
	}
	frames, _, behind := ts.feed.since(mid, int(end-mid))
	if behind || int64(len(frames)) != end-mid {
		t.Fatalf("the ring holds %d frames from %d (behind %v); want %d", len(frames), mid, behind, end-mid)
	}
	sawTheirs := false
	for i, f := range frames {
		if f.index != mid+int64(i) {
			t.Fatalf("frame %d has log index %d; want %d", i, f.index, mid+int64(i))
		}
		if f.session == theirs.ID {
			sawTheirs = true
		}
	}
	if !sawTheirs || frames[len(frames)-1].session.String() != id {
		t.Fatalf("the frames after %d do not hold the other process's session and then this one's last event", mid)
	}
	stored, err := ts.ledger().EventsByLog(ctx, start, int(end-start))
	if err != nil {
		t.Fatal(err)
	}
	all, _, _ := ts.feed.since(start, int(end-start))
	for i := range stored {
		if got, want := all[i].bytes(), SSEFrame(&stored[i]); string(got) != string(want) {
			t.Fatalf("frame %d differs from the stored event's:\n%s\n%s", stored[i].LogIndex, got, want)
		}
	}
}
