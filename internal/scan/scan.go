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
)

// Limits of checks.md §9 and §10. Each is tested at its boundary.
const (
	// MaxCollectBytes is what an executor keeps of one stream (§10.1 step 1).
	MaxCollectBytes = 1 << 20
	// MaxStreamBytes caps one stream before it is scanned (§10.1 step 2).
	MaxStreamBytes = 64 << 10
	// MaxNormalizedBytes caps one stream after NFKC (§10.1 step 4).
	MaxNormalizedBytes = 256 << 10
	// MaxScanBytes caps the composed text Scan reads. The spec bounds each
	// stream, not the composition; this keeps a caller that skipped
	// CapStream from making a scan unboundedly long.
	MaxScanBytes = 1 << 20
	// MaxGoalBytes is the longest goal the prompt scan accepts (§9 step 1).
	MaxGoalBytes = 16 << 10
	// MinBase64Run is the shortest base64 candidate run (§9 step 5).
	MinBase64Run = 24
	// MinHexRun is the shortest hex candidate run (§9 step 5).
	MinHexRun = 32
	// MinBinaryBytes is the shortest decoding checked for executable magic.
	MinBinaryBytes = 16
	// MaxEncodedDepth is how many nested encoding layers are decoded: the
	// text decoded from a run is rescanned once more for runs (§9 step 5).
	MaxEncodedDepth = 2
	// MaxBase64Runs caps the base64 runs per observation whose decoding is
	// text and is therefore passed on to the structural and injection
	// passes (§10.4).
	MaxBase64Runs = 64
	// LargeBlobRun is the run length of the large_base64_blob detector.
	LargeBlobRun = 500
	// MaxStructuralDepth bounds the action-object search (§10.4).
	MaxStructuralDepth = 16
)

// Marker is the replacement text of a scanner redaction.
const Marker = "[REDACTED:scanner]"

// Sentinel errors, compared with errors.Is.
var (
	// ErrInvalidSensitivity reports a sensitivity other than low, medium
	// or high.
	ErrInvalidSensitivity = errors.New("ironvise/scan: invalid sensitivity")
)

// Sensitivity selects which passes run and whether hits are redacted
// (checks.md §10.1 step 6). The zero value is invalid, so an unset field
// fails New instead of silently scanning less.
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

// Result is the scanner's verdict on one observation (checks.md §10.1 step 7).
type Result struct {
	// Sanitized is the normalised text with hits redacted and invisible
	// and bidi control characters deleted (medium and high); at low it is
	// the normalised text unchanged.
	Sanitized string
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

// Scanner holds the compiled lists for one sensitivity. It is immutable
// after New and safe for concurrent use.
type Scanner struct {
	sens     Sensitivity
	patterns []pattern
	hints    hintIndex
	// needles are the hint ids of candidateNeedles, in order.
	needles    [candidateNeedleList]uint8
	needleMask uint64
	class      *[256]uint8
	// payload is the encoded-payload regexp of the prompt scan (§9 step 5).
	payload *regexp.Regexp
	// lowerBufs recycles the lowercased copies between scans.
	lowerBufs sync.Pool
}

// New compiles the lists for sens. It fails only for an invalid
// sensitivity or a defect in the built-in lists.
func New(sens Sensitivity) (*Scanner, error) {
	if sens < Low || sens > High {
		return nil, fmt.Errorf("scan: new scanner with %v (accepted: low, medium, high): %w", sens, ErrInvalidSensitivity)
	}
	s := &Scanner{sens: sens, class: newClassTable()}
	s.lowerBufs.New = func() any { return new([]byte) }
	var err error
	if s.patterns, s.hints, err = compilePatterns(builtinPatterns()); err != nil {
		return nil, bug(err)
	}
	// The structural needles share the hint pass, so a text without any
	// of them skips brace matching altogether.
	for i, nd := range candidateNeedles() {
		id, err := s.hints.add(nd, false)
		if err != nil {
			return nil, bug(err)
		}
		s.needles[i] = uint8(id)
		s.needleMask |= 1 << id
	}
	if s.payload, err = regexp.Compile(payloadPattern); err != nil {
		return nil, bug(err)
	}
	return s, nil
}

// Sensitivity returns the sensitivity the scanner was built for.
func (s *Scanner) Sensitivity() Sensitivity { return s.sens }

// Scan scans one composed observation (checks.md §10.1 steps 6–7). text is
// normally the composition of CapStream outputs; Scan still replaces
// invalid UTF-8, applies NFKC and caps the text at MaxScanBytes itself, so
// any input is safe.
func (s *Scanner) Scan(text string) Result {
	res := Result{RawSHA256: sha256Hex(text)}
	t, cut := normalize(text, MaxScanBytes)
	res.Truncated = cut

	h := newHits()
	s.scanText(t, h)

	res.Labels = h.sortedLabels()
	res.Suspicious = len(res.Labels) > 0
	if s.sens == Low {
		// Low labels only (§10.1 step 6): the text goes on unchanged.
		res.Sanitized = t
	} else {
		res.Sanitized = sanitize(t, h.redact, h.del, Marker)
	}
	return res
}

// scanText runs every pass over the normalised text t and records hits.
func (s *Scanner) scanText(t string, h *hits) {
	redact := s.sens >= Medium
	var det detections
	s.detect(t, &det)

	if s.sens >= Medium {
		s.detectorHits(&det, h)
	}

	// The primary view keeps offsets, with deleted characters read as
	// spaces (so a zero-width space between words still separates them).
	// When characters are deleted, a compacted view shows the text as the
	// model will read it: the regex lists read the parts of it around the
	// deletions, and the structural passes read all of it.
	bufp := s.lowerBufs.Get().(*[]byte)
	defer func() {
		// Very large buffers are not kept, so one huge observation does
		// not pin memory for the life of the scanner.
		if cap(*bufp) <= 4*MaxStreamBytes {
			s.lowerBufs.Put(bufp)
		}
	}()
	primary := newView(t, det.deleted, *bufp)
	*bufp = primary.lower
	structView := primary
	if s.sens >= Medium {
		s.matchLists(primary, s.listMask(), func(label string, sp span) {
			h.label(label)
			h.addRedact(primary.toOrig(sp))
		})
	}
	if len(det.deleted) > 0 {
		structView = newCompactView(t, det.deleted)
		if s.sens >= Medium {
			for _, ex := range structView.junctionExcerpts() {
				s.matchLists(ex, s.listMask(), func(label string, sp span) {
					h.label(label)
					h.addRedact(ex.toOrig(sp))
				})
			}
		}
	}
	s.structural(structView, func(label string, sp span) {
		h.label(label)
		if redact {
			h.addRedact(structView.toOrig(sp))
		}
	}, true)
	s.base64Pass(t, det.runs, h, redact)
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

// hits collects labels and spans of one scan.
type hits struct {
	labels map[string]struct{}
	redact []span
	del    []span
}

func newHits() *hits { return &hits{labels: make(map[string]struct{}, 8)} }

func (h *hits) label(l string) { h.labels[l] = struct{}{} }

func (h *hits) addRedact(sp span) {
	if sp.e > sp.s {
		h.redact = append(h.redact, sp)
	}
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
