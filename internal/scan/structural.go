package scan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Structural labels (docs/design/checks.md#scanner-structural).
const (
	labelStructural      = "structural_embedded_action_json"
	labelStrictPrefix    = "strict_schema_violation:"
	labelBase64Action    = "base64_embedded_action_json"
	labelBase64Injection = "base64_embedded_injection"
	labelHexAction       = "hex_embedded_action_json"
	labelHexInjection    = "hex_embedded_injection"
	labelHTMLComment     = "html_comment_instruction"
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

// candidateNeedleList is the number of candidate needles.
const candidateNeedleList = 9

// candidateNeedles are lowercase substrings of which a candidate span must
// contain one to be parsed: the action key and the suspicious keys (their
// shortest distinct forms), the keys of other tool-call formats (tool,
// function, arguments), and \u, since a key may be spelled with escapes.
func candidateNeedles() [candidateNeedleList]string {
	return [candidateNeedleList]string{"action", "instructions", "system", "new_goal", "override_goal", "tool", "function", "argument", `\u`}
}

// isSuspiciousKey reports the keys that make an object an action object on
// their own (docs/design/checks.md#scanner-structural), compared
// case-insensitively: that page's list and the keys that only tool calls have
// (OpenAI tool_calls and function_call, Anthropic tool_use, ReAct
// action_input).
func isSuspiciousKey(k string) bool {
	switch k {
	case "instructions", "system_prompt", "new_goal", "override_goal", "system", "new_instructions",
		"tool_calls", "function_call", "tool_use", "tool_input", "action_input":
		return true
	}
	return false
}

// toolCall collects, for one object, the members that make it a tool call
// in a format other than IronVise's: a tool named by "name", "tool" or
// "function" with its arguments ({"name": "bash", "arguments": "…"},
// {"tool": "shell", "args": {…}}), or a "type" saying it is one.
type toolCall struct {
	name     string // the tool's name, when a name key holds a string
	hasName  bool
	args     bool // "arguments", or an object or array under args/kwargs/input
	params   bool // "parameters"/"params": a tool call only for a tool-like name
	typeCall bool // "type": "tool_use", "function", "tool_call", "function_call"
}

// member records one member; kind is the first byte of its value.
func (tc *toolCall) member(k string, kind byte, str string) {
	switch k {
	case "name", "tool", "tool_name", "function", "recipient_name":
		if kind == '"' {
			tc.name, tc.hasName = strings.ToLower(strings.TrimSpace(str)), true
		}
	case "arguments":
		tc.args = true
	case "args", "kwargs", "input":
		tc.args = tc.args || kind == '{' || kind == '['
	case "parameters", "params":
		tc.params = true
	case "type":
		switch strings.ToLower(str) {
		case "tool_use", "function", "tool_call", "function_call":
			tc.typeCall = kind == '"'
		}
	}
}

func (tc *toolCall) hit() bool {
	return tc.hasName && (tc.args || tc.typeCall || tc.params && toolLikeName(tc.name))
}

// toolLikeName reports tool names that run, read or fetch something.
func toolLikeName(n string) bool {
	if intent.Action(n).Known() {
		return true
	}
	switch n {
	case "bash", "shell", "sh", "terminal", "exec", "execute", "execute_command", "run", "run_shell", "run_shell_command",
		"shell_exec", "python", "code_interpreter", "computer", "cmd", "powershell", "write_file", "edit_file",
		"delete_file", "fetch", "browser", "web_fetch", "http_request", "curl":
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

// matchBraces is the candidate finder of
// docs/design/checks.md#scanner-structural: a brace matcher that knows JSON
// strings and escapes. An unbalanced '}' is skipped; an unclosed '{' does not
// hide the balanced spans inside it. A string also ends at a raw newline,
// which JSON forbids inside strings, so a stray quote in prose cannot swallow
// the rest of the text.
func matchBraces(t string, cls *[256]uint8) braceTree {
	var bt braceTree
	first := strings.IndexByte(t, '{')
	if first < 0 {
		return bt
	}
	var stack []int32
	var cands []int32
	overflow := 0
	inStr := false
	for i := first; i < len(t); i++ {
		// Most bytes matter in neither state; skip them in a tight loop.
		for i < len(t) && cls[t[i]]&clsBrace == 0 {
			i++
		}
		if i == len(t) {
			break
		}
		c := t[i]
		if inStr {
			switch c {
			case '\\':
				i++ // the escaped byte, whatever it is
			case '"', '\n':
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

// keyedAt reports whether needle occurs, from offset at on, right after a
// quote (spaces allowed between), as the start of a JSON key would.
func keyedAt(lower []byte, needle string, at int) bool {
	for at >= 0 && at < len(lower) {
		// Skip the whitespace a key may start with, raw or escaped (the
		// walker trims keys).
		j := at - 1
		for j >= 0 {
			if lower[j] == ' ' || lower[j] == '\t' {
				j--
			} else if j >= 1 && lower[j-1] == '\\' && strings.IndexByte("tnrf", lower[j]) >= 0 {
				j -= 2
			} else {
				break
			}
		}
		if j >= 0 && lower[j] == '"' {
			return true
		}
		k := bytes.Index(lower[at+1:], []byte(needle))
		if k < 0 {
			return false
		}
		at += 1 + k
	}
	return false
}

// structural runs the structural and (when strict) strict-schema passes over
// the view and reports each hit with the label and the candidate's span.
func (s *Scanner) structural(v *view, emit func(label string, sp span), strict bool) {
	present := s.viewHints(v) & s.needleMask
	if present == 0 {
		return // no candidate could be parsed
	}
	var needles []string
	keyed := false
	for i, nd := range candidateNeedles() {
		id := s.needles[i]
		if present&(1<<id) == 0 {
			continue
		}
		needles = append(needles, nd)
		keyed = keyed || nd == `\u` || keyedAt(v.lower, nd, int(v.first[id]))
	}
	if !keyed {
		return // the needles occur only in prose ("systemd"), never as a key
	}
	bt := matchBraces(v.orig, s.class)
	if len(bt.top) == 0 {
		return
	}
	// Identical candidates (an injected object repeated down a page) are
	// parsed once per text.
	type verdicts struct {
		ok, hit, topAction bool
		code               string
	}
	seen := map[string]verdicts{}
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
		r, cached := seen[text]
		if !cached {
			r.ok, r.hit, r.topAction = inspectJSON(text)
			if r.ok && strict && r.topAction {
				r.code = string(strictSchema(text))
			}
			seen[text] = r
		}
		if !r.ok {
			// Prose in braces around an action object: look inside.
			if depth < maxCandidateDescent {
				for _, k := range bt.kids[sp.kidLo:sp.kidHi] {
					visit(k, depth+1)
				}
			}
			return
		}
		span := span{int(sp.s), int(sp.e)}
		if r.hit {
			emit(labelStructural, span)
		}
		if r.code != "" {
			emit(labelStrictPrefix+r.code, span)
		}
	}
	for _, idx := range bt.top {
		visit(idx, 0)
	}
}

// strictSchema runs docs/design/checks.md#schema-check steps 2–7 on a
// candidate and returns the reason code of the first failure, or "".
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
// says it is or holds an action object
// (docs/design/checks.md#scanner-structural) within MaxStructuralDepth;
// topAction says its top level has the key "action", exactly as the schema
// check would see it.
func inspectJSON(text string) (ok, hit, topAction bool) {
	if !json.Valid([]byte(text)) {
		return false, false, false
	}
	w := jsonWalker{s: text}
	hit = w.value(1, true)
	return true, hit, w.topAction
}

// jsonWalker searches valid JSON for action objects without building a
// tree. Unlike decoding into a map, it sees every member, so a duplicate
// key cannot hide an action value behind a later harmless one. Its input
// has passed json.Valid, so it does not re-check the grammar.
type jsonWalker struct {
	s         string
	i         int
	topAction bool
}

func (w *jsonWalker) space() {
	for w.i < len(w.s) {
		switch w.s[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// value reads one value at depth and reports whether it is or contains an
// action object. Containers deeper than MaxStructuralDepth are skipped.
func (w *jsonWalker) value(depth int, top bool) bool {
	w.space()
	if w.i >= len(w.s) {
		return false
	}
	switch w.s[w.i] {
	case '{', '[':
		if depth > MaxStructuralDepth {
			w.skipContainer()
			return false
		}
		if w.s[w.i] == '[' {
			return w.array(depth)
		}
		return w.object(depth, top)
	case '"':
		w.skipString()
	default:
		for w.i < len(w.s) && !strings.ContainsRune(",]} \t\n\r", rune(w.s[w.i])) {
			w.i++
		}
	}
	return false
}

func (w *jsonWalker) array(depth int) bool {
	w.i++ // '['
	hit := false
	for {
		w.space()
		if w.i >= len(w.s) || w.s[w.i] == ']' {
			w.i++
			return hit
		}
		if w.value(depth+1, false) {
			hit = true
		}
		w.space()
		if w.i < len(w.s) && w.s[w.i] == ',' {
			w.i++
		}
	}
}

func (w *jsonWalker) object(depth int, top bool) bool {
	w.i++ // '{'
	hit := false
	var tc toolCall
	for {
		w.space()
		if w.i >= len(w.s) || w.s[w.i] == '}' {
			w.i++
			return hit || tc.hit()
		}
		key := w.str()
		w.space()
		w.i++ // ':'
		if top && key == "action" {
			w.topAction = true
		}
		k := strings.ToLower(strings.TrimSpace(key))
		if isSuspiciousKey(k) {
			hit = true
		}
		w.space()
		var kind byte
		if w.i < len(w.s) {
			kind = w.s[w.i]
		}
		switch {
		case k == "action" && kind == '"':
			if isActionName(w.str()) {
				hit = true
			}
		case kind == '"':
			tc.member(k, kind, w.str())
		default:
			tc.member(k, kind, "")
			if w.value(depth+1, false) {
				hit = true
			}
		}
		w.space()
		if w.i < len(w.s) && w.s[w.i] == ',' {
			w.i++
		}
	}
}

// str reads a string and returns it unescaped.
func (w *jsonWalker) str() string {
	start := w.i + 1
	w.skipString()
	raw := w.s[start : w.i-1]
	if strings.IndexByte(raw, '\\') < 0 {
		return raw
	}
	var v string
	// The walker's input passed json.Valid, so this cannot fail.
	if err := json.Unmarshal([]byte(w.s[start-1:w.i]), &v); err != nil {
		return raw
	}
	return v
}

// skipString moves past a string starting at its opening quote.
func (w *jsonWalker) skipString() {
	w.i++
	for w.i < len(w.s) {
		switch w.s[w.i] {
		case '\\':
			w.i += 2
		case '"':
			w.i++
			return
		default:
			w.i++
		}
	}
}

// skipContainer moves past an object or array starting at its opening
// delimiter.
func (w *jsonWalker) skipContainer() {
	level := 0
	for w.i < len(w.s) {
		switch w.s[w.i] {
		case '"':
			w.skipString()
			continue
		case '{', '[':
			level++
		case '}', ']':
			level--
			if level == 0 {
				w.i++
				return
			}
		}
		w.i++
	}
}

// htmlCommentPattern tests the body of an HTML comment (lowercased) for
// what a rendered page hides from its reader and shows a model that reads
// the source: a command that fetches, runs or deletes, a tool or action
// name, an injection phrase, or words addressed to an AI. Ordinary comments
// (<!-- TOC -->, <!-- prettier-ignore -->, <!-- run `make docs` -->) hold
// none of them.
const htmlCommentPattern = `\b(sudo\s+\S|(curl|wget)\s[^\n]{0,200}https?://|rm\s+-[a-z]*[rf]|chmod\s+[0-7+]|(ba|z|da|k)?sh\s+-c\b|python[0-9.]*\s+-c\b|nc\s+-[a-z]*e|eval\s*[("$]|run_command|read_file|http_get|(ignore|disregard|forget)\s+(all|any|the|previous|prior|above|your|everything)\b|you\s+must\b|please\s+(run|execute|call|invoke|fetch|send|read)\b|(run|execute)\s+the\s+following\b|(dear\s+)?(ai|assistant|llm|claude|chatgpt|copilot|gemini|language\s+model|ai\s+agents?|coding\s+agents?)\s*[:,])|\|\s*(sudo\s+)?(ba|z)?sh\b|\$\(\s*(curl|wget|cat|id|whoami)\b`

// htmlComments reports each HTML comment (<!-- … -->, or an unterminated
// one up to MaxHTMLComment bytes) whose body htmlCommentPattern matches.
func (s *Scanner) htmlComments(v *view, emit func(span)) {
	if s.viewHints(v)&(1<<s.htmlHint) == 0 {
		return
	}
	// A test that failed to compile withholds every comment.
	re, err := s.htmlComment()
	open := []byte("<!--")
	for at := int(v.first[s.htmlHint]); at >= 0 && at < len(v.lower); {
		k := bytes.Index(v.lower[at:], open)
		if k < 0 {
			return
		}
		start := at + k
		body := start + len(open)
		limit := min(len(v.lower), body+MaxHTMLComment)
		end := limit
		if c := bytes.Index(v.lower[body:limit], []byte("-->")); c >= 0 {
			end = body + c + 3
		}
		if err != nil || re.Match(v.lower[body:end]) {
			emit(span{start, end})
		}
		at = max(end, start+1)
	}
}
