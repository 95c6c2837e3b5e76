package scan

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// span is a byte range [s, e) of a text.
type span struct{ s, e int }

// pattern is one compiled list entry.
type pattern struct {
	label string
	list  listMask
	raw   bool
	hints uint64 // ids in the scanner's hintIndex
	// variants are the literal-prefixed forms the pattern runs as. When
	// the pattern cannot be split that way, full (the pattern as written)
	// runs over the whole text instead.
	variants []variant
	full     *regexp.Regexp
}

// variant is one literal-prefixed alternative of a pattern. Go's regexp
// jumps between occurrences of a literal prefix with a fast substring
// search; a pattern without one (a leading alternation, \b or ^) steps
// through every byte, which is what made the naive scanner slow. Leading
// assertions are removed from the regexp and checked by hand at the match
// start, where the surrounding text is visible.
type variant struct {
	re        *regexp.Regexp
	wordStart bool // a leading \b was removed
	lineStart bool // a leading (?m)^ was removed
	indent    bool // with lineStart: a [ \t]* after the ^ was removed too
}

// compilePatterns compiles the lists and registers their hints.
func compilePatterns(defs []patternDef) ([]pattern, hintIndex, error) {
	var idx hintIndex
	out := make([]pattern, 0, len(defs))
	for _, d := range defs {
		p, err := compilePattern(d, &idx)
		if err != nil {
			return nil, hintIndex{}, fmt.Errorf("pattern %s: %w", d.label, err)
		}
		out = append(out, p)
	}
	return out, idx, nil
}

func compilePattern(d patternDef, idx *hintIndex) (pattern, error) {
	p := pattern{label: d.label, list: d.list, raw: d.raw}
	if strings.Contains(d.re, "(?i)") {
		return p, fmt.Errorf("uses (?i); write it in lowercase or mark it raw")
	}
	if len(d.hints) == 0 {
		return p, fmt.Errorf("has no hints")
	}
	for _, h := range d.hints {
		if !isASCII(h) || (!d.raw && strings.ToLower(h) != h) {
			return p, fmt.Errorf("hint %q must be lowercase ASCII", h)
		}
		id, err := idx.add(h, d.raw)
		if err != nil {
			return p, err
		}
		p.hints |= 1 << id
	}
	var err error
	if p.full, err = regexp.Compile(d.re); err != nil {
		return p, err
	}
	tree, err := syntax.Parse(d.re, syntax.Perl)
	if err != nil {
		return p, err
	}
	if !d.raw && hasUpperLiteral(tree) {
		return p, fmt.Errorf("has an uppercase literal but runs on the lowercased text")
	}
	p.variants, err = splitVariants(tree)
	if err != nil {
		// Correct but slow: the pattern runs as written.
		p.variants = nil
	}
	return p, nil
}

// splitVariants turns a parsed pattern into literal-prefixed variants: a
// leading \b or (?m)^[ \t]* is removed (and checked by hand when matching)
// and a leading alternation becomes one variant per branch. It fails when a
// variant would still lack a literal prefix.
func splitVariants(tree *syntax.Regexp) ([]variant, error) {
	var out []variant
	for _, alt := range alternatives(tree) {
		subs := flatten(alt)
		var v variant
		switch {
		case len(subs) > 0 && subs[0].Op == syntax.OpWordBoundary:
			v.wordStart = true
			subs = subs[1:]
		case len(subs) > 0 && subs[0].Op == syntax.OpBeginLine:
			v.lineStart = true
			subs = subs[1:]
			if len(subs) > 0 && isIndent(subs[0]) {
				v.indent = true
				subs = subs[1:]
			}
		}
		for _, rest := range alternatives(concat(subs)) {
			w := v
			re, err := regexp.Compile(rest.String())
			if err != nil {
				return nil, err
			}
			prefix, _ := re.LiteralPrefix()
			if prefix == "" {
				return nil, fmt.Errorf("variant %q has no literal prefix", rest.String())
			}
			if w.wordStart && !isWordByte(prefix[0]) {
				// \b before a non-word character means something else; the
				// hand check below assumes the match starts a word.
				return nil, fmt.Errorf("variant %q: \\b before a non-word character", rest.String())
			}
			w.re = re
			out = append(out, w)
		}
	}
	return out, nil
}

// alternatives distributes a leading alternation: (a|b)c → ac, bc. Captures
// are dropped; the scanner uses whole-match spans only.
func alternatives(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return alternatives(re.Sub[0])
	case syntax.OpAlternate:
		var out []*syntax.Regexp
		for _, sub := range re.Sub {
			out = append(out, alternatives(sub)...)
		}
		return out
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return []*syntax.Regexp{re}
		}
		heads := alternatives(re.Sub[0])
		if len(heads) == 1 && heads[0] == re.Sub[0] {
			// The parser factors common prefixes out of alternations
			// ("invoke-webrequest|iwr" → i(?:nvoke-webrequest|wr)); a prefix
			// that short would match nearly everywhere, so distribute again.
			if re.Sub[0].Op == syntax.OpLiteral && len(re.Sub[0].Rune) < 3 && len(re.Sub) > 1 {
				if next := unwrapCapture(re.Sub[1]); next.Op == syntax.OpAlternate {
					var out []*syntax.Regexp
					for _, b := range next.Sub {
						parts := append([]*syntax.Regexp{re.Sub[0], b}, re.Sub[2:]...)
						out = append(out, alternatives(concat(parts))...)
					}
					return out
				}
			}
			return []*syntax.Regexp{re}
		}
		var out []*syntax.Regexp
		for _, h := range heads {
			out = append(out, alternatives(concat(append([]*syntax.Regexp{h}, re.Sub[1:]...)))...)
		}
		return out
	}
	return []*syntax.Regexp{re}
}

func unwrapCapture(re *syntax.Regexp) *syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	return re
}

// flatten returns the elements of a concatenation, nested ones inlined.
func flatten(re *syntax.Regexp) []*syntax.Regexp {
	if re.Op == syntax.OpCapture {
		return flatten(re.Sub[0])
	}
	if re.Op != syntax.OpConcat {
		return []*syntax.Regexp{re}
	}
	var out []*syntax.Regexp
	for _, sub := range re.Sub {
		out = append(out, flatten(sub)...)
	}
	return out
}

func concat(subs []*syntax.Regexp) *syntax.Regexp {
	var flat []*syntax.Regexp
	for _, s := range subs {
		if s.Op == syntax.OpConcat {
			flat = append(flat, flatten(s)...)
		} else {
			flat = append(flat, s)
		}
	}
	if len(flat) == 1 {
		return flat[0]
	}
	if len(flat) == 0 {
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: flat}
}

// isIndent reports [ \t]* (or a subset of it).
func isIndent(re *syntax.Regexp) bool {
	if re.Op != syntax.OpStar || re.Sub[0].Op != syntax.OpCharClass {
		return false
	}
	r := re.Sub[0].Rune
	for i := 0; i+1 < len(r); i += 2 {
		for c := r[i]; c <= r[i+1]; c++ {
			if c != ' ' && c != '\t' {
				return false
			}
		}
	}
	return true
}

func hasUpperLiteral(re *syntax.Regexp) bool {
	if re.Op == syntax.OpLiteral {
		for _, r := range re.Rune {
			if r >= 'A' && r <= 'Z' {
				return true
			}
		}
	}
	for _, sub := range re.Sub {
		if hasUpperLiteral(sub) {
			return true
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

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
	ready bool
}

// newView builds the primary view of t. In the lowered copy, the bytes of
// deleted characters become spaces: the offsets stay, and a zero-width
// space used as a word separator still separates words.
func newView(t string, deleted []span, _ bool) *view {
	v := &view{orig: t, base: t, lower: make([]byte, len(t))}
	lowerASCII(v.lower, t)
	for _, sp := range deleted {
		for i := sp.s; i < sp.e; i++ {
			v.lower[i] = ' '
		}
	}
	return v
}

// newCompactView builds the view with the deleted characters removed.
func newCompactView(t string, deleted []span) *view {
	var sb strings.Builder
	sb.Grow(len(t))
	off := make([]int32, 0, len(t))
	last := 0
	for _, sp := range deleted {
		sb.WriteString(t[last:sp.s])
		for i := last; i < sp.s; i++ {
			off = append(off, int32(i))
		}
		last = sp.e
	}
	sb.WriteString(t[last:])
	for i := last; i < len(t); i++ {
		off = append(off, int32(i))
	}
	c := sb.String()
	v := &view{orig: c, base: t, lower: make([]byte, len(c)), off: off}
	lowerASCII(v.lower, c)
	return v
}

// newTextView builds a view of a standalone text (a decoded base64 run).
func newTextView(t string) *view {
	v := &view{orig: t, base: t, lower: make([]byte, len(t))}
	lowerASCII(v.lower, t)
	return v
}

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
		w := uint64(src[i]) | uint64(src[i+1])<<8 | uint64(src[i+2])<<16 | uint64(src[i+3])<<24 |
			uint64(src[i+4])<<32 | uint64(src[i+5])<<40 | uint64(src[i+6])<<48 | uint64(src[i+7])<<56
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
		d := dst[i : i+8 : i+8]
		d[0], d[1], d[2], d[3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
		d[4], d[5], d[6], d[7] = byte(w>>32), byte(w>>40), byte(w>>48), byte(w>>56)
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
// match.
func (s *Scanner) matchLists(v *view, mask listMask, emit func(label string, sp span)) {
	if !v.ready {
		v.hints = s.hints.scan(v.lower, v.orig)
		v.ready = true
	}
	if v.hints == 0 {
		return
	}
	for i := range s.patterns {
		p := &s.patterns[i]
		if p.list&mask == 0 || p.hints&v.hints == 0 {
			continue
		}
		p.matches(v, func(sp span) { emit(p.label, sp) })
	}
}

// matches reports the matches of p in v, leftmost first.
func (p *pattern) matches(v *view, emit func(span)) {
	if p.variants == nil {
		if p.raw {
			for _, m := range p.full.FindAllStringIndex(v.orig, -1) {
				emit(span{m[0], m[1]})
			}
			return
		}
		for _, m := range p.full.FindAllIndex(v.lower, -1) {
			emit(span{m[0], m[1]})
		}
		return
	}
	for i := range p.variants {
		p.variants[i].matches(v, p.raw, emit)
	}
}

// matches runs one variant over the view, checking the removed leading
// assertion at each match start.
func (w *variant) matches(v *view, raw bool, emit func(span)) {
	n := len(v.lower)
	at := func(i int) byte { return v.lower[i] }
	find := func(pos int) []int { return w.re.FindIndex(v.lower[pos:]) }
	if raw {
		at = func(i int) byte { return v.orig[i] }
		find = func(pos int) []int { return w.re.FindStringIndex(v.orig[pos:]) }
	}
	for pos := 0; pos <= n; {
		loc := find(pos)
		if loc == nil {
			return
		}
		s, e := pos+loc[0], pos+loc[1]
		if w.wordStart && s > 0 && isWordByte(at(s-1)) {
			// \b fails inside a word, so no match can start before the
			// word ends.
			pos = s + 1
			for pos < n && isWordByte(at(pos)) {
				pos++
			}
			continue
		}
		if w.lineStart {
			ls := s
			if w.indent {
				for ls > 0 && (at(ls-1) == ' ' || at(ls-1) == '\t') {
					ls--
				}
			}
			if ls > 0 && at(ls-1) != '\n' {
				// ^ cannot hold later on this line either.
				pos = s + 1
				for pos < n && at(pos-1) != '\n' {
					pos++
				}
				continue
			}
			s = ls
		}
		emit(span{s, e})
		pos = e
		if e == s {
			pos++
		}
	}
}
