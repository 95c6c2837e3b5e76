// Package waitline shows a live status line on a terminal while the
// command waits for something slow, such as a model's answer:
//
//	waiting for the model (12 s)
//
// The line is rewritten in place about once a second and erased when the
// wait ends, so it leaves nothing behind in the scrollback. It is drawn only
// when the writer is a terminal: piped or redirected output, log files and
// JSON output never see it, and there the Line is a plain pass-through.
//
// Other output to the same terminal (log lines) goes through the Line's
// Write, which erases a shown status line first and draws it again after a
// complete line, so the two never mix on one row.
package waitline

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// erase returns the cursor to the start of the row and clears the row
// (carriage return, then ANSI "erase in line").
const erase = "\r\x1b[K"

// Line is a status line on one writer. Its methods are safe for concurrent
// use.
type Line struct {
	w     io.Writer
	tty   bool
	tick  time.Duration // how often the line is redrawn
	quiet time.Duration // how long a wait is before the line appears
	now   func() time.Time

	mu     sync.Mutex
	label  string    // the wait in progress; "" when none
	since  time.Time // start of the wait
	shown  bool      // the status line is on screen
	cancel chan struct{}
	ticker sync.WaitGroup
}

// New returns a Line writing to w. tty says whether w is a terminal; when
// it is false the Line never draws.
func New(w io.Writer, tty bool) *Line {
	return &Line{w: w, tty: tty, tick: time.Second, quiet: time.Second, now: time.Now}
}

// ForWriter returns a Line on w that draws only when w is a terminal (a
// character device such as a TTY or pseudo-terminal).
func ForWriter(w io.Writer) *Line { return New(w, IsTerminal(w)) }

// IsTerminal reports whether w is a character device.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Start shows label with the seconds waited, from the first second on (a
// quick answer draws nothing), until the returned function is called; that
// function erases the line and may be called more than once. A Start while
// another wait is shown, or on a non-terminal, shows nothing.
func (l *Line) Start(label string) (done func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.tty || l.label != "" {
		return func() {}
	}
	l.label, l.since = label, l.now()
	cancel := make(chan struct{})
	l.cancel = cancel
	l.ticker.Add(1)
	go l.run(cancel)
	var once sync.Once
	return func() { once.Do(func() { l.stop(cancel) }) }
}

func (l *Line) run(cancel chan struct{}) {
	defer l.ticker.Done()
	t := time.NewTicker(l.tick)
	defer t.Stop()
	for {
		select {
		case <-cancel:
			return
		case <-t.C:
			l.mu.Lock()
			if l.cancel == cancel && l.now().Sub(l.since) >= l.quiet {
				l.drawLocked()
			}
			l.mu.Unlock()
		}
	}
}

func (l *Line) stop(cancel chan struct{}) {
	close(cancel)
	l.ticker.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eraseLocked()
	l.label, l.cancel = "", nil
}

// Write writes p to the underlying writer, erasing a shown status line
// first and drawing it again when p ends a line.
func (l *Line) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eraseLocked()
	n, err := l.w.Write(p)
	if err == nil && l.label != "" && len(p) > 0 && p[len(p)-1] == '\n' && l.now().Sub(l.since) >= l.quiet {
		l.drawLocked()
	}
	return n, err
}

func (l *Line) drawLocked() {
	secs := int(l.now().Sub(l.since) / time.Second)
	// A failed write of a status line is not worth failing the command.
	_, _ = fmt.Fprintf(l.w, "%s%s (%d s)", erase, l.label, secs)
	l.shown = true
}

func (l *Line) eraseLocked() {
	if l.shown {
		_, _ = io.WriteString(l.w, erase)
		l.shown = false
	}
}
