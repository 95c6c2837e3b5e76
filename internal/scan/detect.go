package scan

import (
	"unicode"
	"unicode/utf8"
)

// Detector labels (docs/design/checks.md#scanner-detectors).
const (
	labelInvisible   = "invisible_chars"
	labelBidi        = "bidi_control_chars"
	labelLargeBlob   = "large_base64_blob"
	labelLookalike   = "cyrillic_greek_lookalike"
	labelCyrGreekOne = "cyrillic_greek_single"
	labelTagSmuggled = "tag_smuggled_injection"
)

// ASCII byte classes of the detector pass.
const (
	clsB64Std = 1 << iota // [A-Za-z0-9+/]: large_base64_blob runs
	clsB64Any             // [A-Za-z0-9+/_-]: base64 candidate runs (docs/design/checks.md#prompt-scan step 5)
	clsLetter             // [A-Za-z]: Latin letters of a word
	clsHex                // [0-9A-Fa-f]
	clsBrace              // bytes the brace matcher acts on: { } " \ newline
)

func newClassTable() *[256]uint8 {
	var t [256]uint8
	for c := 0; c < 256; c++ {
		b := byte(c)
		alnum := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
		if alnum || b == '+' || b == '/' {
			t[c] |= clsB64Std
		}
		if alnum || b == '+' || b == '/' || b == '_' || b == '-' {
			t[c] |= clsB64Any
		}
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' {
			t[c] |= clsLetter
		}
		if b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' {
			t[c] |= clsHex
		}
		switch b {
		case '{', '}', '"', '\\', '\n':
			t[c] |= clsBrace
		}
	}
	return &t
}

// isInvisible reports the characters of invisible_chars: the
// docs/design/checks.md#scanner-detectors set (U+200B–U+200D, U+2060, U+FEFF,
// U+00AD, U+180E) plus the invisible operators U+2061–U+2064 and the tag
// block U+E0000–U+E007F, which can smuggle ASCII text past a reader ("tag
// smuggling").
func isInvisible(r rune) bool {
	switch {
	case r == 0x00AD, r == 0x180E, r >= 0x200B && r <= 0x200D, r >= 0x2060 && r <= 0x2064, r == 0xFEFF:
		return true
	case r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// isBidi reports the characters of bidi_control_chars
// (docs/design/checks.md#scanner-detectors): embeddings, overrides and
// isolates, which can make text display in another order than it is read
// ("trojan source"), and the invisible direction marks U+200E, U+200F and
// U+061C, which split a word for a pattern ("ign\u200eore") while the model
// reads it whole.
func isBidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

// isConfusableUpper reports the uppercase Cyrillic and Greek letters that
// render like Latin capitals: АВЕКМНОРСТХ and ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ
// (docs/design/checks.md#scanner-detectors).
func isConfusableUpper(r rune) bool {
	switch r {
	case 'А', 'В', 'Е', 'К', 'М', 'Н', 'О', 'Р', 'С', 'Т', 'Х',
		'Α', 'Β', 'Ε', 'Ζ', 'Η', 'Ι', 'Κ', 'Μ', 'Ν', 'Ο', 'Ρ', 'Τ', 'Υ', 'Χ':
		return true
	}
	return false
}

// microSign is U+03BC: NFKC turns the micro sign U+00B5 into it, so Go's
// "35µs" durations would otherwise read as a Greek-Latin mixed word.
const microSign = 'μ'

// word tracks one maximal \p{L}\p{M} run for the mixed-script detectors.
// Invisible and bidi characters do not end a word: they are deleted before
// the model reads the text, which joins the letters around them.
type word struct {
	active          bool
	start, end      int
	letters         int
	latin           int
	cyrillic, greek int
	allConfusable   bool
	microFirst      bool
}

func (w *word) add(r rune, pos, size int) {
	if !w.active {
		*w = word{active: true, start: pos, allConfusable: true, microFirst: r == microSign}
	}
	w.end = pos + size
	if unicode.IsMark(r) {
		w.allConfusable = false
		return
	}
	w.letters++
	switch {
	case r < utf8.RuneSelf || unicode.Is(unicode.Latin, r):
		w.latin++
		w.allConfusable = false
	case unicode.Is(unicode.Cyrillic, r):
		w.cyrillic++
		w.allConfusable = w.allConfusable && isConfusableUpper(r)
	case unicode.Is(unicode.Greek, r):
		w.greek++
		w.allConfusable = w.allConfusable && isConfusableUpper(r)
	default:
		w.allConfusable = false
	}
}

// microUnit reports a unit word such as "μs" or "μmol": the micro sign
// followed only by Latin letters.
func (w *word) microUnit() bool {
	return w.microFirst && w.greek == 1 && w.cyrillic == 0 && w.latin == w.letters-1 && w.letters <= 4
}

// lookalike reports cyrillic_greek_lookalike for the finished word: Latin
// mixed with Cyrillic or Greek, or at least three letters all drawn from
// the uppercase confusables.
func (w *word) lookalike() bool {
	if w.microUnit() {
		return false
	}
	if w.latin > 0 && w.cyrillic+w.greek > 0 {
		return true
	}
	return w.latin == 0 && w.letters >= 3 && w.allConfusable
}

// cyrGreek reports whether the word has a Cyrillic or Greek letter other
// than a unit's micro sign (cyrillic_greek_single).
func (w *word) cyrGreek() bool { return w.cyrillic+w.greek > 0 && !w.microUnit() }

// b64run is a base64 candidate run: [s, e) covers the maximal
// [A-Za-z0-9+/_-] run of at least MinBase64Run characters and up to two
// '='. inv says invisible or bidi characters sit inside it and must be
// stripped before decoding.
type b64run struct {
	s, e int
	inv  bool
}

// text returns the run's text in t, with the invisible and bidi characters
// it holds (inv) removed, as a decoder reads it.
func (r b64run) text(t string) string {
	if r.inv {
		return stripDeleted(t[r.s:r.e])
	}
	return t[r.s:r.e]
}

// detections is the output of the detector pass.
type detections struct {
	deleted   []span // each invisible or bidi character
	invisible bool
	bidi      bool
	lookalike []span
	cyrGreek  bool
	blobs     []span
	runs      []b64run
}

// detect is the one hand-written detector pass
// (docs/design/checks.md#scanner-pipeline,
// docs/design/checks.md#scanner-detectors). It also collects the base64
// candidate runs of the base64 pass.
func (s *Scanner) detect(t string, d *detections) {
	if isASCII(t) {
		s.detectASCII(t, d)
		return
	}
	s.detectUnicode(t, d)
}

// detectASCII handles pure ASCII text, where only the run detectors can
// fire. Runs shorter than MinBase64Run matter to no detector, and a run of
// at least 24 bytes always covers two consecutive 8-byte-aligned words, so
// the pass tests whole words eight bytes at a time and looks at single
// bytes only around pairs of words made entirely of run bytes.
func (s *Scanner) detectASCII(t string, d *detections) {
	cls := s.class
	n := len(t)
	next := 0     // bytes before it belong to runs already handled
	prev := false // the previous aligned word was all run bytes
	for i := 0; i+8 <= n; i += 8 {
		full := b64Word(le64(t[i:]))
		if !full || !prev || i-8 < next {
			prev = full
			continue
		}
		prev = false
		start := i - 8
		for start > next && cls[t[start-1]]&clsB64Any != 0 {
			start--
		}
		end := i + 8
		for end < n && cls[t[end]]&clsB64Any != 0 {
			end++
		}
		s.runAt(t, start, end, d)
		next = end
		i = (end &^ 7) - 8 // the loop resumes at the word holding end
	}
}

// runAt records the maximal run [i, j) of [A-Za-z0-9+/_-] and the blob
// runs inside it.
func (s *Scanner) runAt(t string, i, j int, d *detections) {
	cls := s.class
	end := j + equalsAt(t, j)
	if j-i >= MinBase64Run {
		d.runs = append(d.runs, b64run{s: i, e: end})
	}
	if j-i < LargeBlobRun {
		return
	}
	// Blob runs are the [A-Za-z0-9+/] sub-runs; '-' and '_' split them.
	for k := i; k < j; {
		if cls[t[k]]&clsB64Std == 0 {
			k++
			continue
		}
		m := k + 1
		for m < j && cls[t[m]]&clsB64Std != 0 {
			m++
		}
		if m-k >= LargeBlobRun {
			e := m
			if m == j {
				e = end
			}
			d.blobs = append(d.blobs, span{k, e})
		}
		k = m
	}
}

// SWAR helpers over eight ASCII bytes (each below 0x80, so the additions
// below never carry from one byte into the next). Bit 7 of each byte of
// the result answers the question for that byte.
const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// inRange marks bytes in [lo, hi].
func inRange(w uint64, lo, hi byte) uint64 {
	return (w + ones*uint64(0x80-lo)) &^ (w + ones*uint64(0x7f-hi)) & high
}

// equalTo marks bytes equal to c.
func equalTo(w uint64, c byte) uint64 {
	x := w ^ ones*uint64(c)
	return ^((x&^high + ^uint64(high)) | x) & high
}

// b64Word reports whether all eight bytes are in [A-Za-z0-9+/_-].
func b64Word(w uint64) bool {
	// Most words of text hold a space or punctuation below '+'; that test
	// is cheaper than the full one.
	if inRange(w, 0, '+'-1) != 0 {
		return false
	}
	// Setting bit 5 folds A-Z onto a-z and leaves '+', '-', '/' and the
	// digits as they are; '_' is tested on the original.
	f := w | ones*0x20
	m := inRange(f, 'a', 'z') | inRange(w, '/', '9') | equalTo(w, '+') | equalTo(w, '-') | equalTo(w, '_')
	return m == high
}

// equalsAt counts up to two '=' at t[j:].
func equalsAt(t string, j int) int {
	k := 0
	for k < 2 && j+k < len(t) && t[j+k] == '=' {
		k++
	}
	return k
}

// unicodeDetector is the state of the general detector pass.
type unicodeDetector struct {
	t      string
	d      *detections
	w      word
	anyN   int // length of the current [A-Za-z0-9+/_-] run (transparent characters excluded)
	anyS   int
	anyInv bool
	stdN   int // length of the current [A-Za-z0-9+/] run
	stdS   int
}

func (u *unicodeDetector) endWord() {
	if !u.w.active {
		return
	}
	if u.w.lookalike() {
		u.d.lookalike = append(u.d.lookalike, span{u.w.start, u.w.end})
	}
	if u.w.cyrGreek() {
		u.d.cyrGreek = true
	}
	u.w.active = false
}

// endRuns closes the runs before position i, the first byte not in them;
// up to two '=' there belong to the runs.
func (u *unicodeDetector) endRuns(i int) {
	if u.anyN == 0 && u.stdN == 0 {
		return
	}
	eq := equalsAt(u.t, i)
	if u.anyN >= MinBase64Run {
		u.d.runs = append(u.d.runs, b64run{s: u.anyS, e: i + eq, inv: u.anyInv})
	}
	if u.stdN >= LargeBlobRun {
		u.d.blobs = append(u.d.blobs, span{u.stdS, i + eq})
	}
	u.anyN, u.stdN, u.anyInv = 0, 0, false
}

// detectUnicode is the general pass over text with non-ASCII characters.
// Invisible and bidi characters are transparent: they are deleted from the
// sanitized text, so the runs and words on both sides of them join.
func (s *Scanner) detectUnicode(t string, d *detections) {
	cls := s.class
	u := unicodeDetector{t: t, d: d}
	for i := 0; i < len(t); {
		c := t[i]
		if c < utf8.RuneSelf {
			k := cls[c]
			if k&clsLetter != 0 {
				u.w.add(rune(c), i, 1)
			} else if u.w.active {
				u.endWord()
			}
			switch {
			case k&clsB64Std != 0:
				if u.anyN == 0 {
					u.anyS = i
				}
				if u.stdN == 0 {
					u.stdS = i
				}
				u.anyN++
				u.stdN++
			case k&clsB64Any != 0: // '-' or '_' end a blob run only
				if u.anyN == 0 {
					u.anyS = i
				}
				u.anyN++
				if u.stdN >= LargeBlobRun {
					d.blobs = append(d.blobs, span{u.stdS, i})
				}
				u.stdN = 0
			default:
				u.endRuns(i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(t[i:])
		switch {
		case isInvisible(r) || isBidi(r):
			d.deleted = append(d.deleted, span{i, i + size})
			if isBidi(r) {
				d.bidi = true
			} else {
				d.invisible = true
			}
			if u.anyN > 0 {
				u.anyInv = true
			}
		case unicode.IsLetter(r) || unicode.IsMark(r):
			u.w.add(r, i, size)
			u.endRuns(i)
		default:
			u.endWord()
			u.endRuns(i)
		}
		i += size
	}
	u.endWord()
	u.endRuns(len(t))
}

// detectorHits turns detections into labels and spans at medium and high
// (docs/design/checks.md#scanner-pipeline step 6,
// docs/design/checks.md#scanner-detectors). Look-alike words are withheld
// from the model; a large base64 blob (an ssh-rsa public key, a certificate,
// an image) is evidence and only labeled below high, its decoding is what the
// encoded pass judges. Invisible and bidi characters are deleted from the
// model's copy by ModelView.
func (s *Scanner) detectorHits(d *detections, h *hits) {
	if d.invisible {
		h.label(labelInvisible)
	}
	if d.bidi {
		h.label(labelBidi)
	}
	for _, sp := range d.lookalike {
		h.add(labelLookalike, sp, true)
	}
	for _, sp := range d.blobs {
		h.add(labelLargeBlob, sp, s.sens >= High)
	}
	// cyrillic_greek_single only labels, and only at high.
	if s.sens == High && d.cyrGreek {
		h.label(labelCyrGreekOne)
	}
}

// mixedScript reports whether t has a cyrillic_greek_lookalike word; the
// prompt scan uses it for prompt_mixed_script
// (docs/design/checks.md#prompt-scan step 6).
func (s *Scanner) mixedScript(t string) bool {
	if isASCII(t) {
		return false
	}
	var d detections
	s.detectUnicode(t, &d)
	return len(d.lookalike) > 0
}
