package native

import (
	"strings"
	"testing"
)

func TestSeatbeltProfile(t *testing.T) {
	p, sum, err := SeatbeltProfile("/Users/a b/work \"q\"/ws", "/private/var/folders/x/T/ironvise-scratch-1", []string{"/Users/a b/.ssh", "/Users/a b/work \"q\"/ws/.aws"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(version 1)\n(deny default)\n",
		"(allow process-exec)", "(allow process-fork)",
		"(allow signal (target same-sandbox))",
		`(allow file-read* file-write* (subpath "/Users/a b/work \"q\"/ws") (subpath "/private/var/folders/x/T/ironvise-scratch-1"))`,
		`(literal "/Users/a b/work \"q\"")`, `(literal "/Users/a b")`, `(literal "/Users")`, `(literal "/")`,
		`(subpath "/usr/lib")`, `(subpath "/System")`, `(subpath "/opt/homebrew")`,
		"(deny network*)",
		`(deny file-read* file-write* (subpath "/Users/a b/.ssh") (subpath "/Users/a b/work \"q\"/ws/.aws"))`,
	} {
		if !strings.Contains(p, want) {
			t.Errorf("profile lacks %q\n%s", want, p)
		}
	}
	for _, bad := range []string{"(allow network", "(allow default", "(allow file-write* (subpath \"/\")", "(allow signal)"} {
		if strings.Contains(p, bad) {
			t.Errorf("profile contains %q", bad)
		}
	}
	// Parents are stat-only: never a subpath rule or read-data on them.
	if strings.Contains(p, `(subpath "/Users")`) || strings.Contains(p, `(subpath "/")`) {
		t.Errorf("a parent folder is readable as a subtree:\n%s", p)
	}
	if len(sum) != 64 {
		t.Errorf("sum %q is not a SHA-256", sum)
	}
	p2, sum2, _ := SeatbeltProfile("/Users/a b/work \"q\"/ws", "/private/var/folders/x/T/ironvise-scratch-1", []string{"/Users/a b/.ssh", "/Users/a b/work \"q\"/ws/.aws"})
	if p2 != p || sum2 != sum {
		t.Error("profile generation is not deterministic")
	}
}

func TestSeatbeltProfileRejects(t *testing.T) {
	for _, tc := range []struct{ ws, scratch string }{
		{"relative/ws", "/tmp/s"},
		{"/ws/../etc", "/tmp/s"},
		{"/ws\n(allow default)", "/tmp/s"},
		{"/ws", "/tmp/s\x00"},
	} {
		if _, _, err := SeatbeltProfile(tc.ws, tc.scratch, nil); err == nil {
			t.Errorf("SeatbeltProfile(%q, %q) = nil error; want a refusal", tc.ws, tc.scratch)
		}
	}
	// A protected path is an SBPL literal too: it must not smuggle rules.
	if _, _, err := SeatbeltProfile("/ws", "/tmp/s", []string{"/ws/.ssh\n(allow default)"}); err == nil {
		t.Error("a protected path with a newline was accepted")
	}
}
