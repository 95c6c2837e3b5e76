package scan

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// decodeBase64 decodes one candidate run (docs/design/checks.md#prompt-scan
// step 5: std, raw std, URL and raw URL). The alphabet follows from the run's
// characters, since '+' and '/' only occur in std and '-' and '_' only in
// URL, so at most two of the four decodings can succeed and they yield the
// same bytes.
func decodeBase64(run string) ([]byte, bool) {
	body := strings.TrimRight(run, "=")
	url := strings.ContainsAny(body, "-_")
	if url && strings.ContainsAny(body, "+/") {
		return nil, false
	}
	padded, raw := base64.StdEncoding, base64.RawStdEncoding
	if url {
		padded, raw = base64.URLEncoding, base64.RawURLEncoding
	}
	if len(body) != len(run) {
		if b, err := padded.DecodeString(run); err == nil {
			return b, true
		}
	}
	if len(body)%4 == 1 {
		return nil, false
	}
	b, err := raw.DecodeString(body)
	return b, err == nil
}

// hexRuns returns the candidate hex runs of t
// (docs/design/checks.md#prompt-scan step 5): maximal runs of at least
// MinHexRun hex digits. A run of odd length is tried at both alignments, so
// one stray digit cannot hide a payload.
func (s *Scanner) hexRuns(t string) []string {
	var out []string
	cls := s.class
	for i := 0; i < len(t); {
		if cls[t[i]]&clsHex == 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(t) && cls[t[j]]&clsHex != 0 {
			j++
		}
		switch n := j - i; {
		case n%2 == 0 && n >= MinHexRun:
			out = append(out, t[i:j])
		case n%2 == 1 && n-1 >= MinHexRun:
			out = append(out, t[i:j-1], t[i+1:j])
		}
		i = j
	}
	return out
}

// isText reports whether a decoding is text
// (docs/design/checks.md#prompt-scan step 5): valid UTF-8 with no control
// characters other than tab, newline and carriage return.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for len(b) > 0 {
		c := b[0]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				return false
			}
			b = b[1:]
			continue
		}
		r, size := utf8.DecodeRune(b)
		if unicode.IsControl(r) {
			return false
		}
		b = b[size:]
	}
	return true
}

// executableMagic reports binary that starts like a PE, ELF, Mach-O or
// fat Mach-O file (docs/design/checks.md#prompt-scan step 5).
func executableMagic(b []byte) bool {
	if len(b) < MinBinaryBytes {
		return false
	}
	s := string(b[:4])
	switch {
	case strings.HasPrefix(s, "MZ"), s == "\x7fELF",
		s == "\xfe\xed\xfa\xce", s == "\xfe\xed\xfa\xcf",
		s == "\xce\xfa\xed\xfe", s == "\xcf\xfa\xed\xfe", s == "\xca\xfe\xba\xbe":
		return true
	}
	return false
}

// startsJSON reports text that starts, after whitespace, with '{' or '['.
func startsJSON(t string) bool {
	t = strings.TrimLeft(t, " \t\r\n")
	return t != "" && (t[0] == '{' || t[0] == '[')
}

// stripDeleted removes invisible and bidi characters from s.
func stripDeleted(s string) string {
	if isASCII(s) {
		return s
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		if !isInvisible(r) && !isBidi(r) {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// encodedPass is the base64 pass of docs/design/checks.md#scanner-structural
// over the runs the detector pass found in t, and the same for the hex runs
// inside them (the prompt scan decodes hex, and so must the observation
// scanner: "69676e6f7265…" is "ignore…" to a model that decodes it). A run is
// reported with the labels its decoding earns; nested runs inside decoded
// text are followed to MaxEncodedDepth layers and report against the outer
// run, the only span the text has. Every hex run of at least MinHexRun digits
// lies inside a base64 candidate run, since hex digits are base64 characters.
func (s *Scanner) encodedPass(t string, runs []b64run, h *hits, withhold bool) {
	budget := MaxBase64Runs
	for _, r := range runs {
		if budget == 0 {
			return
		}
		text := r.text(t)
		for _, l := range s.decodedLabels(text, 1, &budget) {
			h.add(l, span{r.s, r.e}, withhold)
		}
		if r.e-r.s < MinHexRun {
			continue
		}
		for _, hx := range s.hexRuns(text) {
			b, err := hex.DecodeString(hx)
			if err != nil || !isText(b) || budget == 0 {
				continue
			}
			budget--
			for _, l := range s.textLabels(toNFKC(string(b)), 1, &budget, labelHexAction, labelHexInjection) {
				h.add(l, span{r.s, r.e}, withhold)
			}
		}
	}
}

// decodedLabels decodes one base64 run and returns the labels of its
// content. budget counts runs whose decoding was text; binary and
// undecodable runs (hex digests, identifiers, UUIDs) are cheap and do not
// use it up, so they cannot be used to exhaust it ahead of a payload.
func (s *Scanner) decodedLabels(run string, depth int, budget *int) []string {
	b, ok := decodeBase64(run)
	if !ok || !isText(b) || *budget == 0 {
		return nil
	}
	*budget--
	return s.textLabels(toNFKC(string(b)), depth, budget, labelBase64Action, labelBase64Injection)
}

// textLabels returns the labels of a decoded text: actionLabel when it is
// or holds an action object, injLabel (medium and high) when the injection
// list fires on it, and the labels of the runs nested in it.
func (s *Scanner) textLabels(decoded string, depth int, budget *int, actionLabel, injLabel string) []string {
	var labels []string
	if startsJSON(decoded) {
		hit := false
		s.structural(newTextView(decoded), func(string, span) { hit = true }, false)
		if hit {
			labels = append(labels, actionLabel)
		}
	}
	if s.sens >= Medium && s.injectionHit(decoded) {
		labels = append(labels, injLabel)
	}
	if depth < MaxEncodedDepth {
		var d detections
		s.detect(decoded, &d)
		for _, r := range d.runs {
			labels = append(labels, s.decodedLabels(r.text(decoded), depth+1, budget)...)
		}
	}
	return labels
}

// injectionHit runs the injection list (regexes and detectors) over a
// decoded text.
func (s *Scanner) injectionHit(t string) bool {
	var d detections
	s.detect(t, &d)
	if len(d.deleted) > 0 || len(d.lookalike) > 0 {
		return true
	}
	hit := false
	s.matchLists(newTextView(t), maskInjection, func(_ string, _ span, fence Sensitivity) {
		// Patterns that only label (data: URIs) do not make the
		// decoding an injection.
		hit = hit || fence <= Medium
	})
	return hit
}
