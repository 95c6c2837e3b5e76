package redact

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// TagHexDigits is how many hex digits of the HMAC a placeholder carries
// (64 bits: enough that a wrong secret does not confirm by chance).
const TagHexDigits = 16

// PlaceholderPrefix starts every placeholder of this package.
const PlaceholderPrefix = "[REDACTED:"

// tagField separates the rule from the tag in a placeholder.
const tagField = ":hmac-sha256="

// ruleUnavailable names the placeholder of a rule set that failed to
// compile (Default fails closed).
const ruleUnavailable = "redactor-unavailable"

// Finding is one secret in a text: the bytes [Start, End) that a placeholder
// replaces, and the rule that found them.
type Finding struct {
	Rule       string
	Start, End int
}

// Replacement is one placeholder in a redacted text: [Start, End) are its
// bytes in the output.
type Replacement struct {
	Rule string
	// Tag is the placeholder's tag, "" without a salt.
	Tag        string
	Start, End int
}

// Redactor applies a rule set with one salt. It is immutable and safe for
// concurrent use.
type Redactor struct {
	rules *Rules
	salt  []byte // nil: placeholders carry no tag
}

// New returns a Redactor for rules. With a nil salt, placeholders name the
// rule only ([REDACTED:aws-access-token]).
func New(rules *Rules, salt []byte) *Redactor {
	if rules == nil {
		rules = Default()
	}
	return &Redactor{rules: rules, salt: slices.Clone(salt)}
}

// ForSession returns the Redactor of a session: the built-in rules, salted
// with the session id (its canonical string form), so a placeholder's tag
// can be recomputed by whoever holds the secret and the session's records.
func ForSession(id string) *Redactor { return New(Default(), []byte(id)) }

// Untagged returns a Redactor of the built-in rules whose placeholders carry
// no tag, for text that belongs to no session.
func Untagged() *Redactor { return New(Default(), nil) }

// Tag returns the tag of secret under salt: the first TagHexDigits hex
// digits of HMAC-SHA256(salt, secret).
func Tag(salt []byte, secret string) string {
	m := hmac.New(sha256.New, salt)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))[:TagHexDigits]
}

// Placeholder returns the text that replaces a secret found by rule; tag
// may be "".
func Placeholder(rule, tag string) string {
	if tag == "" {
		return PlaceholderPrefix + rule + "]"
	}
	return PlaceholderPrefix + rule + tagField + tag + "]"
}

// ParsePlaceholder splits a tagged placeholder into its rule and tag.
func ParsePlaceholder(p string) (rule, tag string, ok bool) {
	body, found := strings.CutPrefix(p, PlaceholderPrefix)
	if !found || !strings.HasSuffix(body, "]") {
		return "", "", false
	}
	body = body[:len(body)-1]
	rule, tag, found = strings.Cut(body, tagField)
	if !found || rule == "" || len(tag) != TagHexDigits {
		return "", "", false
	}
	return rule, tag, true
}

// Confirm reports whether a tagged placeholder, as recorded under salt,
// stands for secret. For a session's records the salt is the session id.
func Confirm(placeholder string, salt []byte, secret string) bool {
	_, tag, ok := ParsePlaceholder(placeholder)
	if !ok {
		return false
	}
	return hmac.Equal([]byte(tag), []byte(Tag(salt, secret)))
}

// Find returns the secrets of t, sorted and without overlap. Text that is
// already a placeholder of this package is never reported again, so
// redacting twice changes nothing.
func (r *Redactor) Find(t string) []Finding { return r.rules.find(t, nil) }

// FindLowered is Find for a caller that already holds lower, the
// ASCII-lowercased copy of t: 'A'–'Z' mapped to 'a'–'z', every other byte
// as in t. The output scanner lowercases each observation for its own
// passes, and sharing the copy saves a pass over the text. lower is only
// read; one of another length is ignored.
func (r *Redactor) FindLowered(t string, lower []byte) []Finding {
	if len(lower) != len(t) {
		lower = nil
	}
	return r.rules.find(t, lower)
}

// Redact returns t with every secret replaced by its placeholder, and the
// placeholders' places in the result. It returns t itself when there is
// nothing to replace.
func (r *Redactor) Redact(t string) (string, []Replacement) {
	return r.Apply(t, r.rules.find(t, nil))
}

// Apply replaces the findings fs of t (from Find, possibly of several texts
// mapped onto t; overlapping ones are merged) by placeholders.
func (r *Redactor) Apply(t string, fs []Finding) (string, []Replacement) {
	if len(fs) == 0 {
		return t, nil
	}
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b Finding) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(b.End, a.End)
	})
	var sb strings.Builder
	sb.Grow(len(t) + 48*len(fs))
	reps := make([]Replacement, 0, len(fs))
	pos := 0
	for i := 0; i < len(fs); {
		f := fs[i]
		f.Start, f.End = max(f.Start, pos), min(f.End, len(t))
		for i++; i < len(fs) && fs[i].Start < f.End; i++ {
			f.End = max(f.End, min(fs[i].End, len(t)))
			if generic(f.Rule) && !generic(fs[i].Rule) {
				f.Rule = fs[i].Rule
			}
		}
		if f.End <= f.Start {
			continue
		}
		sb.WriteString(t[pos:f.Start])
		tag := ""
		if r.salt != nil && f.Rule != ruleUnavailable {
			tag = Tag(r.salt, t[f.Start:f.End])
		}
		start := sb.Len()
		sb.WriteString(Placeholder(f.Rule, tag))
		reps = append(reps, Replacement{Rule: f.Rule, Tag: tag, Start: start, End: sb.Len()})
		pos = f.End
	}
	sb.WriteString(t[pos:])
	return sb.String(), reps
}

// Err reports a rule set that failed to compile; the Redactor then
// replaces every text whole.
func (r *Redactor) Err() error { return r.rules.Err() }

// String returns t with every secret replaced by its placeholder.
func (r *Redactor) String(t string) string {
	out, _ := r.Redact(t)
	return out
}

// JSON redacts every string of a JSON document (values, not member names),
// and replaces whole the string value of a member whose name says it is a
// secret (password, api_key, …) when the value could be one. It returns the
// document unchanged, byte for byte, when nothing was redacted; numbers keep
// their text. The document is read strictly (internal/strictjson): with a
// duplicate member, the value checked and a value passed on unchanged
// could differ, so such a document is an error.
func (r *Redactor) JSON(doc []byte) ([]byte, bool, error) {
	root, err := strictjson.Decode(doc, maxPayloadDepth)
	if err != nil {
		return nil, false, fmt.Errorf("redact: decode JSON: %w", err)
	}
	if !r.node(root) {
		return doc, false, nil
	}
	return appendNode(make([]byte, 0, len(doc)), root), true, nil
}

// node redacts n in place and reports whether anything changed.
func (r *Redactor) node(n *strictjson.Node) bool {
	changed := false
	switch n.Kind {
	case strictjson.Object:
		for i, k := range n.Keys {
			v := n.Values[i]
			if v.Kind == strictjson.String && secretKey(strings.ToLower(k)) && plausibleSecret(v.Str, 4) && !strings.HasPrefix(v.Str, PlaceholderPrefix) {
				tag := ""
				if r.salt != nil {
					tag = Tag(r.salt, v.Str)
				}
				n.Values[i] = &strictjson.Node{Kind: strictjson.String, Str: Placeholder(ruleKeyValue, tag)}
				changed = true
				continue
			}
			changed = r.node(v) || changed
		}
	case strictjson.Array:
		for _, e := range n.Elems {
			changed = r.node(e) || changed
		}
	case strictjson.String:
		if out := r.String(n.Str); out != n.Str {
			n.Str = out
			changed = true
		}
	}
	return changed
}

// scratch holds the per-call buffers of find.
type scratch struct {
	lower []byte
	hits  []kwHit
	occ   []int
	wins  [][2]int
	// all holds the occurrences of every keyword found, grouped by
	// keyword: those of keyword k are all[start[k]:start[k+1]]. Words
	// shared by many rules ("api", "key") are grouped once.
	all   []int
	start []int32
	next  []int32
	// lits caches whether each clause literal occurs anywhere in the
	// text: a rule whose clause holds nowhere is skipped whole.
	lits map[string]bool
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// windowReach is how far from a keyword a rule's regexp reads: the
// keyword's line and the next one, within this many bytes either side.
const windowReach = 2048

// find returns the merged findings of t. lower is t ASCII-lowercased, or nil
// to have find make it.
func (rs *Rules) find(t string, lower []byte) []Finding {
	if rs.broken != nil {
		if t == "" {
			return nil
		}
		// Fail closed: a redactor that cannot run must not let text
		// through.
		return []Finding{{Rule: ruleUnavailable, Start: 0, End: len(t)}}
	}
	if len(t) < 3 {
		return nil
	}
	sc := scratchPool.Get().(*scratch)
	defer func() {
		if cap(sc.lower) <= 1<<20 {
			scratchPool.Put(sc)
		}
	}()
	if lower == nil {
		if cap(sc.lower) < len(t) {
			sc.lower = make([]byte, len(t))
		}
		lower = sc.lower[:len(t)]
		lowerASCII(lower, t)
	}
	nw := len(rs.kw.words)
	sc.hits = rs.kw.scan(lower, sc.hits[:0])
	// Group the hits by keyword (a counting sort, which keeps each
	// keyword's offsets ascending).
	if cap(sc.start) < nw+1 {
		sc.start, sc.next = make([]int32, nw+1), make([]int32, nw+1)
	}
	start, next := sc.start[:nw+1], sc.next[:nw+1]
	clear(start)
	for _, h := range sc.hits {
		start[h.id+1]++
	}
	for k := 1; k <= nw; k++ {
		start[k] += start[k-1]
	}
	copy(next, start)
	if cap(sc.all) < len(sc.hits) {
		sc.all = make([]int, len(sc.hits))
	}
	sc.all = sc.all[:len(sc.hits)]
	for _, h := range sc.hits {
		sc.all[next[h.id]] = int(h.at)
		next[h.id]++
	}
	if sc.lits == nil {
		sc.lits = map[string]bool{}
	}
	clear(sc.lits)
	anywhere := func(l string) bool {
		v, ok := sc.lits[l]
		if !ok {
			v = bytes.Contains(lower, []byte(l))
			sc.lits[l] = v
		}
		return v
	}

	var out []Finding
	emit := func(f Finding) {
		if f.End > f.Start {
			out = append(out, f)
		}
	}
	// occurrences gathers the occurrences of keywords into sc.occ.
	occurrences := func(keywords []int) []int {
		occ := sc.occ[:0]
		for _, k := range keywords {
			occ = append(occ, sc.all[start[k]:start[k+1]]...)
		}
		sc.occ = occ
		return occ
	}
	for i := range rs.rules {
		ru := &rs.rules[i]
		occ := occurrences(ru.keywords)
		if len(occ) == 0 {
			continue
		}
		// A rule that cannot be parsed runs with a nil shape, which
		// withholds its windows (run).
		sh, err := ru.shape()
		if err != nil {
			sh = nil
		} else if !sh.clausesAnywhere(anywhere) {
			continue
		}
		sc.wins = ru.run(t, lower, occ, rs, sh, sc.wins[:0], emit)
	}
	for i := range rs.passes {
		if occ := occurrences(rs.passes[i].keywords); len(occ) > 0 {
			rs.passes[i].find(t, lower, occ, emit)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return merge(out, placeholders(lower), t)
}

// clausesAnywhere reports whether every clause of the rule holds somewhere
// in the text; when one holds nowhere, no window can satisfy it. Clauses
// with a literal shorter than four bytes are left to the windows: finding
// "-h" in a whole text stops at every '-'.
func (sh *ruleShape) clausesAnywhere(anywhere func(string) bool) bool {
	for _, c := range sh.clauses {
		if slices.ContainsFunc(c, func(l string) bool { return len(l) < 4 }) {
			continue
		}
		ok := false
		for _, l := range c {
			if anywhere(l) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// allowedGlobally reports whether the global allowlist exempts a finding.
// A list that failed to compile exempts nothing: the finding stays
// redacted.
func (rs *Rules) allowedGlobally(secret, match, line string) bool {
	g, err := rs.global()
	return err == nil && g.allows(secret, match, line)
}

// run runs a gitleaks rule over the lines around its keyword occurrences
// (in any order); sh is the rule's shape, nil when it could not be parsed.
// wins is scratch space, returned for reuse.
func (ru *rule) run(t string, lower []byte, occ []int, rs *Rules, sh *ruleShape, wins [][2]int, emit func(Finding)) [][2]int {
	n := len(t)
	for _, o := range occ {
		if ru.follow != nil && !ru.follow(lower, o) {
			continue
		}
		// The window: from the start of the keyword's line (within
		// windowReach) to the end of the value for the assignment rules,
		// else to the end of the next line. The assignment shape is
		// checked first: it rules out most occurrences ("/api/v1") at
		// the cost of a few bytes, before the line start is looked for.
		var b int
		if ru.assign {
			if b = assignedValueEnd(lower, o); b < 0 {
				continue
			}
			b = min(n, b+1) // the terminator
		} else {
			b = n
			if k := bytes.IndexByte(lower[o:], '\n'); k >= 0 {
				b = o + k
				if k2 := bytes.IndexByte(lower[b+1:], '\n'); k2 >= 0 {
					b += 1 + k2
				} else {
					b = n
				}
			}
			b = min(b, o+windowReach)
		}
		wins = append(wins, [2]int{lineStart(lower, max(0, o-windowReach), o), b})
	}
	if len(wins) > 1 {
		slices.SortFunc(wins, func(x, y [2]int) int { return cmp.Compare(x[0], y[0]) })
		merged := wins[:1]
		for _, w := range wins[1:] {
			if last := &merged[len(merged)-1]; w[0] <= last[1] {
				last[1] = max(last[1], w[1])
			} else {
				merged = append(merged, w)
			}
		}
		wins = merged
	}
	for _, w := range wins {
		if sh != nil && !holds(sh.clauses, lower[w[0]:w[1]]) {
			continue
		}
		re, err := ru.re()
		if sh == nil || err != nil {
			// A defect of the rule set, which the tests rule out.
			// Should it happen anyway, the window the rule could not
			// check is withheld whole: fail closed.
			emit(Finding{Rule: ruleUnavailable, Start: w[0], End: w[1]})
			continue
		}
		win := t[w[0]:w[1]]
		for _, m := range re.FindAllStringSubmatchIndex(win, -1) {
			s, e := m[0], m[1]
			if g := ru.group; g > 0 {
				if m[2*g] >= 0 {
					s, e = m[2*g], m[2*g+1]
				}
			} else {
				for _, g := range sh.groups {
					if m[2*g] >= 0 {
						s, e = m[2*g], m[2*g+1]
						break
					}
				}
			}
			if e <= s {
				continue
			}
			secret := win[s:e]
			if ru.entropy > 0 && entropy(secret) < ru.entropy {
				continue
			}
			match := win[m[0]:m[1]]
			line := lineAround(t, w[0]+m[0], w[0]+m[1])
			if rs.allowedGlobally(secret, match, line) {
				continue
			}
			allowed := false
			// A rule's allowlists that fail to compile exempt nothing.
			allow, _ := ru.allow()
			for k := range allow {
				if allow[k].allows(secret, match, line) {
					allowed = true
					break
				}
			}
			if !allowed {
				emit(Finding{Rule: ru.id, Start: w[0] + s, End: w[0] + e})
			}
		}
	}
	return wins
}

// lineStart returns the offset of the start of the line that holds
// lower[o], or base when no line break lies in lower[base:o]. It reads
// eight bytes at a time: the window of each keyword occurrence starts at
// its line, and a byte loop back over long lines cost as much as the
// rule's regexp.
func lineStart(lower []byte, base, o int) int {
	i := o
	for i-8 >= base {
		// A zero byte of w marks a '\n' (the classic test below has no
		// false positives when w has no zero byte).
		w := binary.LittleEndian.Uint64(lower[i-8:]) ^ 0x0a0a0a0a0a0a0a0a
		if (w-0x0101010101010101)&^w&0x8080808080808080 != 0 {
			break
		}
		i -= 8
	}
	for ; i > base; i-- {
		if lower[i-1] == '\n' {
			return i
		}
	}
	return base
}

// placeholders returns the spans of the placeholders already in the text.
// A placeholder cut short (a quote of its start, a truncated line) runs to
// the end of its token: its rule and tag are not a secret either.
func placeholders(lower []byte) [][2]int {
	var out [][2]int
	pre := []byte(strings.ToLower(PlaceholderPrefix))
	for at := 0; ; {
		k := bytes.Index(lower[at:], pre)
		if k < 0 {
			return out
		}
		s := at + k
		e := s + len(pre)
		for e < len(lower) && e-s < 200 && lower[e] != ']' && !isSpace(lower[e]) && lower[e] != '"' && lower[e] != '\'' && lower[e] != '[' {
			e++
		}
		if e < len(lower) && lower[e] == ']' {
			e++
		}
		out = append(out, [2]int{s, e})
		at = e
	}
}

// generic rules name a shape, not a service: where they overlap a specific
// rule, the specific rule names the placeholder.
func generic(rule string) bool { return rule == ruleKeyValue || strings.HasPrefix(rule, "generic") }

// merge sorts findings, drops those that touch an existing placeholder, and
// merges overlapping ones. Where a generic finding (key-value-secret,
// generic-api-key) overlaps a specific one and adds only quotes, spaces or
// line-break escapes, the specific one stands alone, so the placeholder
// replaces exactly what its rule describes (a PEM block from BEGIN to the
// END line, not the JSON string around it). Otherwise the union is
// replaced, named by its first specific rule.
func merge(fs []Finding, masks [][2]int, t string) []Finding {
	slices.SortFunc(fs, func(a, b Finding) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(b.End, a.End)
	})
	kept := fs[:0]
	for i, f := range fs {
		if generic(f.Rule) && coveredBySpecific(fs, i, t) {
			continue
		}
		kept = append(kept, f)
	}
	out := make([]Finding, 0, len(kept))
	mi := 0
	for _, f := range kept {
		for mi < len(masks) && masks[mi][1] <= f.Start {
			mi++
		}
		if mi < len(masks) && masks[mi][0] < f.End {
			continue // inside (or across) a placeholder: already redacted
		}
		if k := len(out) - 1; k >= 0 && f.Start < out[k].End {
			last := &out[k]
			last.End = max(last.End, f.End)
			if generic(last.Rule) && !generic(f.Rule) {
				last.Rule = f.Rule
			}
			continue
		}
		out = append(out, f)
	}
	return out
}

// coveredBySpecific reports whether the generic finding fs[i] overlaps a
// specific finding and adds nothing to it but quotes, spaces and line-break
// escapes.
func coveredBySpecific(fs []Finding, i int, t string) bool {
	g := fs[i]
	for j, s := range fs {
		if j == i || generic(s.Rule) || s.End <= g.Start || s.Start >= g.End {
			continue
		}
		extra := ""
		if g.Start < s.Start {
			extra += t[g.Start:s.Start]
		}
		if g.End > s.End {
			extra += t[s.End:g.End]
		}
		extra = strings.NewReplacer(`\n`, "", `\r`, "", `\t`, "").Replace(extra)
		if strings.Trim(extra, " \t\r\n\"'`") == "" {
			return true
		}
	}
	return false
}
