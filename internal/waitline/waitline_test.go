package waitline

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testLine returns a Line that ticks every few milliseconds on a clock the
// test moves, so "12 s" shows without waiting 12 seconds, and a function
// that returns what the Line wrote (read under the Line's lock, which each
// of its writes holds).
func testLine(tty bool) (*Line, *fakeClock, func() string) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var b bytes.Buffer
	l := New(&b, tty)
	l.tick, l.now = 5*time.Millisecond, clk.now
	return l, clk, func() string {
		l.mu.Lock()
		defer l.mu.Unlock()
		return b.String()
	}
}

// waitFor polls until out holds want, or fails after a generous bound (the
// bound only stops a broken test; no assertion depends on timing).
func waitFor(t *testing.T, out func() string, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if strings.Contains(out(), want) {
			return
		}
	}
	t.Fatalf("output %q never held %q", out(), want)
}

func TestLineOnTerminal(t *testing.T) {
	l, clk, out := testLine(true)
	done := l.Start("waiting for the model")
	clk.add(12 * time.Second)
	waitFor(t, out, "\r\x1b[Kwaiting for the model (12 s)")
	clk.add(time.Second)
	waitFor(t, out, "\r\x1b[Kwaiting for the model (13 s)")
	done()
	s := out()
	if !strings.HasSuffix(s, erase) {
		t.Fatalf("output %q: the line must be erased when the wait ends", s)
	}
	if strings.Contains(s, "\n") {
		t.Fatalf("output %q: the line is rewritten in place, never with a newline", s)
	}
	done() // a second call is harmless
	n := len(out())
	clk.add(time.Second)
	time.Sleep(30 * time.Millisecond)
	if len(out()) != n {
		t.Fatalf("output %q: drawn after the wait ended", out())
	}
}

func TestLineQuickAnswerDrawsNothing(t *testing.T) {
	l, _, out := testLine(true)
	done := l.Start("waiting for the model")
	time.Sleep(30 * time.Millisecond) // ticks pass, but the clock stays below a second
	done()
	if s := out(); strings.Contains(s, "waiting") {
		t.Fatalf("output %q: nothing must be drawn in the first second", s)
	}
}

func TestLineNotTerminal(t *testing.T) {
	l, clk, out := testLine(false)
	done := l.Start("waiting for the model")
	clk.add(5 * time.Second)
	time.Sleep(30 * time.Millisecond)
	if _, err := l.Write([]byte("level=WARN msg=retrying\n")); err != nil {
		t.Fatal(err)
	}
	done()
	if s := out(); s != "level=WARN msg=retrying\n" {
		t.Fatalf("output %q: a non-terminal gets the log line only", s)
	}
}

func TestLineLogLinesDoNotMix(t *testing.T) {
	l, clk, out := testLine(true)
	done := l.Start("waiting for the model")
	defer done()
	clk.add(3 * time.Second)
	waitFor(t, out, "(3 s)")
	if _, err := l.Write([]byte("retrying in 1s\n")); err != nil {
		t.Fatal(err)
	}
	s := out()
	i := strings.LastIndex(s, "retrying in 1s\n")
	if i < len(erase) || s[i-len(erase):i] != erase {
		t.Fatalf("output %q: the status line must be erased before a log line", s)
	}
	if !strings.HasSuffix(s, "waiting for the model (3 s)") {
		t.Fatalf("output %q: the status line must come back after the log line", s)
	}
}

func TestLineOneWaitAtATime(t *testing.T) {
	l, clk, out := testLine(true)
	done := l.Start("first")
	inner := l.Start("second")
	clk.add(2 * time.Second)
	waitFor(t, out, "first (2 s)")
	inner()
	done()
	if s := out(); strings.Contains(s, "second") || !strings.HasSuffix(s, erase) {
		t.Fatalf("output %q", s)
	}
}

func TestIsTerminalPlainFiles(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	var b bytes.Buffer
	if IsTerminal(f) || IsTerminal(w) || IsTerminal(&b) {
		t.Fatal("a file, a pipe or a buffer is no terminal")
	}
}
