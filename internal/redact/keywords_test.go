package redact

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestKeywordScanMatchesNaive checks the one-pass keyword search against
// the obvious one: every occurrence of every keyword, by strings.Index.
func TestKeywordScanMatchesNaive(t *testing.T) {
	x := &Default().kw
	words := slices.Clone(x.words)
	words = append(words, "API", "Curl", "x", " ", "\n", "é", "connection", "message", "linear-", "s.", "sk", "q~")
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 3000; round++ {
		var b strings.Builder
		for k := rng.IntN(16); k >= 0; k-- {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(3) == 0 {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		text := b.String()
		lower := make([]byte, len(text))
		lowerASCII(lower, text)
		got := map[int32][]int32{}
		for _, h := range x.scan(lower, nil) {
			got[h.id] = append(got[h.id], h.at)
		}
		for id, w := range x.words {
			var want []int32
			for at := 0; ; at++ {
				k := strings.Index(string(lower[at:]), w)
				if k < 0 {
					break
				}
				at += k
				want = append(want, int32(at))
			}
			if !slices.Equal(got[int32(id)], want) {
				t.Fatalf("%q: keyword %q at %v; want %v", text, w, got[int32(id)], want)
			}
		}
	}
}
