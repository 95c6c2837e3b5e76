package scan

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveHints is the obvious implementation the hint pass must agree with.
func naiveHints(x *hintIndex, lower []byte, orig string) (uint64, [maxHints]int32) {
	var found uint64
	var first [maxHints]int32
	for id, h := range x.hints {
		at := strings.Index(string(lower), h.lower)
		if h.exact != "" {
			at = strings.Index(orig, h.exact)
		}
		if at >= 0 {
			found |= 1 << id
			first[id] = int32(at)
		}
	}
	return found, first
}

func TestHintScanMatchesNaive(t *testing.T) {
	s := newScanner(t, High)
	var words []string
	for _, h := range s.hints.hints {
		words = append(words, h.lower, h.exact)
	}
	words = append(words, "EYJ", "eYj", "x", " ", "\n", "é", "systemd", "renew", "curl/8", "[1]", "<a>")
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 2000; round++ {
		var b strings.Builder
		for k := rng.IntN(12); k >= 0; k-- {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(3) == 0 {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		text := b.String()
		v := newTextView(text)
		var first [maxHints]int32
		got := s.hints.scan(v.lower, v.orig, &first)
		want, wantFirst := naiveHints(&s.hints, v.lower, v.orig)
		if got != want {
			t.Fatalf("%q: hints %b; want %b", text, got, want)
		}
		for id := range s.hints.hints {
			if want&(1<<id) != 0 && first[id] != wantFirst[id] {
				t.Fatalf("%q: hint %q first at %d; want %d", text, s.hints.hints[id].lower, first[id], wantFirst[id])
			}
		}
	}
}

func TestB64WordMatchesTable(t *testing.T) {
	s := newScanner(t, Medium)
	// Every ASCII byte in every position of an otherwise valid word.
	for c := 0; c < 0x80; c++ {
		for pos := 0; pos < 8; pos++ {
			w := []byte("AAAAAAAA")
			w[pos] = byte(c)
			want := s.class[c]&clsB64Any != 0
			if got := b64Word(le64(string(w))); got != want {
				t.Errorf("b64Word(%q) = %v; want %v", w, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := "+-/_09AZaz=.:@[`{\x00\x7f "
	for i := 0; i < 20000; i++ {
		var w [8]byte
		want := true
		for k := range w {
			w[k] = alphabet[rng.IntN(len(alphabet))]
			want = want && s.class[w[k]]&clsB64Any != 0
		}
		if got := b64Word(le64(string(w[:]))); got != want {
			t.Fatalf("b64Word(%q) = %v; want %v", w, got, want)
		}
	}
}

func TestSpaceIndexAfter(t *testing.T) {
	naive := func(buf []byte, p, b int) int {
		count := 0
		for i := p; i < len(buf); i++ {
			if !isSpaceByte(buf[i]) {
				if count == b {
					return i
				}
				count++
			}
		}
		return len(buf)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("ab \t\n\r\fé")
	for round := 0; round < 300; round++ {
		buf := make([]byte, rng.IntN(700))
		for i := range buf {
			buf[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var x spaceIndex
		for k := 0; k < 20; k++ {
			p := rng.IntN(len(buf) + 1)
			b := rng.IntN(400)
			if got, want := x.after(buf, p, b), naive(buf, p, b); got != want {
				t.Fatalf("after(len %d, p %d, b %d) = %d; want %d", len(buf), p, b, got, want)
			}
		}
	}
}
