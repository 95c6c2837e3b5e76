package guard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// maxPayloadDepth bounds payload nesting: the intent's own limit (32) plus
// the payload and intent levels, with room to spare.
const maxPayloadDepth = 40

var (
	requestKeys  = []string{"nonce", "ts_ms", "session_id", "step", "goal", "intent", "flags"}
	intentKeys   = []string{"action", "params", "justification", "reasoning"}
	responseKeys = []string{"nonce", "verdict", "reason", "raw", "model", "latency_ms"}
)

// decodeRequest decodes an authenticated request payload strictly.
func decodeRequest(raw []byte) (Request, error) {
	var r Request
	root, err := decodeTree(raw)
	if err != nil {
		return r, err
	}
	if err := exactKeys(root, "$", requestKeys, nil); err != nil {
		return r, err
	}
	if r.Nonce, err = uintField(root, "nonce"); err != nil {
		return r, err
	}
	if r.TsMs, err = intField(root, "ts_ms"); err != nil {
		return r, err
	}
	step, err := intField(root, "step")
	if err != nil {
		return r, err
	}
	if step < 0 || step > 1<<31 {
		return r, malformed("$.step: out of range")
	}
	r.Step = int(step)
	if r.SessionID, err = strField(root, "session_id"); err != nil {
		return r, err
	}
	if r.Goal, err = strField(root, "goal"); err != nil {
		return r, err
	}
	in := root.Get("intent")
	if err := exactKeys(in, "$.intent", intentKeys, nil); err != nil {
		return r, err
	}
	if r.Intent.Action, err = strField(in, "action"); err != nil {
		return r, err
	}
	if r.Intent.Justification, err = strField(in, "justification"); err != nil {
		return r, err
	}
	if r.Intent.Reasoning, err = strField(in, "reasoning"); err != nil {
		return r, err
	}
	if p := in.Get("params"); p.Kind != strictjson.Object {
		return r, malformed("$.intent.params: expected object, got " + p.Kind.String())
	}
	flags := root.Get("flags")
	if flags.Kind != strictjson.Array {
		return r, malformed("$.flags: expected array, got " + flags.Kind.String())
	}
	r.Flags = make([]string, 0, len(flags.Elems))
	for i, f := range flags.Elems {
		if f.Kind != strictjson.String {
			return r, malformed(fmt.Sprintf("$.flags[%d]: expected string, got %s", i, f.Kind))
		}
		r.Flags = append(r.Flags, f.Str)
	}
	// The tree has shown every key is exact, unique and well typed; this
	// second decode only extracts params as raw JSON for the prompt.
	var withParams struct {
		Intent struct {
			Params json.RawMessage `json:"params"`
		} `json:"intent"`
	}
	if err := json.Unmarshal(raw, &withParams); err != nil {
		return r, malformed("$.intent.params: " + err.Error())
	}
	r.Intent.Params = withParams.Intent.Params
	return r, nil
}

// decodeResponse decodes an authenticated response payload strictly and
// checks its limits.
func decodeResponse(raw []byte) (Response, error) {
	var r Response
	root, err := decodeTree(raw)
	if err != nil {
		return r, err
	}
	if err := exactKeys(root, "$", responseKeys, []string{"error"}); err != nil {
		return r, err
	}
	if r.Nonce, err = uintField(root, "nonce"); err != nil {
		return r, err
	}
	if r.LatencyMs, err = intField(root, "latency_ms"); err != nil {
		return r, err
	}
	if r.LatencyMs < 0 {
		return r, malformed("$.latency_ms: negative")
	}
	if r.Verdict, err = strField(root, "verdict"); err != nil {
		return r, err
	}
	if r.Verdict != VerdictAllow && r.Verdict != VerdictDeny {
		return r, malformed(fmt.Sprintf("$.verdict: %q is neither ALLOW nor DENY", r.Verdict))
	}
	if r.Reason, err = strField(root, "reason"); err != nil {
		return r, err
	}
	if n := utf8.RuneCountInString(r.Reason); n > MaxReasonRunes {
		return r, malformed(fmt.Sprintf("$.reason: %d characters (max %d)", n, MaxReasonRunes))
	}
	if r.Raw, err = strField(root, "raw"); err != nil {
		return r, err
	}
	if len(r.Raw) > MaxRawBytes {
		return r, malformed(fmt.Sprintf("$.raw: %d bytes (max %d)", len(r.Raw), MaxRawBytes))
	}
	if r.Model, err = strField(root, "model"); err != nil {
		return r, err
	}
	if root.Get("error") != nil {
		if r.Error, err = strField(root, "error"); err != nil {
			return r, err
		}
		if r.Error == "" {
			return r, malformed("$.error: empty")
		}
	}
	return r, nil
}

func malformed(msg string) error { return fmt.Errorf("payload: %s: %w", msg, ErrMalformed) }

func decodeTree(raw []byte) (*strictjson.Node, error) {
	// encoding/json turns invalid UTF-8 into U+FFFD; reject it instead so
	// the MACed bytes and the decoded text cannot disagree.
	if !utf8.Valid(raw) {
		return nil, malformed("invalid UTF-8")
	}
	root, err := strictjson.Decode(raw, maxPayloadDepth)
	if err != nil {
		return nil, malformed(err.Error())
	}
	return root, nil
}

// exactKeys checks that n is an object holding every required key, no key
// outside required and optional, and no null value.
func exactKeys(n *strictjson.Node, path string, required, optional []string) error {
	if n == nil || n.Kind != strictjson.Object {
		kind := "nothing"
		if n != nil {
			kind = n.Kind.String()
		}
		return malformed(path + ": expected object, got " + kind)
	}
	for i, k := range n.Keys {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return malformed(fmt.Sprintf("%s: unknown key %q (allowed: %s)", path, k, strings.Join(append(slices.Clone(required), optional...), ", ")))
		}
		if n.Values[i].Kind == strictjson.Null {
			return malformed(fmt.Sprintf("%s: null", strictjson.Child(path, k)))
		}
	}
	for _, k := range required {
		if n.Get(k) == nil {
			return malformed(fmt.Sprintf("%s: missing key %q", path, k))
		}
	}
	return nil
}

func strField(n *strictjson.Node, key string) (string, error) {
	v := n.Get(key)
	if v.Kind != strictjson.String {
		return "", malformed(fmt.Sprintf("%s: expected string, got %s", key, v.Kind))
	}
	return v.Str, nil
}

func uintField(n *strictjson.Node, key string) (uint64, error) {
	v := n.Get(key)
	if v.Kind != strictjson.Number {
		return 0, malformed(fmt.Sprintf("%s: expected integer, got %s", key, v.Kind))
	}
	u, err := strconv.ParseUint(v.Num.String(), 10, 64)
	if err != nil {
		return 0, malformed(fmt.Sprintf("%s: not an unsigned 64-bit integer: %s", key, v.Num))
	}
	return u, nil
}

func intField(n *strictjson.Node, key string) (int64, error) {
	v := n.Get(key)
	if v.Kind != strictjson.Number {
		return 0, malformed(fmt.Sprintf("%s: expected integer, got %s", key, v.Kind))
	}
	i, err := strconv.ParseInt(v.Num.String(), 10, 64)
	if err != nil {
		return 0, malformed(fmt.Sprintf("%s: not a 64-bit integer: %s", key, v.Num))
	}
	return i, nil
}
