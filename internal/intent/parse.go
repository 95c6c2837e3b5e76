package intent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/strictjson"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Error is a schema denial: the reason code and "<json path>: <problem>".
type Error struct {
	Code    verdict.Code
	Path    string
	Problem string
}

// Error implements error.
func (e *Error) Error() string { return e.Path + ": " + e.Problem }

// Observations gives the schema check read access to the current session's
// observation events, for findings evidence
// (docs/design/checks.md#schema-check step 9). It is an interface so that
// this package never imports the ledger.
type Observations interface {
	// Observation returns the stored content of the event with sequence
	// seq when that event is an observation the current session recorded
	// from an action it executed, and ok = false otherwise (a client's
	// own observation is not evidence).
	Observation(seq int64) (content string, ok bool, err error)
}

// Options tunes the schema check.
type Options struct {
	// MinJustification is the minimum justification length in visible
	// characters (see VisibleLen), for every action except complete
	// (tripwire.json min_justification_length). Negative means the default.
	MinJustification int
	// Observations resolves findings evidence. Nil means the session has
	// no observations, so any cited sequence is unverified.
	Observations Observations
	// NoWrite refuses write_file: a session whose intents IronVise
	// executes cannot run a write (the agent loop, the API's intents).
	NoWrite bool
	// ShapeOnly stops after the justification
	// (docs/design/checks.md#schema-check steps 2–7), as the output scanner's
	// strict-schema pass requires.
	ShapeOnly bool
}

var topKeys = []string{"action", "params", "justification", "reasoning"}

var paramKeys = map[Action][]string{
	RunCommand: {"command"},
	ReadFile:   {"path"},
	HTTPGet:    {"url"},
	Complete:   {"findings"},
	WriteFile:  {"path", "content_sha256", "content_bytes"},
}

var findingKeys = []string{"severity", "title", "evidence", "recommendation", "evidence_sequence", "evidence_quotes"}

// Parse runs the schema check on the raw model text and returns the intent,
// or an *Error naming the first failure in the order of
// docs/design/checks.md#schema-check.
func Parse(raw string, opt Options) (*Intent, error) {
	in, err := parse(raw, opt)
	if err != nil {
		return nil, err
	}
	return in, nil
}

func parse(raw string, opt Options) (*Intent, *Error) {
	// (1) size — before any decoding work, so a huge reply costs nothing.
	if len(raw) > MaxRawBytes {
		return nil, TooLarge(len(raw))
	}
	// encoding/json silently replaces invalid UTF-8 with U+FFFD, which would
	// let two different byte strings parse to the same intent.
	if !utf8.ValidString(raw) {
		return nil, &Error{verdict.SchemaInvalidString, "$", "invalid UTF-8"}
	}
	// (2) syntax and framing.
	root, err := decodeTree(StripFence(raw))
	if err != nil {
		return nil, err
	}
	// (3) top-level keys.
	for _, k := range root.Keys {
		if !slices.Contains(topKeys, k) {
			return nil, unknownKey("$", k, topKeys, "")
		}
	}
	actionNode := root.Get("action")
	if actionNode == nil {
		return nil, &Error{verdict.SchemaMissingKey, "$.action", "required"}
	}
	// (4) types.
	in := &Intent{}
	action, e := stringField(actionNode, "$.action", 0, 0)
	if e != nil {
		return nil, e
	}
	params := root.Get("params")
	if params != nil && params.Kind != strictjson.Object {
		return nil, typeError("$.params", "object", params)
	}
	if n := root.Get("justification"); n != nil {
		if in.Justification, e = stringField(n, "$.justification", MaxJustificationRunes, 0); e != nil {
			return nil, e
		}
	}
	if n := root.Get("reasoning"); n != nil {
		if in.Reasoning, e = stringField(n, "$.reasoning", 0, MaxReasoningBytes); e != nil {
			return nil, e
		}
	}
	// (5) action.
	in.Action = Action(action)
	if !in.Action.Known() {
		return nil, &Error{verdict.SchemaUnknownAction, "$.action", fmt.Sprintf("unknown action %q (allowed: %s)", action, joinActions())}
	}
	if in.Action == WriteFile && opt.NoWrite {
		return nil, &Error{verdict.SchemaUnknownAction, "$.action", "write_file is not executed here: IronVise runs no writes itself (the workspace is read-only in the sandbox); write under $TMPDIR with run_command, or let an agent hook check the agent's own writes"}
	}
	// (6) params.
	if params == nil {
		params = &strictjson.Node{Kind: strictjson.Object}
	}
	if e := parseParams(in, params); e != nil {
		return nil, e
	}
	// (7) justification.
	if in.Action != Complete {
		minLen := opt.MinJustification
		if minLen < 0 {
			minLen = DefaultMinJustify
		}
		// Security: only characters a reader sees count, so a justification
		// of zero-width spaces or bidi controls cannot stand in for one.
		if got := VisibleLen(in.Justification); got < minLen {
			return nil, &Error{verdict.SchemaJustificationShort, "$.justification",
				fmt.Sprintf("must be at least %d visible characters (got %d; spaces, control, zero-width and bidi characters do not count)", minLen, got)}
		}
	}
	if opt.ShapeOnly || in.Action != Complete {
		return in, nil
	}
	// (8) findings structure.
	if f := params.Get("findings"); f != nil {
		if in.Findings, e = parseFindings(f); e != nil {
			return nil, e
		}
	}
	// (9) findings evidence.
	if e := verifyEvidence(in.Findings, opt.Observations); e != nil {
		return nil, e
	}
	return in, nil
}

func parseParams(in *Intent, params *strictjson.Node) *Error {
	allowed := paramKeys[in.Action]
	for _, k := range params.Keys {
		if !slices.Contains(allowed, k) {
			return unknownKey("$.params", k, allowed, " for "+string(in.Action))
		}
	}
	var e *Error
	switch in.Action {
	case RunCommand:
		in.Command, e = requiredString(params, "command", MaxCommandBytes)
	case ReadFile:
		in.Path, e = requiredString(params, "path", MaxPathBytes)
	case WriteFile:
		in.Path, e = requiredString(params, "path", MaxPathBytes)
		if e == nil {
			in.Write, e = parseWriteInfo(params)
		}
	case HTTPGet:
		in.URL, e = requiredString(params, "url", MaxURLBytes)
		if e == nil {
			for _, r := range in.URL {
				if unicode.IsSpace(r) || unicode.IsControl(r) {
					return &Error{verdict.SchemaInvalidString, "$.params.url", fmt.Sprintf("contains whitespace or a control character (%U)", r)}
				}
			}
		}
	case Complete:
		if f := params.Get("findings"); f != nil && f.Kind != strictjson.Array {
			return typeError("$.params.findings", "array", f)
		}
	}
	return e
}

// parseWriteInfo reads write_file's optional content_sha256 (64 lowercase
// hex digits) and content_bytes (an integer from 0 to MaxContentBytes).
func parseWriteInfo(params *strictjson.Node) (*WriteInfo, *Error) {
	w := &WriteInfo{}
	if n := params.Get("content_sha256"); n != nil {
		s, e := stringField(n, "$.params.content_sha256", 0, 64)
		if e != nil {
			return nil, e
		}
		if !isLowerHex(s, 64) {
			return nil, &Error{verdict.SchemaInvalidString, "$.params.content_sha256", "must be 64 lowercase hex digits (the SHA-256 of the content, never the content itself)"}
		}
		w.SHA256 = s
	}
	if n := params.Get("content_bytes"); n != nil {
		if n.Kind != strictjson.Number {
			return nil, typeError("$.params.content_bytes", "integer", n)
		}
		v, err := strconv.ParseInt(string(n.Num), 10, 64)
		if err != nil || v < 0 || v > MaxContentBytes {
			return nil, &Error{verdict.SchemaInvalidString, "$.params.content_bytes", fmt.Sprintf("must be an integer from 0 to %d, got %s", MaxContentBytes, n.Num)}
		}
		w.Bytes = &v
	}
	if w.SHA256 == "" && w.Bytes == nil {
		return nil, nil
	}
	return w, nil
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// requiredString reads a required, non-empty string param limited in bytes.
func requiredString(params *strictjson.Node, key string, maxBytes int) (string, *Error) {
	path := "$.params." + key
	n := params.Get(key)
	if n == nil {
		return "", &Error{verdict.SchemaMissingKey, path, "required"}
	}
	s, e := stringField(n, path, 0, maxBytes)
	if e != nil {
		return "", e
	}
	if s == "" {
		return "", &Error{verdict.SchemaInvalidString, path, "must not be empty"}
	}
	return s, nil
}

// stringField checks that n is a string without NUL and within the limits
// (maxRunes in code points, maxBytes in bytes; 0 = unlimited).
func stringField(n *strictjson.Node, path string, maxRunes, maxBytes int) (string, *Error) {
	if n.Kind != strictjson.String {
		return "", typeError(path, "string", n)
	}
	s := n.Str
	if strings.IndexByte(s, 0) >= 0 {
		return "", &Error{verdict.SchemaInvalidString, path, "contains NUL"}
	}
	if maxBytes > 0 && len(s) > maxBytes {
		return "", &Error{verdict.SchemaInvalidString, path, fmt.Sprintf("too long (%d > %d bytes)", len(s), maxBytes)}
	}
	if maxRunes > 0 {
		if c := utf8.RuneCountInString(s); c > maxRunes {
			return "", &Error{verdict.SchemaInvalidString, path, fmt.Sprintf("too long (%d > %d characters)", c, maxRunes)}
		}
	}
	return s, nil
}

func parseFindings(arr *strictjson.Node) ([]Finding, *Error) {
	if len(arr.Elems) > MaxFindings {
		return nil, &Error{verdict.SchemaFindingInvalid, "$.params.findings", fmt.Sprintf("too many findings (%d > %d)", len(arr.Elems), MaxFindings)}
	}
	out := make([]Finding, 0, len(arr.Elems))
	for i, fn := range arr.Elems {
		path := "$.params.findings[" + strconv.Itoa(i) + "]"
		f, e := parseFinding(fn, path)
		if e != nil {
			return nil, e
		}
		out = append(out, f)
	}
	return out, nil
}

func parseFinding(n *strictjson.Node, path string) (Finding, *Error) {
	var f Finding
	if n.Kind != strictjson.Object {
		return f, typeError(path, "object", n)
	}
	for _, k := range n.Keys {
		if !slices.Contains(findingKeys, k) {
			return f, unknownKey(path, k, findingKeys, "")
		}
	}
	for _, k := range []string{"severity", "title", "evidence", "recommendation"} {
		if n.Get(k) == nil {
			return f, &Error{verdict.SchemaMissingKey, path + "." + k, "required"}
		}
	}
	sev, e := stringField(n.Get("severity"), path+".severity", 0, 0)
	if e != nil {
		return f, e
	}
	f.Severity = Severity(sev)
	switch f.Severity {
	case Low, Medium, High, Critical:
	default:
		return f, &Error{verdict.SchemaFindingInvalid, path + ".severity", fmt.Sprintf("unknown severity %q (allowed: low, medium, high, critical)", sev)}
	}
	if f.Title, e = stringField(n.Get("title"), path+".title", MaxTitleRunes, 0); e != nil {
		return f, e
	}
	if strings.TrimSpace(f.Title) == "" {
		return f, &Error{verdict.SchemaInvalidString, path + ".title", "must not be empty"}
	}
	if f.Evidence, e = stringField(n.Get("evidence"), path+".evidence", MaxEvidenceRunes, 0); e != nil {
		return f, e
	}
	if f.Recommendation, e = stringField(n.Get("recommendation"), path+".recommendation", MaxRecommendationRunes, 0); e != nil {
		return f, e
	}
	f.EvidenceSequence = []int64{}
	if sn := n.Get("evidence_sequence"); sn != nil {
		if f.EvidenceSequence, e = sequenceList(sn, path+".evidence_sequence"); e != nil {
			return f, e
		}
	}
	f.EvidenceQuotes = []string{}
	if qn := n.Get("evidence_quotes"); qn != nil {
		if qn.Kind != strictjson.Array {
			return f, typeError(path+".evidence_quotes", "array", qn)
		}
		if len(qn.Elems) > MaxEvidenceRefs {
			return f, &Error{verdict.SchemaFindingInvalid, path + ".evidence_quotes", fmt.Sprintf("too many quotes (%d > %d)", len(qn.Elems), MaxEvidenceRefs)}
		}
		for i, q := range qn.Elems {
			s, e := stringField(q, path+".evidence_quotes["+strconv.Itoa(i)+"]", MaxQuoteRunes, 0)
			if e != nil {
				return f, e
			}
			f.EvidenceQuotes = append(f.EvidenceQuotes, s)
		}
	}
	if f.Severity.NeedsEvidence() && len(f.EvidenceSequence) == 0 {
		return f, &Error{verdict.SchemaFindingInvalid, path, "high/critical finding needs evidence_sequence"}
	}
	if len(f.EvidenceQuotes) > len(f.EvidenceSequence) {
		return f, &Error{verdict.SchemaFindingInvalid, path, "more quotes than sequences"}
	}
	return f, nil
}

func sequenceList(n *strictjson.Node, path string) ([]int64, *Error) {
	if n.Kind != strictjson.Array {
		return nil, typeError(path, "array", n)
	}
	if len(n.Elems) > MaxEvidenceRefs {
		return nil, &Error{verdict.SchemaFindingInvalid, path, fmt.Sprintf("too many sequences (%d > %d)", len(n.Elems), MaxEvidenceRefs)}
	}
	out := make([]int64, 0, len(n.Elems))
	for i, el := range n.Elems {
		p := path + "[" + strconv.Itoa(i) + "]"
		if el.Kind != strictjson.Number {
			return nil, typeError(p, "integer", el)
		}
		// Only plain integer literals: 1.0 or 1e0 are a different number
		// form that a lenient reader would accept and round.
		v, err := strconv.ParseInt(string(el.Num), 10, 64)
		if err != nil {
			return nil, &Error{verdict.SchemaType, p, "expected integer, got number " + string(el.Num)}
		}
		if v < 1 {
			return nil, &Error{verdict.SchemaFindingInvalid, p, fmt.Sprintf("sequence must be at least 1 (got %d)", v)}
		}
		out = append(out, v)
	}
	return out, nil
}

func verifyEvidence(fs []Finding, obs Observations) *Error {
	for i, f := range fs {
		for j, seq := range f.EvidenceSequence {
			path := fmt.Sprintf("$.params.findings[%d].evidence_sequence[%d]", i, j)
			content, ok := "", false
			if obs != nil {
				var err error
				content, ok, err = obs.Observation(seq)
				if err != nil {
					return &Error{verdict.SchemaFindingUnverified, path, fmt.Sprintf("sequence %d could not be read: %v", seq, err)}
				}
			}
			if !ok {
				return &Error{verdict.SchemaFindingUnverified, path, fmt.Sprintf("sequence %d is not an observation IronVise recorded from an action it executed in this session (events appended through POST /api/sessions/{id}/events are not evidence); cite the observation of a run_command, read_file or http_get", seq)}
			}
			quote := ""
			if j < len(f.EvidenceQuotes) {
				quote = f.EvidenceQuotes[j]
			}
			// A high or critical finding must show what it saw: without a
			// quote any earlier observation "backs" it (issue 23, item 6).
			if quote == "" && f.Severity.NeedsEvidence() {
				return &Error{verdict.SchemaFindingUnverified, fmt.Sprintf("$.params.findings[%d].evidence_quotes[%d]", i, j), fmt.Sprintf("a %s finding needs a non-empty quote copied from observation %d", f.Severity, seq)}
			}
			if quote != "" && !strings.Contains(content, quote) {
				return &Error{verdict.SchemaFindingUnverified, fmt.Sprintf("$.params.findings[%d].evidence_quotes[%d]", i, j), fmt.Sprintf("quote not found in observation %d", seq)}
			}
		}
	}
	return nil
}

func typeError(path, want string, got *strictjson.Node) *Error {
	return &Error{verdict.SchemaType, path, fmt.Sprintf("expected %s, got %s", want, got.Kind)}
}

func unknownKey(path, key string, allowed []string, suffix string) *Error {
	return &Error{verdict.SchemaUnknownKey, path, fmt.Sprintf("unknown key %q%s (allowed: %s)", key, suffix, strings.Join(allowed, ", "))}
}

func joinActions() string {
	s := make([]string, len(Actions))
	for i, a := range Actions {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}
