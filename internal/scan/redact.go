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

// redactLabeled replaces each merged span of t with "[REDACTED:<label>]"
// and returns the replaced runs. Overlapping or adjacent spans merge; the
// merged span is named by the label of its first span (leftmost, then
// longest, then rule order).
func redactLabeled(t string, sp []labeledSpan) (string, []replaced) {
	if len(sp) == 0 {
		return t, nil
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
	var runs []replaced
	pos := 0
	for i := 0; i < len(sp); {
		cur := sp[i]
		j := i + 1
		for j < len(sp) && sp[j].s <= cur.e {
			cur.e = max(cur.e, sp[j].e)
			j++
		}
		sb.WriteString(t[pos:cur.s])
		marker := "[REDACTED:" + cur.label + "]"
		sb.WriteString(marker)
		runs = append(runs, replaced{cur.s, cur.e, len(marker)})
		pos = cur.e
		i = j
	}
	sb.WriteString(t[pos:])
	return sb.String(), runs
}

// outside returns the parts of [s, e) that lie outside the sorted,
// non-overlapping spans keep.
func outside(s, e int, keep []span) []span {
	var out []span
	for _, k := range keep {
		if k.e <= s || k.s >= e {
			continue
		}
		if k.s > s {
			out = append(out, span{s, k.s})
		}
		s = max(s, k.e)
	}
	if s < e {
		out = append(out, span{s, e})
	}
	return out
}
