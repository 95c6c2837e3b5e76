package scan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Structural labels (checks.md §10.4).
const (
	labelStructural      = "structural_embedded_action_json"
	labelStrictPrefix    = "strict_schema_violation:"
	labelBase64Action    = "base64_embedded_action_json"
	labelBase64Injection = "base64_embedded_injection"
)

const (
	// maxBraceDepth bounds the brace matcher's stack; deeper opening
	// braces are counted, not recorded.
	maxBraceDepth = 4096
	// maxCandidateDescent is how many levels of nested spans are tried
	// inside a candidate that is not JSON (prose in braces around an
	// action object). It keeps the pass linear in the text.
	maxCandidateDescent = 4
)

// candidateNeedles are lowercase substrings of which a candidate span must
// contain one to be parsed: the action key and the suspicious keys (their
// shortest distinct forms), and \u, since a key may be spelled with escapes.
func candidateNeedles() [6]string {
	return [6]string{"action", "instructions", "system", "new_goal", "override_goal", `\u`}
}

// isSuspiciousKey reports the top-level keys that make an object an action
// object on their own (§10.4), compared case-insensitively.
func isSuspiciousKey(k string) bool {
	switch k {
	case "instructions", "system_prompt", "new_goal", "override_goal", "system", "new_instructions":
		return true
	}
	return false
}

func isActionName(v string) bool {
	return intent.Action(strings.ToLower(strings.TrimSpace(v))).Known()
}

// braceSpan is a balanced {…} span; kids index its direct child spans.
type braceSpan struct {
	s, e         int32
	kidLo, kidHi int32
}

// braceTree holds the balanced spans of a text and the maximal ones.
type braceTree struct {
	spans []braceSpan
	kids  []int32
	top   []int32
}

// matchBraces is the candidate finder of §10.4: a brace matcher that knows
// JSON strings and escapes. An unbalanced '}' is skipped; an unclosed '{'
// does not hide the balanced spans inside it. A string also ends at a raw
// newline, which JSON forbids inside strings, so a stray quote in prose
// cannot swallow the rest of the text.
func matchBraces(t string) braceTree {
	var bt braceTree
	first := strings.IndexByte(t, '{')
	if first < 0 {
		return bt
	}
	var stack []int32
	var cands []int32
	overflow := 0
	inStr, esc := false, false
	for i := first; i < len(t); i++ {
		c := t[i]
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"', c == '\n':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			if len(stack)+overflow > 0 {
				inStr = true
			}
		case '{':
			if len(stack) < maxBraceDepth {
				stack = append(stack, int32(i))
			} else {
				overflow++
			}
		case '}':
			if overflow > 0 {
				overflow--
				continue
			}
			if len(stack) == 0 {
				continue
			}
			open := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			// The candidates that start after open are nested in this span.
			j := len(cands)
			for j > 0 && bt.spans[cands[j-1]].s > open {
				j--
			}
			lo := int32(len(bt.kids))
			bt.kids = append(bt.kids, cands[j:]...)
			cands = cands[:j]
			bt.spans = append(bt.spans, braceSpan{s: open, e: int32(i + 1), kidLo: lo, kidHi: int32(len(bt.kids))})
			cands = append(cands, int32(len(bt.spans)-1))
		}
	}
	bt.top = cands
	return bt
}

// structural runs the structural and (when strict) strict-schema passes over
// the view and reports each hit with the label and the candidate's span.
func (s *Scanner) structural(v *view, emit func(label string, sp span), strict bool) {
	bt := matchBraces(v.orig)
	if len(bt.top) == 0 {
		return
	}
	needles := candidateNeedles()
	var visit func(idx int32, depth int)
	visit = func(idx int32, depth int) {
		sp := bt.spans[idx]
		low := v.lower[sp.s:sp.e]
		hasNeedle := false
		for _, nd := range needles {
			if bytes.Contains(low, []byte(nd)) {
				hasNeedle = true
				break
			}
		}
		if !hasNeedle {
			return // nothing nested can hold one either
		}
		text := v.orig[sp.s:sp.e]
		ok, hit, topAction := inspectJSON(text)
		if !ok {
			// Prose in braces around an action object: look inside.
			if depth < maxCandidateDescent {
				for _, k := range bt.kids[sp.kidLo:sp.kidHi] {
					visit(k, depth+1)
				}
			}
			return
		}
		span := span{int(sp.s), int(sp.e)}
		if hit {
			emit(labelStructural, span)
		}
		if strict && topAction {
			if code := strictSchema(text); code != "" {
				emit(labelStrictPrefix+string(code), span)
			}
		}
	}
	for _, idx := range bt.top {
		visit(idx, 0)
	}
}

// strictSchema runs checks.md §3 steps 2–7 on a candidate and returns the
// reason code of the first failure, or "".
func strictSchema(text string) verdict.Code {
	_, err := intent.Parse(text, intent.Options{MinJustification: -1, ShapeOnly: true})
	if err == nil {
		return ""
	}
	var ie *intent.Error
	if errors.As(err, &ie) {
		return ie.Code
	}
	// Fail closed: an error the schema check did not classify still
	// marks the candidate.
	return verdict.CheckInternalError
}

// inspectJSON parses a candidate. ok says it is one valid JSON value; hit
// says it is or holds an action object (§10.4) within MaxStructuralDepth;
// topAction says its top level has the key "action", exactly as the schema
// check would see it.
func inspectJSON(text string) (ok, hit, topAction bool) {
	if !json.Valid([]byte(text)) {
		return false, false, false
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	w := jsonWalker{dec: dec}
	hit, err := w.value(1, true)
	if err != nil {
		return false, false, false
	}
	return true, hit, w.topAction
}

// jsonWalker searches a token stream for action objects. Unlike decoding
// into a map, it sees every member, so a duplicate key cannot hide an
// action value behind a later harmless one.
type jsonWalker struct {
	dec       *json.Decoder
	topAction bool
}

// value reads one value at depth and reports whether it is or contains an
// action object.
func (w *jsonWalker) value(depth int, top bool) (bool, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	if d, ok := tok.(json.Delim); ok {
		return w.container(d, depth, top)
	}
	return false, nil
}

// container reads the rest of an object or array whose opening delimiter
// was read. Containers deeper than MaxStructuralDepth are consumed without
// being searched.
func (w *jsonWalker) container(d json.Delim, depth int, top bool) (bool, error) {
	if depth > MaxStructuralDepth {
		return false, w.skip()
	}
	hit := false
	for w.dec.More() {
		if d == '[' {
			h, err := w.value(depth+1, false)
			if err != nil {
				return false, err
			}
			hit = hit || h
			continue
		}
		kt, err := w.dec.Token()
		if err != nil {
			return false, err
		}
		key, _ := kt.(string)
		if top && key == "action" {
			w.topAction = true
		}
		k := strings.ToLower(strings.TrimSpace(key))
		if isSuspiciousKey(k) {
			hit = true
		}
		var h bool
		if k == "action" {
			h, err = w.actionValue(depth + 1)
		} else {
			h, err = w.value(depth+1, false)
		}
		if err != nil {
			return false, err
		}
		hit = hit || h
	}
	// The closing delimiter.
	if _, err := w.dec.Token(); err != nil {
		return false, err
	}
	return hit, nil
}

// actionValue reads the value of an "action" member: a known action name
// (trimmed, lowercased) makes its object an action object; a container is
// searched like any other value.
func (w *jsonWalker) actionValue(depth int) (bool, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	switch t := tok.(type) {
	case string:
		return isActionName(t), nil
	case json.Delim:
		return w.container(t, depth, false)
	}
	return false, nil
}

// skip consumes the rest of a container whose opening delimiter was read.
func (w *jsonWalker) skip() error {
	for level := 1; level > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				level++
			} else {
				level--
			}
		}
	}
	return nil
}
