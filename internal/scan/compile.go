package scan

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// span is a byte range [s, e) of a text.
type span struct{ s, e int }

// pattern is one compiled list entry.
type pattern struct {
	label string
	list  listMask
	raw   bool
	fence Sensitivity // withheld from the model from this sensitivity on
	hints uint64      // ids in the scanner's hintIndex
	// variants are the literal-prefixed forms the pattern runs as. When
	// the pattern cannot be split that way, full (the pattern as written,
	// src) runs over the whole text instead.
	variants []variant
	src      string
	full     *regexp.Regexp
	// compile compiles the regexps of the pattern, once. Their prefixes and
	// prefilters are derived from the parsed pattern when the lists are
	// built, but compiling is most of the cost of a scanner and a text
	// without the pattern's hints never needs them, so it waits for the
	// first text that does (docs/operate/performance.md#start-up).
	compile func() error
}

// variant is one literal-prefixed alternative of a pattern. A pattern
// without a literal prefix (a leading alternation, \b or ^) makes Go's
// regexp step through every byte, which is what made the naive scanner slow;
// and even with one, each attempt of its engines costs about a microsecond.
// So a variant is run by hand: find the next occurrence of its prefix, check
// the removed leading assertion and some cheap necessary conditions there,
// and only then run the anchored regexp over a window that provably holds
// any match starting at that occurrence.
type variant struct {
	expr     string         // the variant, unanchored, as a regexp
	re       *regexp.Regexp // expr compiled (its prefix must be prefix)
	anchored *regexp.Regexp // \A(?:variant)
	prefix   string         // every match starts with it
	prefixB  []byte         // prefix, as bytes for bytes.Index
	anchor   int            // offset in prefix of the byte searched for
	complete bool           // the variant matches exactly prefix
	// follow holds the bytes that can come right after the prefix in a
	// match; nil when anything (or nothing) can.
	follow *[256]bool
	// lits are literals every match holds after the prefix, in order.
	lits []reqLit
	// budget is the most non-whitespace bytes a match can hold, or -1
	// when unbounded. Whitespace runs are unbounded in most patterns
	// (\s+), so the window around a candidate is measured in the other
	// bytes.
	budget int
	// noSpace says no match holds whitespace, so a match ends before the
	// first whitespace after its start even when budget is unbounded.
	noSpace bool
	// bounds, when set, are the relaxed repeats of anchored: capture group
	// i+1 must hold between bounds[i].min and bounds[i].max characters,
	// or exact (the unrelaxed anchored variant) decides.
	bounds  []repeatBound
	relaxed string // the relaxed variant, unanchored, as a regexp
	exact   *regexp.Regexp
	// run, when set, is a leading run the matcher measures itself.
	run *runSkip
	// prefixHint is the id of prefix in the scanner's hintIndex.
	prefixHint uint8
	wordStart  bool // a leading \b was removed
	lineStart  bool // a leading (?m)^ was removed
	indent     bool // with lineStart: a [ \t]* after the ^ was removed too
}

// runSkip describes a greedy, unbounded run of one ASCII character class
// that a match must take whole: what follows it cannot start with a byte of
// the class. The matcher measures such a run with a byte loop and gives the
// regexp only what follows, instead of making the regexp's engine step
// through a long run ("=====…", a long base64 token) byte by byte.
type runSkip struct {
	class  [256]bool
	min    int            // the run's minimum length
	offset int            // where the run starts, from the candidate
	expr   string         // what follows the run, as a regexp
	rest   *regexp.Regexp // \A(?:expr)
	budget int            // maxNonSpace of what follows
}

// newRunSkip returns the runSkip for a run element followed by rest, or nil
// when the run does not qualify.
func newRunSkip(run *syntax.Regexp, rest []*syntax.Regexp, offset int) (*runSkip, error) {
	minLen := 0
	switch {
	case run.Op == syntax.OpStar:
	case run.Op == syntax.OpPlus:
		minLen = 1
	case run.Op == syntax.OpRepeat && run.Max < 0:
		minLen = run.Min
	default:
		return nil, nil
	}
	if run.Flags&syntax.NonGreedy != 0 || !oneRune(run.Sub[0]) || run.Sub[0].Op == syntax.OpAnyChar || run.Sub[0].Op == syntax.OpAnyCharNotNL {
		return nil, nil
	}
	r := &runSkip{min: minLen, offset: offset, budget: maxNonSpace(concat(rest))}
	sub := run.Sub[0]
	ranges := sub.Rune
	if sub.Op == syntax.OpLiteral {
		ranges = []rune{sub.Rune[0], sub.Rune[0]}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		if ranges[i+1] >= utf8.RuneSelf {
			return nil, nil // the byte loop handles ASCII classes only
		}
		for c := ranges[i]; c <= ranges[i+1]; c++ {
			r.class[c] = true
		}
	}
	// Taking the run whole is forced only if what follows cannot begin
	// inside it; when what follows can be empty, the whole run is the
	// preferred (greedy) choice and succeeds.
	if first := firstBytes(rest); first != nil {
		for c := range first {
			if first[c] && r.class[c] {
				return nil, nil
			}
		}
	}
	var err error
	if r.expr, err = regexpString(concat(rest)); err != nil {
		return nil, err
	}
	return r, nil
}

// runPrefix returns the literal prefix a leading run of one character
// contributes (c{m,} gives m copies of c), or "".
func runPrefix(re *syntax.Regexp) string {
	if re.Op != syntax.OpRepeat || re.Max >= 0 || re.Min < 1 || re.Sub[0].Op != syntax.OpLiteral || len(re.Sub[0].Rune) != 1 {
		return ""
	}
	return strings.Repeat(string(re.Sub[0].Rune[0]), re.Min)
}

// repeatBound is the original bound of a relaxed repeat.
type repeatBound struct{ min, max int }

// analysedPattern is what compilePattern derives from a pattern's source
// by parsing it: its variants, or none when it runs as written. The
// built-in patterns' are generated (analysedPatterns), so that a process
// does not parse about a hundred regexps before its first scan.
type analysedPattern struct {
	src      string
	variants []variant
}

// compilePatterns compiles the lists and registers their hints. known, by
// index of defs, holds the analysis of each pattern whose source it names;
// the others are parsed.
func compilePatterns(defs []patternDef, known []analysedPattern) ([]pattern, hintIndex, error) {
	var idx hintIndex
	out := make([]pattern, 0, len(defs))
	for i, d := range defs {
		var a *analysedPattern
		if i < len(known) && known[i].src == d.re {
			a = &known[i]
		}
		p, err := compilePattern(d, a, &idx)
		if err != nil {
			return nil, hintIndex{}, fmt.Errorf("pattern %s: %w", d.label, err)
		}
		out = append(out, p)
	}
	for i := range out {
		p := &out[i]
		p.compile = sync.OnceValue(func() error {
			if err := p.compileRegexps(); err != nil {
				return bug(fmt.Errorf("pattern %s: %w", p.label, err))
			}
			return nil
		})
	}
	return out, idx, nil
}

// compileRegexps compiles the regexps the matcher runs: the variants', or
// full when the pattern has none. It checks that each variant's compiled
// prefix is the one derived from the parsed pattern, since the hint pass
// looks for that one.
func (p *pattern) compileRegexps() error {
	var err error
	if p.variants == nil {
		p.full, err = regexp.Compile(p.src)
		return err
	}
	for i := range p.variants {
		w := &p.variants[i]
		if w.re, err = regexp.Compile(w.expr); err != nil {
			return err
		}
		if prefix, complete := w.re.LiteralPrefix(); prefix != w.prefix || complete != w.complete {
			return fmt.Errorf("variant %q: compiled prefix %q (complete %v); derived %q (complete %v)", w.expr, prefix, complete, w.prefix, w.complete)
		}
		if w.anchored, err = regexp.Compile(`\A(?:` + w.expr + `)`); err != nil {
			return err
		}
		if w.bounds != nil {
			w.exact = w.anchored
			if w.anchored, err = regexp.Compile(`\A(?:` + w.relaxed + `)`); err != nil {
				return err
			}
		}
		if w.run != nil {
			if w.run.rest, err = regexp.Compile(`\A(?:` + w.run.expr + `)`); err != nil {
				return err
			}
		}
	}
	return nil
}

// compilePattern checks d, registers its hints and analyses it: its
// analysis is taken from known when known is not nil, else derived from
// its parsed source. Its regexps compile on first use (pattern.compile).
func compilePattern(d patternDef, known *analysedPattern, idx *hintIndex) (pattern, error) {
	p := pattern{label: d.label, list: d.list, raw: d.raw, fence: d.fence}
	if d.fence < Low || d.fence > High {
		return p, fmt.Errorf("fence sensitivity %v", d.fence)
	}
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
	p.src = d.re
	if known != nil {
		p.variants = cloneVariants(known.variants)
	} else {
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
	}
	for i := range p.variants {
		w := &p.variants[i]
		w.prefixB = []byte(w.prefix)
		if !isASCII(w.prefix) {
			return p, fmt.Errorf("variant prefix %q is not ASCII", w.prefix)
		}
		id, err := idx.add(w.prefix, d.raw)
		if err != nil {
			return p, err
		}
		w.prefixHint = uint8(id)
	}
	return p, nil
}

// cloneVariants copies vs for one pattern's use: compiling fills in each
// variant's regexps, its run's included, and must not write to the
// generated analysis every scanner's lists start from.
func cloneVariants(vs []variant) []variant {
	if vs == nil {
		return nil
	}
	out := slices.Clone(vs)
	for i := range out {
		if r := out[i].run; r != nil {
			c := *r
			out[i].run = &c
		}
	}
	return out
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
			w, err := analyseVariant(v, rest)
			if err != nil {
				return nil, err
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// analyseVariant derives one variant's prefix and prefilters; its regexps
// are compiled later (pattern.compile).
func analyseVariant(w variant, rest *syntax.Regexp) (variant, error) {
	expr, err := regexpString(rest)
	if err != nil {
		return w, err
	}
	w.expr = expr
	if w.prefix, w.complete, err = treePrefix(rest, expr); err != nil {
		return w, err
	}
	w.anchor = rarestByte(w.prefix)
	if w.prefix == "" {
		return w, fmt.Errorf("variant %q has no literal prefix", expr)
	}
	if w.wordStart && !isWordByte(w.prefix[0]) {
		// \b before a non-word character means something else; the hand
		// check assumes the match starts a word.
		return w, fmt.Errorf("variant %q: \\b before a non-word character", expr)
	}
	w.budget = maxNonSpace(rest)
	w.noSpace = !canMatchSpace(rest)
	// The prefilters need the elements after the prefix; they are known
	// only when the prefix is spelled by leading literal elements.
	elems := flatten(rest)
	var lead strings.Builder
	k := 0
	for k < len(elems) && elems[k].Op == syntax.OpLiteral && lead.Len() < len(w.prefix) {
		lead.WriteString(string(elems[k].Rune))
		k++
	}
	if lead.String() == w.prefix {
		w.follow = firstBytes(elems[k:])
		for _, l := range requiredLiterals(elems[k:]) {
			if len(w.lits) == maxLits {
				break // a prefix of the list is still a necessary condition
			}
			w.lits = append(w.lits, l)
		}
		if k < len(elems) {
			if w.run, err = newRunSkip(elems[k], elems[k+1:], len(w.prefix)); err != nil {
				return w, err
			}
		}
	} else if k == 0 && len(elems) > 0 && runPrefix(elems[0]) == w.prefix {
		// The prefix is the mandatory part of a leading run (={4,}).
		if w.run, err = newRunSkip(elems[0], elems[1:], 0); err != nil {
			return w, err
		}
	}
	if relaxed, bounds := relaxRepeats(elems); bounds != nil {
		if w.relaxed, err = regexpString(concat(relaxed)); err != nil {
			return w, err
		}
		w.bounds = bounds
	}
	return w, nil
}

// literalPrefix returns what regexp.MustCompile(expr).LiteralPrefix()
// returns, without compiling expr: the literal text every match starts
// with, and whether a match is exactly that text.
func literalPrefix(expr string) (string, bool, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return "", false, err
	}
	if hasBeginText(re) {
		// A program that may start at the beginning of the text has its
		// prefix read differently (it may be one-pass); such variants
		// are rare, so ask the compiler.
		c, err := regexp.Compile(expr)
		if err != nil {
			return "", false, err
		}
		prefix, complete := c.LiteralPrefix()
		return prefix, complete, nil
	}
	var b strings.Builder
	complete := prefixWalk(&b, re)
	return b.String(), complete, nil
}

// treePrefix is literalPrefix(expr) for the parsed form of expr, which the
// lists already hold: parsing every variant again was a good part of
// building a scanner. pattern.compile checks the result against the
// compiled program, and the tests compile every pattern.
func treePrefix(re *syntax.Regexp, expr string) (string, bool, error) {
	if hasBeginText(re) {
		return literalPrefix(expr)
	}
	var b strings.Builder
	complete := prefixWalk(&b, re)
	return b.String(), complete, nil
}

// hasBeginText reports a \A (or ^ outside multi-line mode) anywhere in re.
func hasBeginText(re *syntax.Regexp) bool {
	return re.Op == syntax.OpBeginText || slices.ContainsFunc(re.Sub, hasBeginText)
}

// prefixWalk appends to b the literal characters re starts with, read as
// Go's compiled program reads them: literals (but not case-folded letters)
// and the insides of groups continue the prefix; any choice, class or
// assertion ends it, and so does the loop after the first pass of a +. It
// reports whether all of re was read, so what follows continues the prefix.
func prefixWalk(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == utf8.RuneError || re.Flags&syntax.FoldCase != 0 && unicode.SimpleFold(r) != r {
				return false
			}
			b.WriteRune(r)
		}
		return true
	case syntax.OpCapture:
		return prefixWalk(b, re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !prefixWalk(b, sub) {
				return false
			}
		}
		return true
	case syntax.OpPlus:
		prefixWalk(b, re.Sub[0])
		return false
	case syntax.OpRepeat:
		// x{m,n} is m copies of x, then optional ones (a choice).
		if re.Max == 0 {
			return true
		}
		for range re.Min {
			if !prefixWalk(b, re.Sub[0]) {
				return false
			}
		}
		return re.Min > 0 && re.Max == re.Min
	}
	return false
}

// relaxMin is the smallest repeat bound worth relaxing. A bound of n
// compiles to about 2n instructions, and past 500 Go's regexp leaves its
// backtracker for the much slower NFA.
const relaxMin = 32

// relaxNameTag marks the capture groups relaxRepeats adds; the printer
// writes every other group as non-capturing.
const relaxNameTag = "\x00relax"

// relaxRepeats replaces each large bounded repeat of one character, X{m,n},
// among the top-level elements by X{m,} in a capture group whose length is
// checked after matching. Go's regexp runs a pattern with such a repeat on
// its slow NFA, because the repeat compiles to about 2n instructions. The
// relaxed match is the exact one whenever every captured repeat is within
// its bound: a backtracking search tries the same paths in the same order,
// except that the exact search skips those with a longer repeat, so the
// first relaxed success that respects the bounds is also the first exact
// success. Otherwise the exact pattern decides. It returns nil bounds when
// no repeat qualifies.
func relaxRepeats(elems []*syntax.Regexp) ([]*syntax.Regexp, []repeatBound) {
	out := append([]*syntax.Regexp(nil), elems...)
	var bounds []repeatBound
	for i, e := range out {
		if e.Op != syntax.OpRepeat || e.Max < relaxMin || !oneRune(e.Sub[0]) {
			continue
		}
		loose := *e
		loose.Max = -1
		out[i] = &syntax.Regexp{Op: syntax.OpCapture, Name: relaxNameTag, Sub: []*syntax.Regexp{&loose}}
		bounds = append(bounds, repeatBound{min: e.Min, max: e.Max})
	}
	if bounds == nil {
		return nil, nil
	}
	return out, bounds
}

// oneRune reports an expression that always matches exactly one character.
func oneRune(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpLiteral:
		return len(re.Rune) == 1
	}
	return false
}

// classHas reports whether a character class holds r.
func classHas(cc *syntax.Regexp, r rune) bool {
	for i := 0; i+1 < len(cc.Rune); i += 2 {
		if cc.Rune[i] <= r && r <= cc.Rune[i+1] {
			return true
		}
	}
	return false
}

// isSpaceRune reports RE2's \s, the bytes a window treats as free.
func isSpaceRune(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\f' || r == '\r'
}

// maxNonSpace returns the most non-whitespace bytes a match of re can hold,
// or -1 when that is unbounded.
func maxNonSpace(re *syntax.Regexp) int { return maxPerMatch(re, nonSpaceWidth) }

// nonSpaceWidth is maxNonSpace of one character-matching operator.
func nonSpaceWidth(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if !isSpaceRune(r) {
				n += utf8.RuneLen(r)
			}
		}
		return n
	case syntax.OpCharClass:
		widest, onlySpace := 0, true
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for c := lo; c <= hi && onlySpace; c++ {
				onlySpace = isSpaceRune(c)
			}
			widest = max(widest, utf8Width(hi))
		}
		if onlySpace {
			return 0
		}
		return widest
	}
	return utf8.UTFMax // any character
}

// maxPerMatch returns the most a match of re can hold of some measure
// (bytes other than whitespace, newlines), or -1 when that is unbounded.
// leaf measures the operators that match one character or a literal; the
// operators that combine them add, pick the largest or multiply alike for
// every measure.
func maxPerMatch(re *syntax.Regexp, leaf func(*syntax.Regexp) int) int {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return leaf(re)
	case syntax.OpCapture, syntax.OpQuest:
		return maxPerMatch(re.Sub[0], leaf)
	case syntax.OpStar, syntax.OpPlus:
		return mulBound(maxPerMatch(re.Sub[0], leaf), -1)
	case syntax.OpRepeat:
		return mulBound(maxPerMatch(re.Sub[0], leaf), re.Max)
	case syntax.OpConcat, syntax.OpAlternate:
		// A sequence holds the sum of its parts, an alternation its
		// largest branch.
		total := 0
		for _, sub := range re.Sub {
			n := maxPerMatch(sub, leaf)
			if n < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total
	}
	return 0 // empty-width operators
}

// rarestByte returns the offset of the byte of s least frequent in
// English and log text, the one worth searching for.
func rarestByte(s string) int {
	// Letters from most to least frequent; other bytes (punctuation,
	// digits) count as rarer than any letter.
	const byFrequency = "etaoinsrhldcumfpgwybvkxjqz"
	best, bestRank := 0, -1
	for i := 0; i < len(s); i++ {
		rank := strings.IndexByte(byFrequency, s[i]|0x20)
		if s[i] < 'A' || s[i]|0x20 < 'a' || s[i]|0x20 > 'z' {
			rank = len(byFrequency)
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

// canMatchSpace reports whether a match of re can hold an RE2 \s byte.
func canMatchSpace(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if isSpaceRune(r) {
				return true
			}
		}
		return false
	case syntax.OpCharClass:
		for _, r := range " \t\n\f\r" {
			if classHas(re, r) {
				return true
			}
		}
		return false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	}
	return slices.ContainsFunc(re.Sub, canMatchSpace)
}

// utf8Width returns the UTF-8 length of code points up to r.
func utf8Width(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}

// firstBytes returns the set of bytes that can start a match of the
// element sequence, or nil when it can match the empty string (then any
// byte, or the end of the text, may follow).
func firstBytes(elems []*syntax.Regexp) *[256]bool {
	var set [256]bool
	if nullable := addFirst(&set, elems); nullable {
		return nil
	}
	return &set
}

// addFirst adds the first bytes of the sequence to set and reports whether
// the sequence can match the empty string.
func addFirst(set *[256]bool, elems []*syntax.Regexp) bool {
	for _, e := range elems {
		if !addFirstOne(set, e) {
			return false
		}
	}
	return true
}

func addFirstOne(set *[256]bool, re *syntax.Regexp) (nullable bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return true
		}
		var buf [utf8.UTFMax]byte
		utf8.EncodeRune(buf[:], re.Rune[0])
		set[buf[0]] = true
		return false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for c := lo; c <= hi && c < utf8.RuneSelf; c++ {
				set[c] = true
			}
			if hi >= utf8.RuneSelf {
				// Any byte that can start a non-ASCII rune, or be read as
				// U+FFFD in invalid input.
				for b := utf8.RuneSelf; b < 0x100; b++ {
					set[b] = true
				}
			}
		}
		return false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for b := range set {
			set[b] = true
		}
		return false
	case syntax.OpCapture:
		return addFirstOne(set, re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		addFirstOne(set, re.Sub[0])
		return true
	case syntax.OpPlus:
		return addFirstOne(set, re.Sub[0])
	case syntax.OpRepeat:
		n := addFirstOne(set, re.Sub[0])
		return n || re.Min == 0
	case syntax.OpConcat:
		return addFirst(set, re.Sub)
	case syntax.OpAlternate:
		nullable := false
		for _, sub := range re.Sub {
			if addFirstOne(set, sub) {
				nullable = true
			}
		}
		return nullable
	}
	return true // empty match and empty-width assertions consume nothing
}

// reqLit is a literal every match holds after the prefix, and the most
// newlines the match can hold between the prefix and the literal's start
// (-1: any number). Log-like text is line-shaped, so "the next | must be on
// this line or the next" rules out most candidates without a regexp.
type reqLit struct {
	b        []byte
	newlines int
}

// requiredLiterals returns literals that every match of the sequence holds,
// in order and without overlap: its literal elements (adjacent ones joined)
// and the literal of a + or {n,} of a literal.
func requiredLiterals(elems []*syntax.Regexp) []reqLit {
	var out []reqLit
	var cur strings.Builder
	nl := 0 // newlines possible from the prefix to the current point
	curNL := 0
	add := func(n int) {
		if nl >= 0 {
			if n < 0 {
				nl = -1
			} else {
				nl += n
			}
		}
	}
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, reqLit{b: []byte(cur.String()), newlines: curNL})
			add(strings.Count(cur.String(), "\n"))
			cur.Reset()
		}
	}
	start := func() {
		if cur.Len() == 0 {
			curNL = nl
		}
	}
	for _, e := range elems {
		switch {
		case e.Op == syntax.OpLiteral:
			start()
			cur.WriteString(string(e.Rune))
		case (e.Op == syntax.OpPlus || e.Op == syntax.OpRepeat && e.Min >= 1) && e.Sub[0].Op == syntax.OpLiteral:
			flush()
			start()
			cur.WriteString(string(e.Sub[0].Rune))
			flush()
			// The further repeats.
			if e.Op == syntax.OpPlus || e.Max < 0 {
				add(mulBound(maxNewlines(e.Sub[0]), -1))
			} else {
				add(mulBound(maxNewlines(e.Sub[0]), e.Max-1))
			}
		default:
			flush()
			add(maxNewlines(e))
		}
	}
	flush()
	return out
}

// mulBound multiplies a bound by a repeat count (-1: unbounded).
func mulBound(n, times int) int {
	switch {
	case n == 0:
		return 0
	case n < 0 || times < 0:
		return -1
	}
	return n * times
}

// maxNewlines returns the most newlines a match of re can hold, or -1.
func maxNewlines(re *syntax.Regexp) int { return maxPerMatch(re, newlineCount) }

// newlineCount is maxNewlines of one character-matching operator.
func newlineCount(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return strings.Count(string(re.Rune), "\n")
	case syntax.OpCharClass:
		if classHas(re, '\n') {
			return 1
		}
		return 0
	case syntax.OpAnyChar:
		return 1
	}
	return 0 // OpAnyCharNotNL
}

// regexpString prints a parsed regexp back as RE2 syntax. The standard
// printer computes case-folding flags by walking every rune of every class,
// which costs milliseconds for a class such as [^\n|]; this printer covers
// the operators the lists use and rejects the rest.
func regexpString(re *syntax.Regexp) (string, error) {
	var b strings.Builder
	err := writeRegexp(&b, re)
	return b.String(), err
}

func writeRegexp(b *strings.Builder, re *syntax.Regexp) error {
	if re.Flags&syntax.FoldCase != 0 {
		return fmt.Errorf("case folding is not supported")
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			writeRune(b, r)
		}
	case syntax.OpCharClass:
		b.WriteByte('[')
		for i := 0; i+1 < len(re.Rune); i += 2 {
			writeRune(b, re.Rune[i])
			if re.Rune[i+1] != re.Rune[i] {
				b.WriteByte('-')
				writeRune(b, re.Rune[i+1])
			}
		}
		b.WriteByte(']')
	case syntax.OpAnyCharNotNL:
		b.WriteString("(?-s:.)")
	case syntax.OpAnyChar:
		b.WriteString("(?s:.)")
	case syntax.OpBeginLine:
		b.WriteString("(?m:^)")
	case syntax.OpEndLine:
		b.WriteString("(?m:$)")
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\z`)
	case syntax.OpWordBoundary:
		b.WriteString(`\b`)
	case syntax.OpNoWordBoundary:
		b.WriteString(`\B`)
	case syntax.OpCapture:
		if re.Name == relaxNameTag {
			b.WriteString("(")
		} else {
			b.WriteString("(?:")
		}
		if err := writeRegexp(b, re.Sub[0]); err != nil {
			return err
		}
		b.WriteString(")")
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		b.WriteString("(?:")
		if err := writeRegexp(b, re.Sub[0]); err != nil {
			return err
		}
		b.WriteString(")")
		switch re.Op {
		case syntax.OpStar:
			b.WriteByte('*')
		case syntax.OpPlus:
			b.WriteByte('+')
		case syntax.OpQuest:
			b.WriteByte('?')
		default:
			fmt.Fprintf(b, "{%d,", re.Min)
			if re.Max >= 0 {
				fmt.Fprintf(b, "%d", re.Max)
			}
			b.WriteByte('}')
		}
		if re.Flags&syntax.NonGreedy != 0 {
			b.WriteByte('?')
		}
	case syntax.OpConcat, syntax.OpAlternate:
		b.WriteString("(?:")
		for i, sub := range re.Sub {
			if i > 0 && re.Op == syntax.OpAlternate {
				b.WriteByte('|')
			}
			if err := writeRegexp(b, sub); err != nil {
				return err
			}
		}
		b.WriteString(")")
	default:
		return fmt.Errorf("operator %v is not supported", re.Op)
	}
	return nil
}

// writeRune writes r so that it is literal both inside and outside a class.
func writeRune(b *strings.Builder, r rune) {
	if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
		b.WriteRune(r)
		return
	}
	// By hand, not fmt: the lists print thousands of these per scanner.
	var buf [16]byte
	b.WriteString(`\x{`)
	b.Write(strconv.AppendInt(buf[:0], int64(r), 16))
	b.WriteByte('}')
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
	return slices.ContainsFunc(re.Sub, hasUpperLiteral)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
