package overlay

import (
	"fmt"
	"strings"
)

// maxEdits bounds the Myers search: past it the differing middle is
// reported as one replacement, so a pathological input costs
// O((N+M)·maxEdits) time and O(maxEdits²) memory, never more.
const maxEdits = 1000

type edit struct {
	op   byte // ' ', '-', '+'
	line string
}

// splitLines splits s into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineDiff returns an edit script from a to b: the common prefix and
// suffix are trimmed, and the middle is diffed with Myers' O(ND)
// algorithm up to maxEdits.
func lineDiff(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for _, l := range a[:pre] {
		out = append(out, edit{' ', l})
	}
	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, edit{' ', l})
	}
	return out
}

func myers(a, b []string) []edit {
	n, m := len(a), len(b)
	replace := func() []edit {
		out := make([]edit, 0, n+m)
		for _, l := range a {
			out = append(out, edit{'-', l})
		}
		for _, l := range b {
			out = append(out, edit{'+', l})
		}
		return out
	}
	if n == 0 || m == 0 {
		return replace()
	}
	maxD := min(n+m, maxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	// trace[d] is the frontier before round d, only the diagonals
	// -d-1..d+1 it can use: O(D²) memory in all.
	var trace [][]int
	found := -1
	for d := 0; d <= maxD && found < 0; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = d
				break
			}
		}
	}
	if found < 0 {
		return replace()
	}
	// Backtrack from (n, m) through the saved frontiers.
	var rev []edit
	x, y := n, m
	for d := found; d > 0; d-- {
		vp := trace[d]
		at := func(k int) int { return vp[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, edit{' ', a[x]})
		}
		if x == px {
			y--
			rev = append(rev, edit{'+', b[y]})
		} else {
			x--
			rev = append(rev, edit{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{' ', a[x]})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// Unified returns a unified diff (3 lines of context) from a to b under
// the headers from and to, at most limit bytes long (cut at a line
// boundary; truncated reports the cut). Equal inputs give "".
func Unified(from, to, a, b string, limit int) (diff string, truncated bool) {
	if a == b {
		return "", false
	}
	edits := lineDiff(splitLines(a), splitLines(b))
	var sb strings.Builder
	header := fmt.Sprintf("--- %s\n+++ %s\n", from, to)
	if len(header) > limit {
		return "", true
	}
	sb.WriteString(header)
	const ctx = 3
	write := func(s string) bool {
		if sb.Len()+len(s) > limit {
			truncated = true
			return false
		}
		sb.WriteString(s)
		return true
	}
	// ai, bi are the 0-based line numbers before edit i.
	ai, bi := make([]int, len(edits)+1), make([]int, len(edits)+1)
	for i, e := range edits {
		ai[i+1], bi[i+1] = ai[i], bi[i]
		if e.op != '+' {
			ai[i+1]++
		}
		if e.op != '-' {
			bi[i+1]++
		}
	}
	for i := 0; i < len(edits); {
		if edits[i].op == ' ' {
			i++
			continue
		}
		start := max(0, i-ctx)
		end := i
		// Extend the hunk while the next change is within 2*ctx lines.
		for j := i; j < len(edits); j++ {
			if edits[j].op != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*ctx {
				break
			}
		}
		end = min(len(edits), end+ctx)
		na, nb := ai[end]-ai[start], bi[end]-bi[start]
		sa, sbn := ai[start]+1, bi[start]+1
		if na == 0 {
			sa--
		}
		if nb == 0 {
			sbn--
		}
		if !write(fmt.Sprintf("@@ -%d,%d +%d,%d @@\n", sa, na, sbn, nb)) {
			return sb.String(), true
		}
		for _, e := range edits[start:end] {
			line := string(e.op) + e.line
			if !strings.HasSuffix(line, "\n") {
				line += "\n\\ No newline at end of file\n"
			}
			if !write(line) {
				return sb.String(), true
			}
		}
		i = end
	}
	return sb.String(), truncated
}
