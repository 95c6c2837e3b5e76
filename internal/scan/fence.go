package scan

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The ledger keeps an observation's text (credentials removed) with the
// scanner's spans; the model reads a copy in which the fenced spans are
// replaced by "[WITHHELD:<labels>]" and invisible and bidi control
// characters are deleted. ModelView rebuilds that copy from the two
// recorded fields alone, so what the model read can be recomputed from the
// ledger.

// spans turns the hits of a scan of t into the Result's spans: each
// withheld span widened to whole words (a hit never leaves half a word
// behind, "[WITHHELD:…]ember"), overlapping or adjacent spans of the same
// kind merged with their labels, and at most MaxLabelSpans spans that are
// only labeled.
func (h *hits) spans(t string) []Span {
	if len(h.marks) == 0 {
		return []Span{}
	}
	// One allocation each: a dense page has thousands of marks.
	fenced, labeled := make([]mark, 0, len(h.marks)), make([]mark, 0, len(h.marks))
	for _, m := range h.marks {
		if m.fence {
			m.span = wordSpan(t, m.span)
			fenced = append(fenced, m)
		} else {
			labeled = append(labeled, m)
		}
	}
	out := mergeMarks(fenced, true)
	lab := mergeMarks(labeled, false)
	if len(lab) > MaxLabelSpans {
		lab = lab[:MaxLabelSpans]
	}
	out = append(out, lab...)
	slices.SortStableFunc(out, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	return out
}

// wordSpan widens sp so that it neither starts nor ends inside an ASCII
// word.
func wordSpan(t string, sp span) span {
	for sp.s > 0 && sp.s < len(t) && isWordByte(t[sp.s-1]) && isWordByte(t[sp.s]) {
		sp.s--
	}
	for sp.e < len(t) && sp.e > 0 && isWordByte(t[sp.e-1]) && isWordByte(t[sp.e]) {
		sp.e++
	}
	return sp
}

// mergeMarks sorts marks and merges those that overlap or touch
// (docs/design/checks.md#scanner-pipeline step 6: "overlapping or adjacent"),
// collecting their labels.
func mergeMarks(ms []mark, fenced bool) []Span {
	if len(ms) == 0 {
		return nil
	}
	slices.SortFunc(ms, func(a, b mark) int {
		if c := cmp.Compare(a.s, b.s); c != 0 {
			return c
		}
		return cmp.Compare(b.e, a.e)
	})
	// Count the merged spans first, so that the result, which the caller
	// keeps, is allocated once and at its size.
	n, end := 0, -1
	for i, m := range ms {
		if i == 0 || m.s > end {
			n++
			end = m.e
		} else {
			end = max(end, m.e)
		}
	}
	out := make([]Span, 0, n)
	for _, m := range ms {
		if k := len(out) - 1; k >= 0 && m.s <= out[k].End {
			last := &out[k]
			last.End = max(last.End, m.e)
			if !slices.Contains(last.Labels, m.label) {
				last.Labels = append(last.Labels, m.label)
			}
			continue
		}
		out = append(out, Span{Start: m.s, End: m.e, Labels: []string{m.label}, Fenced: fenced})
	}
	for i := range out {
		slices.Sort(out[i].Labels)
	}
	return out
}

// withheldMarker is the text the model reads in place of a fenced span.
func withheldMarker(labels []string) string {
	return WithheldPrefix + strings.Join(labels, ",") + "]"
}

// ModelView returns what the model reads of an observation whose recorded
// content and spans are given: each fenced span replaced by
// "[WITHHELD:<labels>]", and invisible and bidi control characters
// deleted, at every sensitivity (the model gains nothing from them, and
// they can hide text). Spans may come from a ledger record: out-of-range,
// unsorted or overlapping ones are clamped and merged, widened to whole
// characters, never trusted to shrink what is withheld.
func ModelView(content string, spans []Span) string {
	if !slices.ContainsFunc(spans, func(sp Span) bool { return sp.Fenced }) && isASCII(content) {
		return content // nothing to withhold or delete: no copy
	}
	type fence struct {
		span
		labels []string
	}
	fenced := make([]fence, 0, len(spans))
	for _, sp := range spans {
		if !sp.Fenced {
			continue
		}
		s, e := max(0, sp.Start), min(len(content), sp.End)
		if e <= s {
			continue
		}
		for s > 0 && !utf8.RuneStart(content[s]) {
			s--
		}
		for e < len(content) && !utf8.RuneStart(content[e]) {
			e++
		}
		fenced = append(fenced, fence{span{s, e}, sp.Labels})
	}
	slices.SortFunc(fenced, func(a, b fence) int { return cmp.Compare(a.s, b.s) })
	var sb strings.Builder
	sb.Grow(len(content))
	pos := 0
	var names []string // reused: each marker's string is built from a copy
	for i := 0; i < len(fenced); {
		cur := fenced[i].span
		names = names[:0]
		for ; i < len(fenced) && fenced[i].s <= cur.e; i++ {
			cur.e = max(cur.e, fenced[i].e)
			names = append(names, fenced[i].labels...)
		}
		cur.s = max(cur.s, pos)
		writeKept(&sb, content[pos:cur.s])
		slices.Sort(names)
		sb.WriteString(withheldMarker(slices.Compact(names)))
		pos = max(pos, cur.e)
	}
	writeKept(&sb, content[pos:])
	return sb.String()
}

// writeKept writes s without its invisible and bidi control characters.
func writeKept(sb *strings.Builder, s string) {
	if isASCII(s) {
		sb.WriteString(s)
		return
	}
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if !isInvisible(r) && !isBidi(r) {
			sb.WriteString(s[:size])
		}
		s = s[size:]
	}
}

// shift maps offsets of a text through replacements made in it: each
// replaced run [s, e) became rep bytes. An offset inside a replaced run maps
// to the run's start when it starts a span and to its end when it ends one,
// so a span that touches a replacement covers it whole.
type shift struct {
	runs []replaced
}

type replaced struct {
	s, e, rep int
}

func (sh shift) start(o int) int { return sh.mapOffset(o, false) }
func (sh shift) end(o int) int   { return sh.mapOffset(o, true) }

func (sh shift) mapOffset(o int, end bool) int {
	delta := 0
	for _, r := range sh.runs {
		switch {
		case o <= r.s:
			return o + delta
		case o >= r.e:
			delta += r.rep - (r.e - r.s)
		default: // inside the replaced run
			if end {
				return r.s + delta + r.rep
			}
			return r.s + delta
		}
	}
	return o + delta
}
