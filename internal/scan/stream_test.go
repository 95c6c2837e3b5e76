package scan

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestCapStream(t *testing.T) {
	a := func(n int) []byte { return bytes.Repeat([]byte("a"), n) }
	for _, tc := range []struct {
		name      string
		data      []byte
		total     int64
		truncated bool
		omitted   string // the marker's N
		keptLen   int    // bytes before the marker; -1 = do not check
		want      string // exact text, when non-empty
	}{
		{name: "65535", data: a(MaxStreamBytes - 1), truncated: false, keptLen: MaxStreamBytes - 1},
		{name: "65536", data: a(MaxStreamBytes), truncated: false, keptLen: MaxStreamBytes},
		{name: "57: 65537", data: a(MaxStreamBytes + 1), truncated: true, omitted: "1", keptLen: MaxStreamBytes},
		{name: "collector dropped bytes", data: a(100), total: 5000, truncated: true, omitted: "4900", keptLen: 100},
		{name: "two-byte rune across the cap", data: append(a(MaxStreamBytes-1), "é"...), truncated: true, omitted: "2", keptLen: MaxStreamBytes - 1},
		{name: "three-byte rune across the cap", data: append(a(MaxStreamBytes-2), "€x"...), truncated: true, omitted: "4", keptLen: MaxStreamBytes - 2},
		{name: "four-byte rune ends at the cap", data: append(a(MaxStreamBytes-4), "😀x"...), truncated: true, omitted: "1", keptLen: MaxStreamBytes},
		{name: "invalid bytes at the cap", data: append(a(MaxStreamBytes-1), 0x80, 0x80), truncated: true, omitted: "1", keptLen: -1},
		{name: "invalid utf8 becomes U+FFFD", data: []byte("a\xffb\xc3"), want: "a\uFFFDb\uFFFD"},
		{name: "nfkc applied", data: []byte("ｆｕｌｌ ﬁ ①"), want: "full fi 1"},
		{name: "empty", data: nil, want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total := tc.total
			if total == 0 {
				total = int64(len(tc.data))
			}
			text, truncated := CapStream(tc.data, total)
			if truncated != tc.truncated {
				t.Fatalf("truncated = %v; want %v", truncated, tc.truncated)
			}
			if !utf8.ValidString(text) {
				t.Fatalf("text is not valid UTF-8")
			}
			if tc.want != "" || len(tc.data) == 0 {
				if text != tc.want {
					t.Fatalf("text = %q; want %q", text, tc.want)
				}
				return
			}
			body := text
			if tc.truncated {
				marker := "\n[truncated: " + tc.omitted + " bytes omitted]"
				if tc.omitted != "" && !strings.HasSuffix(text, marker) {
					t.Fatalf("text ends with %q; want %q", text[max(0, len(text)-40):], marker)
				}
				body = text[:strings.LastIndex(text, "\n[truncated: ")]
			} else if strings.Contains(text, "[truncated:") {
				t.Fatalf("marker in an untruncated stream")
			}
			if tc.keptLen >= 0 && len(body) != tc.keptLen {
				t.Errorf("kept %d bytes; want %d", len(body), tc.keptLen)
			}
		})
	}
}

func TestCapStreamNFKCExpansion(t *testing.T) {
	// U+FDFA is 3 bytes and expands to 33 under NFKC, so 64 KiB of it grows
	// far past MaxNormalizedBytes.
	data := []byte(strings.Repeat("\uFDFA", MaxStreamBytes/3))
	text, truncated := CapStream(data, int64(len(data)))
	if !truncated {
		t.Fatalf("truncated = false")
	}
	i := strings.LastIndex(text, "\n[truncated: ")
	if i < 0 || i > MaxNormalizedBytes {
		t.Fatalf("normalised body is %d bytes; want at most %d plus the marker", i, MaxNormalizedBytes)
	}
	if !utf8.ValidString(text) {
		t.Fatalf("text is not valid UTF-8")
	}
	// Every kept character is whole: the omitted count is in raw bytes and
	// a multiple of the 3-byte input character.
	var omitted int
	if _, err := fmt.Sscanf(text[i:], "\n[truncated: %d bytes omitted]", &omitted); err != nil || omitted%3 != 0 || omitted <= 0 {
		t.Errorf("marker %q: omitted %d (err %v)", text[i:], omitted, err)
	}
}

func TestCollector(t *testing.T) {
	var c Collector
	var _ io.Writer = &c
	chunk := bytes.Repeat([]byte("x"), 4096)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 128; i++ { // 4 × 128 × 4 KiB = 2 MiB
				if n, err := c.Write(chunk); n != len(chunk) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := len(c.Bytes()); got != MaxCollectBytes {
		t.Errorf("kept %d bytes; want %d", got, MaxCollectBytes)
	}
	if got := c.Total(); got != 2<<20 {
		t.Errorf("total %d; want %d", got, 2<<20)
	}
	text, truncated := c.Text()
	want := TruncationMarker(2<<20 - MaxStreamBytes)
	if !truncated || !strings.HasSuffix(text, want) || len(text) != MaxStreamBytes+len(want) {
		t.Errorf("Text() = %d bytes, truncated %v; want %d bytes ending %q", len(text), truncated, MaxStreamBytes+len(want), want)
	}
	var small Collector
	small.Write([]byte("hello"))
	if text, truncated := small.Text(); text != "hello" || truncated {
		t.Errorf("small collector: %q, %v", text, truncated)
	}
}

// TestCutText: a value within the limit is kept as it is; a longer one is
// cut at a UTF-8 boundary at or below the limit and marked.
func TestCutText(t *testing.T) {
	if got := CutText("héllo", 6); got != "héllo" {
		t.Errorf("within the limit: %q", got)
	}
	got := CutText("aé", 2) // é is two bytes: cutting at 2 would split it
	if got != "a…[truncated]" {
		t.Errorf("cut inside a rune: %q", got)
	}
	if got := CutText("abcdef", 3); got != "abc…[truncated]" {
		t.Errorf("cut: %q", got)
	}
}
