package redact

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// kwDef is one keyword as a rule names it (lowercase).
type kwDef struct{ word string }

// kwBucketBits sizes the keyword table (2^14 two-byte buckets, 32 KiB).
// With 2^12, 7% of the positions of a benign log hit a non-empty bucket,
// most of them by hash collision; with 2^14, 4%, and the benign 32 KiB
// scan measured faster in spite of the table's extra cache lines.
const kwBucketBits = 14

// prefixBits returns the first n (at most 8) bytes of w, little-endian,
// and the mask that selects them.
func prefixBits(w string, n int) (key, mask uint64) {
	n = min(n, len(w), 8)
	for k := range n {
		key |= uint64(w[k]) << (8 * k)
		mask |= 0xff << (8 * k)
	}
	return key, mask
}

// keywordIndex finds every occurrence of a few hundred keywords in a text
// in one pass: each position's first three bytes are hashed
// into a small table, and only positions whose bucket holds a keyword are
// compared. Keywords shorter than three bytes are searched for directly.
type keywordIndex struct {
	words []string // distinct keywords, lowercase
	// id maps the index of a kwDef given to newKeywordIndex to its word id.
	id     []int
	bucket [1 << kwBucketBits]uint16 // 0: empty; else 1 + index into lists
	lists  [][]uint16                // word ids per non-empty bucket
	// head[li] and headMask[li] select the longest prefix (at most four
	// bytes) that all words of list li share: most positions whose
	// bucket is not empty only collide with it ("connection" with
	// "contentful", "message queue" with "messagebird" share three
	// bytes at most), and one comparison rejects them.
	head, headMask []uint32
	// pre[id] and preMask[id] are the first eight bytes of word id, so
	// that verifying a candidate is one comparison for most words.
	pre, preMask []uint64
	short        []int // ids of words shorter than three bytes
	trigramIDs   int   // how many words the table holds
}

func newKeywordIndex(defs []kwDef) (keywordIndex, error) {
	// Sized up front: growing them was a third of the index's
	// allocations, in every process that builds the built-in rules.
	x := keywordIndex{words: make([]string, 0, len(defs)), id: make([]int, 0, len(defs))}
	seen := make(map[string]int, len(defs))
	for _, d := range defs {
		if d.word == "" {
			return x, fmt.Errorf("empty keyword")
		}
		for i := 0; i < len(d.word); i++ {
			if c := d.word[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
				return x, fmt.Errorf("keyword %q must be lowercase ASCII", d.word)
			}
		}
		id, ok := seen[d.word]
		if !ok {
			id = len(x.words)
			seen[d.word] = id
			x.words = append(x.words, d.word)
			if len(d.word) < 3 {
				x.short = append(x.short, id)
			} else {
				b := kwHash(uint32(d.word[0]) | uint32(d.word[1])<<8 | uint32(d.word[2])<<16)
				if x.bucket[b] == 0 {
					if len(x.lists) == 1<<16-1 {
						return x, fmt.Errorf("too many keyword buckets")
					}
					x.lists = append(x.lists, nil)
					x.bucket[b] = uint16(len(x.lists))
				}
				li := x.bucket[b] - 1
				x.lists[li] = append(x.lists[li], uint16(id))
				x.trigramIDs++
			}
		}
		x.id = append(x.id, id)
	}
	x.pre, x.preMask = make([]uint64, 0, len(x.words)), make([]uint64, 0, len(x.words))
	x.head, x.headMask = make([]uint32, 0, len(x.lists)), make([]uint32, 0, len(x.lists))
	for _, w := range x.words {
		k, m := prefixBits(w, 8)
		x.pre, x.preMask = append(x.pre, k), append(x.preMask, m)
	}
	for _, l := range x.lists {
		// The common prefix of the list's words, at most four bytes.
		first := x.words[l[0]]
		n := min(len(first), 4)
		for _, id := range l[1:] {
			w := x.words[id]
			k := 0
			for k < n && k < len(w) && w[k] == first[k] {
				k++
			}
			n = k
		}
		k, m := prefixBits(first, n)
		x.head, x.headMask = append(x.head, uint32(k)), append(x.headMask, uint32(m))
	}
	return x, nil
}

// kwHash hashes the low three bytes of k into a bucket index.
func kwHash(k uint32) uint32 {
	return ((k & 0xffffff) * 0x9E3779B1) >> (32 - kwBucketBits)
}

// kwHit is one occurrence of a keyword: its id and offset.
type kwHit struct{ id, at int32 }

// scan appends to hits every occurrence of every keyword in lower (the
// ASCII-lowercased text), in ascending offset per keyword. Recording all of
// them in the one pass costs a comparison per occurrence; searching the
// text again for each keyword found cost a scan of the rest of the text
// per keyword ("api", "curl" and "key" occur in most logs).
func (x *keywordIndex) scan(lower []byte, hits []kwHit) []kwHit {
	for _, id := range x.short {
		w := []byte(x.words[id])
		for at := 0; at < len(lower); {
			k := bytes.Index(lower[at:], w)
			if k < 0 {
				break
			}
			hits = append(hits, kwHit{int32(id), int32(at + k)})
			at += k + 1
		}
	}
	n := len(lower)
	if n < 3 || x.trigramIDs == 0 {
		return hits
	}
	bucket := &x.bucket
	head, headMask := x.head, x.headMask
	i := 0
	// Six positions per 8-byte load, hashed independently so the loop
	// does not serialise on one rolling key. The bound leaves four bytes
	// after the last position for the prefix check.
	for ; i+10 <= n; i += 6 {
		w := binary.LittleEndian.Uint64(lower[i:])
		b0, b1, b2 := bucket[kwHash(uint32(w))], bucket[kwHash(uint32(w>>8))], bucket[kwHash(uint32(w>>16))]
		b3, b4, b5 := bucket[kwHash(uint32(w>>24))], bucket[kwHash(uint32(w>>32))], bucket[kwHash(uint32(w>>40))]
		if b0|b1|b2|b3|b4|b5 == 0 {
			continue
		}
		for j, b := range [6]uint16{b0, b1, b2, b3, b4, b5} {
			if b == 0 || binary.LittleEndian.Uint32(lower[i+j:])&headMask[b-1] != head[b-1] {
				continue // empty, or another prefix in the same bucket
			}
			hits = x.verify(lower, i+j, b-1, hits)
		}
	}
	for ; i+3 <= n; i++ {
		k := uint32(lower[i]) | uint32(lower[i+1])<<8 | uint32(lower[i+2])<<16
		if b := bucket[kwHash(k)]; b != 0 {
			hits = x.verify(lower, i, b-1, hits)
		}
	}
	return hits
}

// verify appends the words of list li that start at i.
func (x *keywordIndex) verify(lower []byte, i int, li uint16, hits []kwHit) []kwHit {
	var at uint64
	wide := i+8 <= len(lower)
	if wide {
		at = binary.LittleEndian.Uint64(lower[i:])
	}
	for _, id := range x.lists[li] {
		if wide && at&x.preMask[id] != x.pre[id] {
			continue
		}
		if w := x.words[id]; i+len(w) <= len(lower) && string(lower[i:i+len(w)]) == w {
			hits = append(hits, kwHit{int32(id), int32(i)})
		}
	}
	return hits
}

// lowerASCII writes the ASCII-lowercased src into dst (same length): a
// copy, then eight bytes at a time in place where they are all ASCII.
func lowerASCII(dst []byte, src string) {
	copy(dst, src)
	n := len(dst)
	i := 0
	for ; i+8 <= n; i += 8 {
		w := binary.LittleEndian.Uint64(dst[i:])
		if w&0x8080808080808080 == 0 {
			// Below 0x80 these additions cannot carry across bytes: bit
			// 7 of each sum says b >= 'A' and b > 'Z'.
			ge := w + 0x3f3f3f3f3f3f3f3f
			gt := w + 0x2525252525252525
			binary.LittleEndian.PutUint64(dst[i:], w|((ge&^gt)&0x8080808080808080)>>2)
			continue
		}
		for k := i; k < i+8; k++ {
			dst[k] = lowerByte(dst[k])
		}
	}
	for ; i < n; i++ {
		dst[i] = lowerByte(dst[i])
	}
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
