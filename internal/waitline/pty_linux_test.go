package waitline

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestLineOnRealTerminal draws on a pseudo-terminal, found as a terminal by
// ForWriter, and reads what the terminal received.
func TestLineOnRealTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	got := make(chan []byte, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 256)
		for {
			n, err := ptmx.Read(buf)
			b.Write(buf[:n])
			if err != nil || bytes.HasSuffix(b.Bytes(), []byte("done\r\n")) {
				got <- b.Bytes()
				return
			}
		}
	}()

	l := ForWriter(tty)
	if !l.tty {
		t.Fatal("ForWriter: a pseudo-terminal must count as a terminal")
	}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l.tick, l.now = 5*time.Millisecond, clk.now
	done := l.Start("waiting for the model")
	clk.add(12 * time.Second)
	time.Sleep(50 * time.Millisecond)
	done()
	if _, err := io.WriteString(tty, "done\n"); err != nil {
		t.Fatal(err)
	}
	var out []byte
	select {
	case out = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("nothing read from the terminal")
	}
	s := string(out)
	if !strings.Contains(s, "\r\x1b[Kwaiting for the model (12 s)") || !strings.HasSuffix(s, "\r\x1b[Kdone\r\n") {
		t.Fatalf("the terminal received %q; want the live line, erased before the next output", s)
	}
}
