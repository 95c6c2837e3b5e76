package scan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// view is one reading of the normalised text: orig keeps case, lower is its
// ASCII-lowercased copy with the same byte offsets. The primary view is the
// text itself; a compacted view has invisible and bidi characters removed
// and maps its offsets back through off.
type view struct {
	orig  string
	lower []byte
	off   []int32 // compacted view: original offset of each byte; nil = identity
	base  string  // the text off maps into (the primary view's orig)
	hints uint64
	first [maxHints]int32 // first offset of each hint in hints
	ready bool
	raw   []byte // orig as bytes, made on first use by a raw pattern
	// junctions are the offsets of a compacted view where deleted
	// characters were removed.
	junctions []int
	// spaces counts whitespace for the windows of long patterns; built on
	// first use.
	spaces spaceIndex
	// occ caches the offsets of each variant prefix: those of prefix
	// occ[i].key are occBuf[occ[i].s:occ[i].e]. A view has a handful of
	// prefixes, and one buffer, recycled between scans, holds them all.
	occ    []prefixOcc
	occBuf []int32
}

// prefixOcc locates the offsets of one prefix in view.occBuf.
type prefixOcc struct {
	key  string
	s, e int
}

// viewBufs are the buffers of a primary view that a Scanner recycles.
type viewBufs struct {
	lower []byte
	occ   []int32
}

// origBytes returns orig as a byte slice for the raw patterns.
func (v *view) origBytes() []byte {
	if v.raw == nil {
		v.raw = []byte(v.orig)
	}
	return v.raw
}

// newView builds the primary view of t. In the lowered copy, the bytes of
// deleted characters become spaces: the offsets stay, and a zero-width
// space used as a word separator still separates words.
//
// lowered says buf already holds t lowercased (the redactor read the same
// copy), so it is not made again.
func newView(t string, deleted []span, buf []byte, lowered bool) *view {
	if cap(buf) < len(t) {
		buf, lowered = make([]byte, len(t)), false
	}
	v := &view{orig: t, base: t, lower: buf[:len(t)]}
	if !lowered || len(buf) != len(t) {
		lowerASCII(v.lower, t)
	}
	for _, sp := range deleted {
		for i := sp.s; i < sp.e; i++ {
			v.lower[i] = ' '
		}
	}
	return v
}

// newCompactView builds the view with the deleted characters removed. Its
// junctions are the offsets where characters were removed.
func newCompactView(t string, deleted []span) *view {
	var sb strings.Builder
	sb.Grow(len(t))
	off := make([]int32, 0, len(t))
	var junctions []int
	last := 0
	for _, sp := range deleted {
		sb.WriteString(t[last:sp.s])
		for i := last; i < sp.s; i++ {
			off = append(off, int32(i))
		}
		if len(junctions) == 0 || junctions[len(junctions)-1] != len(off) {
			junctions = append(junctions, len(off))
		}
		last = sp.e
	}
	sb.WriteString(t[last:])
	for i := last; i < len(t); i++ {
		off = append(off, int32(i))
	}
	c := sb.String()
	v := &view{orig: c, base: t, lower: make([]byte, len(c)), off: off, junctions: junctions}
	lowerASCII(v.lower, c)
	return v
}

// junctionExcerpts returns the parts of a compacted view that the regex
// lists still need to read: a match that does not span a junction is found
// in the primary view as well. Each part runs from the line before a
// junction to the line after it; parts start and end at line boundaries, so
// ^, $ and \b see the same neighbours as in the whole view. A match longer
// than those three lines that spans a junction is not found here.
func (v *view) junctionExcerpts() []*view {
	n := len(v.lower)
	// Offsets of the newlines, once, so each junction finds its lines by a
	// forward-moving index instead of searching (which is quadratic on one
	// long line full of zero-width characters).
	var nls []int
	for i := 0; ; {
		k := bytes.IndexByte(v.lower[i:], '\n')
		if k < 0 {
			break
		}
		nls = append(nls, i+k)
		i += k + 1
	}
	lineStart := func(li int) int { // li: line number, 0-based
		if li <= 0 {
			return 0
		}
		return nls[li-1] + 1
	}
	lineEnd := func(li int) int {
		if li >= len(nls) {
			return n
		}
		return nls[li]
	}
	var ranges [][2]int
	li := 0 // the line of the current junction
	for _, j := range v.junctions {
		for li < len(nls) && nls[li] < j {
			li++
		}
		a, b := lineStart(li-1), lineEnd(li+1)
		if k := len(ranges) - 1; k >= 0 && a <= ranges[k][1]+1 {
			ranges[k][1] = max(ranges[k][1], b)
			continue
		}
		ranges = append(ranges, [2]int{a, b})
	}
	out := make([]*view, 0, len(ranges))
	for _, r := range ranges {
		out = append(out, &view{
			orig: v.orig[r[0]:r[1]], lower: v.lower[r[0]:r[1]], off: v.off[r[0]:r[1]], base: v.base,
		})
	}
	return out
}

// newTextView builds a view of a standalone text (a decoded base64 run).
func newTextView(t string) *view { return newView(t, nil, nil, false) }

// toOrig maps a span of the view to the primary text, widened to whole
// characters there.
func (v *view) toOrig(sp span) span {
	if v.off != nil && sp.e > sp.s {
		sp = span{int(v.off[sp.s]), int(v.off[sp.e-1]) + 1}
	}
	for sp.s > 0 && sp.s < len(v.base) && !utf8.RuneStart(v.base[sp.s]) {
		sp.s--
	}
	for sp.e < len(v.base) && !utf8.RuneStart(v.base[sp.e]) {
		sp.e++
	}
	return sp
}

// lowerASCII writes the ASCII-lowercased src into dst (same length), eight
// bytes at a time where they are all ASCII.
func lowerASCII(dst []byte, src string) {
	n := len(src)
	i := 0
	for ; i+8 <= n; i += 8 {
		w := le64(src[i:])
		if w&0x8080808080808080 == 0 {
			// For bytes below 0x80 these additions cannot carry across
			// bytes: bit 7 of each sum says b >= 'A' and b > 'Z'.
			ge := w + 0x3f3f3f3f3f3f3f3f
			gt := w + 0x2525252525252525
			w |= ((ge &^ gt) & 0x8080808080808080) >> 2
		} else {
			for k := 0; k < 8; k++ {
				c := byte(w >> (8 * k))
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				w = w&^(0xff<<(8*k)) | uint64(c)<<(8*k)
			}
		}
		binary.LittleEndian.PutUint64(dst[i:], w)
	}
	for ; i < n; i++ {
		c := src[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// matchLists runs the patterns of the lists in mask over v and reports each
// match with the sensitivity from which it is withheld from the model.
func (s *Scanner) matchLists(v *view, mask listMask, emit func(label string, sp span, fence Sensitivity)) {
	found := s.viewHints(v)
	if found == 0 {
		return
	}
	for i := range s.patterns {
		p := &s.patterns[i]
		if p.list&mask == 0 || p.hints&found == 0 {
			continue
		}
		if err := p.compile(); err != nil {
			// A defect of the built-in lists, which the tests rule out.
			// Should it happen anyway, the text the pattern could not
			// check counts as its match and is withheld at every
			// sensitivity: fail closed, not unscanned.
			emit(p.label, span{0, len(v.orig)}, Low)
			continue
		}
		p.matches(v, found, func(sp span) { emit(p.label, sp, p.fence) })
	}
}

// viewHints returns the hints that occur in v, scanning once per view.
func (s *Scanner) viewHints(v *view) uint64 {
	if !v.ready {
		v.hints = s.hints.scan(v.lower, v.orig, &v.first)
		v.ready = true
	}
	return v.hints
}

// matches reports the matches of p in v, given the hints found in v.
func (p *pattern) matches(v *view, found uint64, emit func(span)) {
	buf := v.lower
	if p.raw {
		buf = v.origBytes()
	}
	if p.variants == nil {
		for _, m := range p.full.FindAllIndex(buf, -1) {
			emit(span{m[0], m[1]})
		}
		return
	}
	for i := range p.variants {
		w := &p.variants[i]
		// The prefix is a hint too: a variant whose prefix does not occur
		// has no match, and the search starts at its first occurrence.
		if found&(1<<w.prefixHint) == 0 {
			continue
		}
		w.matches(buf, v.occurrences(w, buf, p.raw), &v.spaces, emit)
	}
}

// maxLits bounds the required literals tracked per variant.
const maxLits = 8

// matches finds the matches of one variant in buf, leftmost first: each
// occurrence of the prefix is a candidate start; the removed leading
// assertion and the prefilters are checked there, and the anchored regexp
// runs over a window that holds every match starting there.
func (w *variant) matches(buf []byte, occ []int32, spaces *spaceIndex, emit func(span)) {
	s := variantScan{w: w, buf: buf, spaces: spaces}
	for i := range s.next {
		s.next[i] = -2
	}
	pos := 0
	for _, o := range occ {
		p := int(o)
		if p < pos {
			continue // inside a match already reported, or skipped
		}
		start := p
		pos = p + 1
		if w.wordStart || w.lineStart {
			var ok bool
			if start, pos, ok = s.anchor(p); !ok {
				continue
			}
		}
		q := p + len(w.prefix)
		if w.complete {
			emit(span{start, q})
			pos = q
			continue
		}
		// The cheap prefilters, in the loop because most candidates end
		// here: the bytes that may follow the prefix, and the first
		// required literal, which must occur somewhere after it before
		// any window is worth measuring.
		if w.follow != nil && (q >= len(buf) || !w.follow[buf[q]]) {
			continue
		}
		if len(w.lits) > 0 && s.litAt(0, q) < 0 {
			continue
		}
		limit := s.window(p, q)
		if len(w.lits) > 0 && !s.litsWithin(q, limit) {
			continue
		}
		if e, ok := s.matchAt(p, limit); ok {
			emit(span{start, e})
			if e > p {
				pos = e
			}
		}
	}
}

// variantScan is the state of one variant's search through one buffer,
// carried from one candidate start to the next (they only increase).
type variantScan struct {
	w      *variant
	buf    []byte
	spaces *spaceIndex
	// The budget window: count is the number of non-whitespace bytes in
	// [from, end). Its end only moves forward.
	from, end, count int
	// next[i] caches the next occurrence of lits[i] at or after
	// nextFrom[i] (-1: none left, -2: not looked for yet).
	next, nextFrom [maxLits]int
}

// anchor checks, for the candidate at prefix offset p, the assertion that
// was removed from the front of the variant (\b or ^, the latter allowing
// an indent). It returns where a match starting there would begin, and the
// offset from which the next candidate is worth trying: past p, or, when
// the assertion fails, past the stretch where it fails as well.
func (s *variantScan) anchor(p int) (start, resume int, ok bool) {
	w, buf, n := s.w, s.buf, len(s.buf)
	resume, start = p+1, p
	if w.wordStart && p > 0 && isWordByte(buf[p-1]) {
		// \b fails inside a word, so no match starts before it ends.
		for resume < n && isWordByte(buf[resume]) {
			resume++
		}
		return 0, resume, false
	}
	if !w.lineStart {
		return start, resume, true
	}
	for w.indent && start > 0 && (buf[start-1] == ' ' || buf[start-1] == '\t') {
		start--
	}
	if start > 0 && buf[start-1] != '\n' {
		// ^ cannot hold later on this line either.
		if nl := bytes.IndexByte(buf[resume:], '\n'); nl >= 0 {
			return 0, resume + nl + 1, false
		}
		return 0, n, false
	}
	return start, resume, true
}

// litAt returns the offset of the first occurrence of lits[i] at or after
// at, or -1. Candidates only move forward, so a cached occurrence stays
// good until the search passes it.
func (s *variantScan) litAt(i, at int) int {
	if s.nextFrom[i] <= at && (s.next[i] == -1 || s.next[i] >= at) {
		return s.next[i]
	}
	k := bytes.Index(s.buf[at:], s.w.lits[i].b)
	if k >= 0 {
		k += at
	}
	s.next[i], s.nextFrom[i] = k, at
	return k
}

// window returns the end of the window that holds every match of the
// variant starting at p (its prefix ends at q): the end of the
// non-whitespace run for a variant without spaces, else as far as the
// variant's budget of non-whitespace bytes reaches.
func (s *variantScan) window(p, q int) int {
	w, buf, n := s.w, s.buf, len(s.buf)
	limit := n
	switch {
	case w.noSpace:
		// The match lies within this run of non-whitespace.
		limit = q
		for limit < n && !isSpaceByte(buf[limit]) {
			limit++
		}
	case w.budget > farBudget:
		limit = s.spaces.after(buf, p, w.budget)
	case w.budget >= 0:
		// Advance the window to start at p: drop the non-whitespace
		// bytes before p, then extend until the budget is used up.
		from, end, count := s.from, s.end, s.count
		if end < p {
			from, end, count = p, p, 0
		}
		for ; from < p; from++ {
			if !isSpaceByte(buf[from]) {
				count--
			}
		}
		for end < n && (isSpaceByte(buf[end]) || count < w.budget) {
			if !isSpaceByte(buf[end]) {
				count++
			}
			end++
		}
		s.from, s.end, s.count = from, end, count
		limit = end
	}
	return withLookahead(buf, limit)
}

// withLookahead extends the end of a window by the next character (when
// there is one), so that \b and $ at a match's end see the same neighbour
// as in the whole text; no match can consume it.
func withLookahead(buf []byte, end int) int {
	n := len(buf)
	if end < n {
		end++
		for end < n && !utf8.RuneStart(buf[end]) {
			end++
		}
	}
	return end
}

// litsWithin reports whether the required literals occur in order after q,
// each ending within limit and within its bound of lines from q.
func (s *variantScan) litsWithin(q, limit int) bool {
	at := q
	for i := range s.w.lits {
		l := &s.w.lits[i]
		j := s.litAt(i, at)
		if j < 0 || j+len(l.b) > limit || l.newlines >= 0 && !withinLines(s.buf, q, j, l.newlines) {
			return false
		}
		at = j + len(l.b)
	}
	return true
}

// matchAt runs the variant's matcher at p over buf[p:limit] and returns the
// end of the match.
func (s *variantScan) matchAt(p, limit int) (end int, ok bool) {
	w, buf := s.w, s.buf
	if w.run != nil {
		return w.runMatch(buf, p, limit, s.spaces)
	}
	var m []int
	if w.bounds == nil {
		m = w.anchored.FindIndex(buf[p:limit])
	} else {
		m = w.anchored.FindSubmatchIndex(buf[p:limit])
		for i, b := range w.bounds {
			if m == nil {
				break
			}
			if c := utf8.RuneCount(buf[p+m[2+2*i] : p+m[3+2*i]]); c < b.min || c > b.max {
				// Rare: the relaxed path overran a bound; only the
				// exact pattern knows whether a shorter one matches.
				m = w.exact.FindIndex(buf[p:limit])
				break
			}
		}
	}
	if m == nil {
		return 0, false
	}
	return p + m[1], true
}

// occurrences returns the offsets of w's prefix in buf (the view's lowered
// copy, or its original for raw patterns), found once per view and shared
// by every variant with the same prefix ("curl" starts three of them).
func (v *view) occurrences(w *variant, buf []byte, raw bool) []int32 {
	key := w.prefix
	if raw {
		key = "\x00" + key // case-sensitive, on the original
	}
	for _, o := range v.occ {
		if o.key == key {
			return v.occBuf[o.s:o.e:o.e]
		}
	}
	s := len(v.occBuf)
	for pos := int(v.first[w.prefixHint]); ; {
		p := w.nextPrefix(buf, pos)
		if p < 0 {
			break
		}
		v.occBuf = append(v.occBuf, int32(p))
		pos = p + 1
	}
	v.occ = append(v.occ, prefixOcc{key, s, len(v.occBuf)})
	// The full slice expression keeps a caller's append from writing
	// into the next prefix's offsets.
	return v.occBuf[s:len(v.occBuf):len(v.occBuf)]
}

// nextPrefix returns the next occurrence of the prefix at or after pos, or
// -1. It searches for the prefix's rarest byte, so that a prefix starting
// with a common letter ("new") does not stop at every 'n'.
func (w *variant) nextPrefix(buf []byte, pos int) int {
	a := w.anchor
	pre := w.prefixB
	c := pre[a]
	for i := pos + a; i < len(buf); {
		k := bytes.IndexByte(buf[i:], c)
		if k < 0 {
			return -1
		}
		i += k
		p := i - a
		if p+len(pre) <= len(buf) && string(buf[p:p+len(pre)]) == string(pre) {
			return p
		}
		i++
	}
	return -1
}

// runMatch matches a variant with a leading run at candidate p: the run is
// measured with a byte loop and only what follows it goes to a regexp, over
// a window of its own. It returns the match end.
func (w *variant) runMatch(buf []byte, p, limit int, spaces *spaceIndex) (int, bool) {
	r := w.run
	a := p + r.offset
	e := a
	for e < len(buf) && r.class[buf[e]] {
		e++
	}
	if e-a < r.min || e > limit {
		return 0, false
	}
	restLimit := limit
	if r.budget >= 0 {
		restLimit = min(limit, windowEnd(buf, e, r.budget, spaces))
	}
	m := r.rest.FindIndex(buf[e:restLimit])
	if m == nil {
		return 0, false
	}
	return e + m[1], true
}

// windowEnd returns the end of the window that starts at p and holds b
// non-whitespace bytes, plus the next character as lookahead.
func windowEnd(buf []byte, p, b int, spaces *spaceIndex) int {
	n := len(buf)
	var end int
	if b > farBudget {
		end = spaces.after(buf, p, b)
	} else {
		end = p
		for count := 0; end < n && (isSpaceByte(buf[end]) || count < b); end++ {
			if !isSpaceByte(buf[end]) {
				count++
			}
		}
	}
	return withLookahead(buf, end)
}

// withinLines reports whether buf[from:to] holds at most n newlines.
func withinLines(buf []byte, from, to, n int) bool {
	for ; n >= 0; n-- {
		k := bytes.IndexByte(buf[from:to], '\n')
		if k < 0 {
			return true
		}
		from += k + 1
	}
	return false
}

// isSpaceByte reports RE2's \s.
func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// farBudget is the window budget above which a window is found through a
// spaceIndex rather than by walking byte by byte.
const farBudget = 256

// spaceIndex counts the non-whitespace bytes of a buffer in 64-byte blocks,
// so the end of a window of b non-whitespace bytes is found without
// walking the window.
type spaceIndex struct {
	built bool
	cum   []int32 // cum[k]: non-whitespace bytes in buf[:64k]
}

// after returns the offset of the first non-whitespace byte past the b
// that follow p (whitespace is free), or len(buf).
func (x *spaceIndex) after(buf []byte, p, b int) int {
	if !x.built {
		x.build(buf)
	}
	n := len(buf)
	// Non-whitespace bytes before p.
	blk := p >> 6
	before := int(x.cum[blk])
	for i := blk << 6; i < p; i++ {
		if !isSpaceByte(buf[i]) {
			before++
		}
	}
	target := before + b // the answer is the non-whitespace byte with this index
	// The last block that starts with fewer than target+1 such bytes.
	lo, hi := blk, len(x.cum)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if int(x.cum[mid]) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	count := int(x.cum[lo])
	i := max(lo<<6, p)
	if i == p {
		count = before
	}
	for ; i < n; i++ {
		if !isSpaceByte(buf[i]) {
			if count == target {
				return i
			}
			count++
		}
	}
	return n
}

func (x *spaceIndex) build(buf []byte) {
	x.built = true
	x.cum = make([]int32, len(buf)/64+2)
	total := 0
	k := 0
	for ; k*64+64 <= len(buf); k++ {
		x.cum[k] = int32(total)
		blk := buf[k*64 : k*64+64]
		spaces := 0
		for j := 0; j < 64; j += 8 {
			w := binary.LittleEndian.Uint64(blk[j:])
			m := equalTo(w, ' ') | equalTo(w, '\t') | equalTo(w, '\n') | equalTo(w, '\f') | equalTo(w, '\r')
			spaces += bits.OnesCount64(m)
		}
		total += 64 - spaces
	}
	x.cum[k] = int32(total)
	for i := k * 64; i < len(buf); i++ {
		if !isSpaceByte(buf[i]) {
			total++
		}
	}
	x.cum[k+1] = int32(total)
}
