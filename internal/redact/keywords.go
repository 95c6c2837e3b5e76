package redact

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// kwDef is one keyword as a rule names it (lowercase).
type kwDef struct{ word string }

const kwBucketBits = 12

// multiTrigram marks a bucket list whose words start differently; it is not
// a 24-bit value, so no position equals it.
const multiTrigram = 1 << 31

// trigram returns the first three bytes of w, little-endian.
func trigram(w string) uint32 { return uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 }

// keywordIndex finds which of a few hundred keywords occur in a text, and
// where first, in one pass: each position's first three bytes are hashed
// into a small table, and only positions whose bucket holds a keyword are
// compared. Keywords shorter than three bytes are searched for directly.
type keywordIndex struct {
	words []string // distinct keywords, lowercase
	// id maps the index of a kwDef given to newKeywordIndex to its word id.
	id     []int
	bucket [1 << kwBucketBits]uint16 // 0: empty; else 1 + index into lists
	lists  [][]uint16                // word ids per non-empty bucket
	// tri[li] is the first three bytes (little-endian) of the words of
	// list li, or multiTrigram when they differ; most positions whose
	// bucket is not empty only collide with it, and one comparison
	// rejects them.
	tri        []uint32
	short      []int // ids of words shorter than three bytes
	trigramIDs int   // how many words the table holds
}

func newKeywordIndex(defs []kwDef) (keywordIndex, error) {
	var x keywordIndex
	seen := map[string]int{}
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
				tri := trigram(d.word)
				switch {
				case len(x.lists[li]) == 0:
					x.tri = append(x.tri, tri)
				case x.tri[li] != tri:
					x.tri[li] = multiTrigram
				}
				x.lists[li] = append(x.lists[li], uint16(id))
				x.trigramIDs++
			}
		}
		x.id = append(x.id, id)
	}
	return x, nil
}

// kwHash hashes the low three bytes of k into a bucket index.
func kwHash(k uint32) uint32 {
	return ((k & 0xffffff) * 0x9E3779B1) >> (32 - kwBucketBits)
}

// scan stores in first[id] the first offset of each keyword in lower (the
// ASCII-lowercased text), or -1. done is scratch space of at least
// len(x.lists) entries.
func (x *keywordIndex) scan(lower []byte, first []int32, done []bool) {
	for i := range first {
		first[i] = -1
	}
	for _, id := range x.short {
		if at := bytes.Index(lower, []byte(x.words[id])); at >= 0 {
			first[id] = int32(at)
		}
	}
	n := len(lower)
	if n < 3 || x.trigramIDs == 0 {
		return
	}
	// done[li] is set once every word of list li has been found, so a
	// common keyword costs one test at each later occurrence.
	done = done[:len(x.lists)]
	clear(done)
	remaining := x.trigramIDs
	bucket := &x.bucket
	tri := x.tri
	i := 0
	// Six positions per 8-byte load, hashed independently so the loop
	// does not serialise on one rolling key.
	for ; i+8 <= n; i += 6 {
		w := binary.LittleEndian.Uint64(lower[i:])
		b0, b1, b2 := bucket[kwHash(uint32(w))], bucket[kwHash(uint32(w>>8))], bucket[kwHash(uint32(w>>16))]
		b3, b4, b5 := bucket[kwHash(uint32(w>>24))], bucket[kwHash(uint32(w>>32))], bucket[kwHash(uint32(w>>40))]
		if b0|b1|b2|b3|b4|b5 == 0 {
			continue
		}
		for j, b := range [6]uint16{b0, b1, b2, b3, b4, b5} {
			if b == 0 || done[b-1] {
				continue
			}
			if t := tri[b-1]; t != multiTrigram && t != uint32(w>>(8*j))&0xffffff {
				continue // another trigram in the same bucket
			}
			remaining -= x.verify(lower, i+j, b-1, first, done)
		}
		if remaining == 0 {
			return
		}
	}
	for ; i+3 <= n; i++ {
		k := uint32(lower[i]) | uint32(lower[i+1])<<8 | uint32(lower[i+2])<<16
		if b := bucket[kwHash(k)]; b != 0 && !done[b-1] && (tri[b-1] == multiTrigram || tri[b-1] == k) {
			x.verify(lower, i, b-1, first, done)
		}
	}
}

// verify records the words of list li that start at i and returns how
// many were new; it marks the list done once all its words are found.
func (x *keywordIndex) verify(lower []byte, i int, li uint16, first []int32, done []bool) int {
	found, all := 0, true
	for _, id := range x.lists[li] {
		if first[id] >= 0 {
			continue
		}
		w := x.words[id]
		if i+len(w) <= len(lower) && lower[i] == w[0] && lower[i+1] == w[1] && lower[i+2] == w[2] &&
			string(lower[i+3:i+len(w)]) == w[3:] {
			first[id] = int32(i)
			found++
			continue
		}
		all = false
	}
	done[li] = all
	return found
}

// occurrences returns every offset of keyword id in lower, starting at its
// first occurrence.
func (x *keywordIndex) occurrences(lower []byte, id int, first int32, out []int) []int {
	w := []byte(x.words[id])
	for at := int(first); at >= 0 && at < len(lower); {
		k := bytes.Index(lower[at:], w)
		if k < 0 {
			break
		}
		out = append(out, at+k)
		at += k + 1
	}
	return out
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
