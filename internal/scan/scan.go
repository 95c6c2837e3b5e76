package scan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/redact"
)

// Limits of docs/design/checks.md#prompt-scan and
// docs/design/checks.md#output-scanner. Each is tested at its boundary.
const (
	// MaxCollectBytes is what an executor keeps of one stream
	// (docs/design/checks.md#scanner-pipeline step 1).
	MaxCollectBytes = 1 << 20
	// MaxStreamBytes caps one stream before it is scanned
	// (docs/design/checks.md#scanner-pipeline step 2).
	MaxStreamBytes = 64 << 10
	// MaxNormalizedBytes caps one stream after NFKC
	// (docs/design/checks.md#scanner-pipeline step 4).
	MaxNormalizedBytes = 256 << 10
	// MaxScanBytes caps the composed text Scan reads. CapStream bounds each
	// stream, not the composition; this keeps a caller that skipped
	// CapStream from making a scan unboundedly long.
	MaxScanBytes = 1 << 20
	// MaxGoalBytes is the longest goal the prompt scan accepts
	// (docs/design/checks.md#prompt-scan step 1).
	MaxGoalBytes = 16 << 10
	// MinBase64Run is the shortest base64 candidate run
	// (docs/design/checks.md#prompt-scan step 5).
	MinBase64Run = 24
	// MinHexRun is the shortest hex candidate run
	// (docs/design/checks.md#prompt-scan step 5).
	MinHexRun = 32
	// MinBinaryBytes is the shortest decoding checked for executable magic.
	MinBinaryBytes = 16
	// MaxEncodedDepth is how many nested encoding layers are decoded: the
	// text decoded from a run is rescanned once more for runs
	// (docs/design/checks.md#prompt-scan step 5).
	MaxEncodedDepth = 2
	// MaxBase64Runs caps the base64 runs per observation whose decoding is
	// text and is therefore passed on to the structural and injection
	// passes (docs/design/checks.md#scanner-structural).
	MaxBase64Runs = 64
	// LargeBlobRun is the run length of the large_base64_blob detector.
	LargeBlobRun = 500
	// MaxStructuralDepth bounds the action-object search
	// (docs/design/checks.md#scanner-structural).
	MaxStructuralDepth = 16
	// MaxLabelSpans caps the spans a Result records for hits that are
	// labeled but not withheld, so a page full of shell snippets does not
	// bloat the ledger; withheld spans are never capped (the model's copy
	// is rebuilt from them).
	MaxLabelSpans = 256
	// MaxHTMLComment bounds how far the end of an HTML comment is looked
	// for.
	MaxHTMLComment = 4 << 10
)

// WithheldPrefix starts the marker that replaces withheld text in the
// model's copy of an observation: "[WITHHELD:<labels>]".
const WithheldPrefix = "[WITHHELD:"

// Sentinel errors, compared with errors.Is.
var (
	// ErrInvalidSensitivity reports a sensitivity other than low, medium
	// or high.
	ErrInvalidSensitivity = errors.New("ironvise/scan: invalid sensitivity")
)

// Sensitivity selects which passes run and whether hits are redacted
// (docs/design/checks.md#scanner-pipeline step 6). The zero value is invalid,
// so an unset field fails New instead of silently scanning less.
type Sensitivity uint8

// The sensitivities, least to most strict.
const (
	Low Sensitivity = iota + 1
	Medium
	High
)

// String returns the configuration spelling: low, medium or high.
func (s Sensitivity) String() string {
	switch s {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	}
	return fmt.Sprintf("Sensitivity(%d)", uint8(s))
}

// ParseSensitivity reads SCANNER_SENSITIVITY, case-insensitively.
func ParseSensitivity(v string) (Sensitivity, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "low":
		return Low, nil
	case "medium":
		return Medium, nil
	case "high":
		return High, nil
	}
	return 0, fmt.Errorf("scan: parse SCANNER_SENSITIVITY %q (accepted: low, medium, high): %w", v, ErrInvalidSensitivity)
}

// Result is the scanner's verdict on one observation
// (docs/design/checks.md#scanner-pipeline step 7, with the ledger and the
// model reading different copies).
type Result struct {
	// Content is the normalised text with credentials replaced by
	// placeholders ([redact]) and nothing else changed: what the ledger
	// stores. Injection attempts stay in it, as evidence, with Spans
	// saying where they are.
	Content string
	// Spans are the scanner's hits in Content, sorted by start. The
	// Fenced ones are withheld from the model.
	Spans []Span
	// Sanitized is what the model reads: ModelView(Content, Spans).
	Sanitized string
	// Secrets are the credential placeholders in Content.
	Secrets []redact.Replacement
	// Labels are the labels that fired, sorted and unique; never nil.
	Labels []string
	// Suspicious is true when the scanner produced any label. Policy rules
	// ([ApplyRules]) never change it.
	Suspicious bool
	// Truncated is true when Scan itself had to cut the text. Executors OR
	// in the truncation of each stream reported by [CapStream].
	Truncated bool
	// RawSHA256 is the hex SHA-256 of the text given to Scan, so the
	// ledger commits to the unredacted text without storing it.
	RawSHA256 string
}

// Span is a run of bytes of Result.Content that the scanner labeled. Its
// field names are the wire names of an observation event's spans.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
	// Labels are the labels of the hits merged into the span, sorted.
	Labels []string `json:"labels"`
	// Fenced says the model reads "[WITHHELD:<labels>]" instead of the
	// span.
	Fenced bool `json:"fenced"`
}

// Scanner holds the compiled lists for one sensitivity. It is immutable
// after New and safe for concurrent use.
type Scanner struct {
	sens Sensitivity
	*lists
	// untagged redacts credentials for scans that belong to no session.
	untagged *redact.Redactor
	// lowerBufs recycles the primary view's buffers (*viewBufs) between
	// scans.
	lowerBufs sync.Pool
}

// lists are the compiled built-in lists. They do not depend on the
// sensitivity and are never written after compileLists, so every scanner
// of a process shares one copy: compiling them is most of the cost of a
// scanner (docs/operate/performance.md#start-up).
type lists struct {
	patterns []pattern
	hints    hintIndex
	// needles are the hint ids of candidateNeedles, in order.
	needles    [candidateNeedleList]uint8
	needleMask uint64
	class      *[256]uint8
	// payload is the encoded-payload regexp of the prompt scan
	// (docs/design/checks.md#prompt-scan step 5), compiled on first use:
	// most processes never decode a payload. An error counts as a match
	// (fail closed).
	payload func() (*regexp.Regexp, error)
	// htmlHint is the hint id of "<!--" and htmlComment the test of a
	// comment's body (the HTML comment pass), compiled on first use like
	// payload; an error withholds the comment.
	htmlHint    uint8
	htmlComment func() (*regexp.Regexp, error)
}

// builtinLists compiles the built-in lists once per process. A defect in
// them is remembered too, so every New of the process fails, not only the
// first.
var builtinLists = sync.OnceValues(compileLists)

// New builds the scanner for sens. It fails only for an invalid
// sensitivity or a defect in the built-in lists. The lists are compiled by
// the first New of a process and shared by the later ones.
func New(sens Sensitivity) (*Scanner, error) {
	if sens < Low || sens > High {
		return nil, fmt.Errorf("scan: new scanner with %v (accepted: low, medium, high): %w", sens, ErrInvalidSensitivity)
	}
	l, err := builtinLists()
	if err != nil {
		return nil, err
	}
	return newWith(sens, l)
}

// newWith builds the scanner for a valid sens on compiled lists.
func newWith(sens Sensitivity, l *lists) (*Scanner, error) {
	s := &Scanner{sens: sens, lists: l}
	s.lowerBufs.New = func() any { return new(viewBufs) }
	s.untagged = redact.Untagged()
	if err := s.untagged.Err(); err != nil {
		// The redactor fails closed on its own (it withholds every
		// text); a scanner built on it is still safe, but report it.
		return nil, bug(err)
	}
	return s, nil
}

// compileLists compiles the built-in lists and registers their hints.
func compileLists() (*lists, error) { return compileListsFrom(analysedPatterns) }

// compileListsFrom is compileLists with the built-in patterns' analyses
// taken from known (nil: each pattern parsed).
func compileListsFrom(known []analysedPattern) (*lists, error) {
	l := &lists{class: newClassTable()}
	var err error
	if l.patterns, l.hints, err = compilePatterns(builtinPatterns(), known); err != nil {
		return nil, bug(err)
	}
	// The structural needles share the hint pass, so a text without any
	// of them skips brace matching altogether.
	for i, nd := range candidateNeedles() {
		id, err := l.hints.add(nd, false)
		if err != nil {
			return nil, bug(err)
		}
		l.needles[i] = uint8(id)
		l.needleMask |= 1 << id
	}
	id, err := l.hints.add("<!--", false)
	if err != nil {
		return nil, bug(err)
	}
	l.htmlHint = uint8(id)
	l.payload = lazyRegexp(payloadPattern)
	l.htmlComment = lazyRegexp(htmlCommentPattern)
	return l, nil
}

// lazyRegexp compiles a built-in regexp on first use; the tests compile
// every one, and an error is reported as a defect of the lists.
func lazyRegexp(expr string) func() (*regexp.Regexp, error) {
	return sync.OnceValues(func() (*regexp.Regexp, error) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, bug(err)
		}
		return re, nil
	})
}

// Sensitivity returns the sensitivity the scanner was built for.
func (s *Scanner) Sensitivity() Sensitivity { return s.sens }

// Scan scans one composed observation (docs/design/checks.md#scanner-pipeline
// steps 6–7) with credentials redacted by placeholders that carry no tag; a
// session scans with ScanWith and its own redactor. text is normally the
// composition of CapStream outputs; Scan still replaces invalid UTF-8,
// applies NFKC and caps the text at MaxScanBytes itself, so any input is
// safe.
func (s *Scanner) Scan(text string) Result { return s.ScanWith(text, nil) }

// ScanWith is Scan with the credential placeholders of red (a session's
// redactor, whose tags let an auditor confirm a secret); nil means untagged
// placeholders. Credentials are redacted first, at every sensitivity and
// whatever the policy: the scanner and the ledger never see them.
func (s *Scanner) ScanWith(text string, red *redact.Redactor) Result {
	if red == nil {
		red = s.untagged
	}
	res := Result{RawSHA256: sha256Hex(text)}
	t, cut := normalize(text, MaxScanBytes)
	res.Truncated = cut
	bufs := s.lowerBufs.Get().(*viewBufs)
	defer func() {
		// Very large buffers are not kept, so one huge observation does
		// not pin memory for the life of the scanner.
		if cap(bufs.lower) <= 4*MaxStreamBytes && cap(bufs.occ) <= MaxStreamBytes {
			s.lowerBufs.Put(bufs)
		}
	}()
	var lowered bool
	t, res.Secrets, lowered = s.redactSecrets(t, red, bufs)

	h := newHits()
	s.scanText(t, h, bufs, lowered)

	res.Content = t
	res.Labels = h.sortedLabels()
	res.Suspicious = len(res.Labels) > 0
	res.Spans = h.spans(t)
	res.Sanitized = ModelView(t, res.Spans)
	return res
}

// redactSecrets replaces the credentials of t. The model's copy drops
// invisible and bidi characters, which would join a secret split by them
// ("AKIA\u200bIOSF…") into a whole one; so when t has such characters the
// secrets are looked for in t without them (where every secret of t is
// found too), and replaced, with the characters inside them, in t.
//
// For ASCII text, the redactor reads the lowercased copy of t the scanner's
// passes need, made in bufs.lower; lowered reports that bufs.lower still
// holds that copy of the returned text (nothing was replaced).
func (s *Scanner) redactSecrets(t string, red *redact.Redactor, bufs *viewBufs) (_ string, _ []redact.Replacement, lowered bool) {
	if isASCII(t) {
		if cap(bufs.lower) < len(t) {
			bufs.lower = make([]byte, len(t))
		}
		bufs.lower = bufs.lower[:len(t)]
		lowerASCII(bufs.lower, t)
		fs := red.FindLowered(t, bufs.lower)
		if len(fs) == 0 {
			return t, nil, true
		}
		out, reps := red.Apply(t, fs)
		return out, reps, false
	}
	var d detections
	s.detectUnicode(t, &d)
	if len(d.deleted) == 0 {
		out, reps := red.Redact(t)
		return out, reps, false
	}
	compact, off := compacted(t, d.deleted)
	fs := red.Find(compact)
	for i, f := range fs {
		// Map back to t, widened to whole characters there.
		sp := span{int(off[f.Start]), int(off[f.End-1]) + 1}
		for sp.e < len(t) && !utf8.RuneStart(t[sp.e]) {
			sp.e++
		}
		fs[i].Start, fs[i].End = sp.s, sp.e
	}
	out, reps := red.Apply(t, fs)
	return out, reps, false
}

// compacted returns t without the deleted spans, and the offset in t of
// each byte of the result.
func compacted(t string, deleted []span) (string, []int32) {
	var sb strings.Builder
	sb.Grow(len(t))
	off := make([]int32, 0, len(t))
	last := 0
	for _, sp := range append(deleted, span{len(t), len(t)}) {
		sb.WriteString(t[last:sp.s])
		for i := last; i < sp.s; i++ {
			off = append(off, int32(i))
		}
		last = sp.e
	}
	return sb.String(), off
}

// scanText runs every pass over the normalised text t and records hits.
// bufs are the primary view's buffers; lowered says bufs.lower already
// holds t lowercased.
func (s *Scanner) scanText(t string, h *hits, bufs *viewBufs, lowered bool) {
	withhold := s.sens >= Medium
	var det detections
	s.detect(t, &det)

	if s.sens >= Medium {
		s.detectorHits(&det, h)
		s.tagRuns(t, det.deleted, h)
	}

	// The primary view keeps offsets, with deleted characters read as
	// spaces (so a zero-width space between words still separates them).
	// When characters are deleted, a compacted view shows the text as the
	// model will read it: the regex lists read the parts of it around the
	// deletions, and the structural passes read all of it.
	primary := newView(t, det.deleted, bufs.lower, lowered)
	primary.occBuf = bufs.occ[:0]
	defer func() { bufs.lower, bufs.occ = primary.lower, primary.occBuf[:0] }()
	structView := primary
	if s.sens >= Medium {
		s.matchLists(primary, s.listMask(), func(label string, sp span, fence Sensitivity) {
			h.add(label, primary.toOrig(sp), s.sens >= fence)
		})
	}
	if len(det.deleted) > 0 {
		structView = newCompactView(t, det.deleted)
		if s.sens >= Medium {
			for _, ex := range structView.junctionExcerpts() {
				s.matchLists(ex, s.listMask(), func(label string, sp span, fence Sensitivity) {
					h.add(label, ex.toOrig(sp), s.sens >= fence)
				})
			}
		}
	}
	s.structural(structView, func(label string, sp span) {
		h.add(label, structView.toOrig(sp), withhold)
	}, true)
	s.htmlComments(structView, func(sp span) {
		h.add(labelHTMLComment, structView.toOrig(sp), withhold)
	})
	s.encodedPass(t, det.runs, h, withhold)
}

// tagRuns decodes each run of Unicode tag characters (U+E0020–U+E007E mirror
// ASCII, and a model may read them as text while a person sees nothing:
// "ASCII smuggling") and withholds the run when its decoding is an
// injection. The characters are deleted from the model's copy anyway; the
// label and marker say what was hidden there.
func (s *Scanner) tagRuns(t string, deleted []span, h *hits) {
	var run strings.Builder
	start, end := -1, -1
	flush := func() {
		if start >= 0 && run.Len() > 0 && s.injectionHit(run.String()) {
			h.add(labelTagSmuggled, span{start, end}, true)
		}
		run.Reset()
		start, end = -1, -1
	}
	for _, d := range deleted {
		r, _ := utf8.DecodeRuneInString(t[d.s:])
		if r < 0xE0020 || r > 0xE007E {
			flush()
			continue
		}
		if start < 0 || d.s != end {
			flush()
			start = d.s
		}
		run.WriteByte(byte(r - 0xE0000))
		end = d.e
	}
	flush()
}

// listMask returns the regex lists that run at the scanner's sensitivity.
func (s *Scanner) listMask() listMask {
	switch s.sens {
	case Medium:
		return maskInjection | maskExfil
	case High:
		return maskInjection | maskExfil | maskHighOnly
	}
	return 0
}

// hits collects labels and labeled spans of one scan.
type hits struct {
	labels map[string]struct{}
	marks  []mark
}

// mark is one hit: a span of the text, its label, and whether the model's
// copy withholds it.
type mark struct {
	span
	label string
	fence bool
}

func newHits() *hits { return &hits{labels: make(map[string]struct{}, 8)} }

func (h *hits) label(l string) { h.labels[l] = struct{}{} }

// add labels the text and records the span (an empty span only labels).
// A pattern reports its matches left to right, so a span that overlaps or
// touches the previous one of the same label joins it, which keeps the
// list that spans sorts short on a page full of hits.
func (h *hits) add(label string, sp span, fence bool) {
	h.label(label)
	if sp.e <= sp.s {
		return
	}
	if k := len(h.marks) - 1; k >= 0 {
		if last := &h.marks[k]; last.label == label && last.fence == fence && sp.s >= last.s && sp.s <= last.e {
			last.e = max(last.e, sp.e)
			return
		}
	}
	h.marks = append(h.marks, mark{sp, label, fence})
}

func (h *hits) sortedLabels() []string {
	out := make([]string, 0, len(h.labels))
	for l := range h.labels {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// sha256Hex hashes s through a small stack buffer rather than a copy of
// the whole text, which would be the largest allocation of a scan.
func sha256Hex(s string) string {
	h := sha256.New()
	var buf [4096]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// bug marks a failure that cannot happen unless the built-in lists are
// broken, so it can be searched for and alerted on.
func bug(err error) error {
	return fmt.Errorf("scan: internal error (built-in lists are inconsistent; please report): %w", err)
}
