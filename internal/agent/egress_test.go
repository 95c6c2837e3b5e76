package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/verdict"
)

func TestEgressLines(t *testing.T) {
	deny := func(host, addr string, port uint16, reason string) egress.Record {
		return egress.Record{Host: host, Addr: addr, Port: port, Verdict: verdict.Deny, Reason: reason}
	}
	t.Run("targets", func(t *testing.T) {
		for _, c := range []struct {
			r    egress.Record
			want string
		}{
			{deny("denied.test", "", 443, "r"), "[egress] refused: denied.test:443 — r"},
			{deny("2001:db8::1", "", 443, "r"), "[egress] refused: [2001:db8::1]:443 — r"},
			{deny("", "[2001:db8::1]:443", 443, "r"), "[egress] refused: [2001:db8::1]:443 — r"},
			{deny("", "", 0, "r"), "[egress] refused: (no host) — r"},
			// A reason quoting what the client sent cannot forge a line.
			{deny("a.test", "", 80, "bad request\n[egress] refused: nothing"), "[egress] refused: a.test:80 — bad request [egress] refused: nothing"},
		} {
			got := egressLines([]egress.Record{c.r})
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("egressLines(%+v) = %q; want %q", c.r, got, c.want)
			}
		}
	})
	t.Run("allowed connections are not lines", func(t *testing.T) {
		if got := egressLines([]egress.Record{{Host: "pypi.org", Port: 443, Verdict: verdict.Allow}}); len(got) != 0 {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("capped", func(t *testing.T) {
		var recs []egress.Record
		for i := range MaxEgressLines + 3 {
			recs = append(recs, deny(fmt.Sprintf("h%d.test", i), "", 443, "r"))
		}
		got := egressLines(recs)
		if len(got) != MaxEgressLines+1 || !strings.Contains(got[MaxEgressLines], "and 3 more refused connections") {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("inserted after the headline", func(t *testing.T) {
		got := withEgressLines("[exit 7]\nout\n", []string{"[egress] a", "[egress] b"})
		if got != "[exit 7]\n[egress] a\n[egress] b\nout\n" {
			t.Fatalf("got %q", got)
		}
		if withEgressLines("x\ny", nil) != "x\ny" {
			t.Fatal("no lines changed the text")
		}
	})
}
