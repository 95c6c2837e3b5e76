package scan

import (
	"cmp"
	"slices"
	"strings"
)

// labeledSpan is a redaction span and the label its marker names.
type labeledSpan struct {
	span
	label string
	order int // tie-break: position of the producing rule
}

// mergeSpans sorts spans and merges those that overlap or touch
// (§10.1 step 6: "overlapping or adjacent").
func mergeSpans(sp []span) []span {
	if len(sp) == 0 {
		return nil
	}
	slices.SortFunc(sp, func(a, b span) int {
		if c := cmp.Compare(a.s, b.s); c != 0 {
			return c
		}
		return cmp.Compare(b.e, a.e)
	})
	out := []span{sp[0]}
	for _, x := range sp[1:] {
		last := &out[len(out)-1]
		if x.s <= last.e {
			last.e = max(last.e, x.e)
			continue
		}
		out = append(out, x)
	}
	return out
}

// sanitize replaces each merged redaction span of t with marker and deletes
// the del spans outside them.
func sanitize(t string, redact, del []span, marker string) string {
	if len(redact) == 0 && len(del) == 0 {
		return t
	}
	merged := mergeSpans(redact)
	slices.SortFunc(del, func(a, b span) int { return cmp.Compare(a.s, b.s) })
	var sb strings.Builder
	sb.Grow(len(t))
	di := 0
	// copyKept writes t[a:b] without the deleted characters in it.
	copyKept := func(a, b int) {
		for di < len(del) && del[di].s < b {
			d := del[di]
			if d.s >= a {
				sb.WriteString(t[a:d.s])
				a = d.e
			}
			di++
		}
		if a < b {
			sb.WriteString(t[a:b])
		}
	}
	pos := 0
	for _, r := range merged {
		copyKept(pos, r.s)
		sb.WriteString(marker)
		pos = r.e
		// Deletions inside the redacted span are covered by it.
		for di < len(del) && del[di].s < pos {
			di++
		}
	}
	copyKept(pos, len(t))
	return sb.String()
}

// redactLabeled replaces each merged span of t with "[REDACTED:<label>]".
// Overlapping or adjacent spans merge; the merged span is named by the
// label of its first span (leftmost, then longest, then rule order).
func redactLabeled(t string, sp []labeledSpan) string {
	if len(sp) == 0 {
		return t
	}
	slices.SortFunc(sp, func(a, b labeledSpan) int {
		if c := cmp.Compare(a.s, b.s); c != 0 {
			return c
		}
		if c := cmp.Compare(b.e, a.e); c != 0 {
			return c
		}
		return cmp.Compare(a.order, b.order)
	})
	var sb strings.Builder
	sb.Grow(len(t))
	pos := 0
	for i := 0; i < len(sp); {
		cur := sp[i]
		j := i + 1
		for j < len(sp) && sp[j].s <= cur.e {
			cur.e = max(cur.e, sp[j].e)
			j++
		}
		sb.WriteString(t[pos:cur.s])
		sb.WriteString("[REDACTED:" + cur.label + "]")
		pos = cur.e
		i = j
	}
	sb.WriteString(t[pos:])
	return sb.String()
}
