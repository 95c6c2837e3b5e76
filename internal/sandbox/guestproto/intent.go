package guestproto

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// maxIntentDepth bounds the nesting of an intent image (the checks' own
// limit, internal/intent.MaxDepth).
const maxIntentDepth = 32

// The members of each object of an intent image, spelled exactly.
var (
	intentMembers = []string{"action", "params", "justification", "reasoning", "ironvise"}
	runMembers    = []string{"nonce", "timeout_secs", "limits", "env"}
	limitMembers  = []string{"cpu_secs", "as_mib", "nofile", "nproc", "fsize_mib"}
	paramMembers  = []string{"command"}
)

// decodeTree builds the Intent from a strict JSON tree. Every object's
// member names must be among the known ones, compared exactly (encoding/json
// would match "Action" for "action"); values must have their types. The
// params of an action other than run_command are kept but not examined: the
// guest runs none of them.
func decodeTree(root *strictjson.Node) (*Intent, error) {
	if err := members(root, "$", intentMembers); err != nil {
		return nil, err
	}
	in := &Intent{}
	for i, k := range root.Keys {
		v, path := root.Values[i], strictjson.Child("$", k)
		var err error
		switch k {
		case "action":
			in.Action, err = str(v, path)
		case "justification", "reasoning":
			_, err = str(v, path)
		case "params":
			if v.Kind != strictjson.Object {
				return nil, fmt.Errorf("%s: %s, not an object", path, v.Kind)
			}
			in.Params = encode(v)
		case "ironvise":
			in.Run, err = decodeRun(v, path)
		}
		if err != nil {
			return nil, err
		}
	}
	if in.Action == ActionRunCommand {
		if p := root.Get("params"); p != nil {
			if _, err := commandOf(p, "$.params"); err != nil {
				return nil, err
			}
		}
	}
	return in, nil
}

// commandOf returns the command of run_command's params, which must be
// exactly {"command": "<string>"} (Command refuses an empty one; the
// report of that still carries the run's nonce).
func commandOf(n *strictjson.Node, path string) (string, error) {
	if err := members(n, path, paramMembers); err != nil {
		return "", err
	}
	c := n.Get("command")
	if c == nil {
		return "", fmt.Errorf("%s.command is missing", path)
	}
	return str(c, path+".command")
}

// decodeRun builds the host's part of the image.
func decodeRun(n *strictjson.Node, path string) (*Run, error) {
	if err := members(n, path, runMembers); err != nil {
		return nil, err
	}
	r := &Run{}
	for i, k := range n.Keys {
		v, p := n.Values[i], strictjson.Child(path, k)
		var err error
		switch k {
		case "nonce":
			if r.Nonce, err = str(v, p); err == nil && !validNonce(r.Nonce) {
				err = fmt.Errorf("%s: malformed nonce", p)
			}
		case "timeout_secs":
			r.TimeoutSecs, err = count(v, p)
		case "limits":
			r.Limits, err = decodeLimits(v, p)
		case "env":
			r.Env, err = decodeEnv(v, p)
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

func decodeLimits(n *strictjson.Node, path string) (Limits, error) {
	var l Limits
	if err := members(n, path, limitMembers); err != nil {
		return l, err
	}
	fields := map[string]*int{"cpu_secs": &l.CPUSecs, "as_mib": &l.ASMiB, "nofile": &l.NoFile, "nproc": &l.NProc, "fsize_mib": &l.FSizeMiB}
	for i, k := range n.Keys {
		v, err := count(n.Values[i], strictjson.Child(path, k))
		if err != nil {
			return l, err
		}
		*fields[k] = v
	}
	return l, nil
}

// decodeEnv reads the environment: strings of the form NAME=value. Which
// names reach the command is the guest's decision (the allowlist).
func decodeEnv(n *strictjson.Node, path string) ([]string, error) {
	if n.Kind != strictjson.Array {
		return nil, fmt.Errorf("%s: %s, not an array", path, n.Kind)
	}
	var env []string
	for i, e := range n.Elems {
		p := strictjson.Index(path, i)
		kv, err := str(e, p)
		if err != nil {
			return nil, err
		}
		if name, _, ok := strings.Cut(kv, "="); !ok || name == "" {
			return nil, fmt.Errorf("%s: not NAME=value", p)
		}
		env = append(env, kv)
	}
	return env, nil
}

// members refuses a node that is not an object, and any member name not in
// known (compared exactly, case included).
func members(n *strictjson.Node, path string, known []string) error {
	if n.Kind != strictjson.Object {
		return fmt.Errorf("%s: %s, not an object", path, n.Kind)
	}
	for _, k := range n.Keys {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s: unknown member %q (known: %s; names are case-sensitive)", path, k, strings.Join(known, ", "))
		}
	}
	return nil
}

func str(n *strictjson.Node, path string) (string, error) {
	if n.Kind != strictjson.String {
		return "", fmt.Errorf("%s: %s, not a string", path, n.Kind)
	}
	return n.Str, nil
}

// count reads a non-negative integer written as plain digits (no sign,
// fraction or exponent) that fits an int32.
func count(n *strictjson.Node, path string) (int, error) {
	if n.Kind != strictjson.Number {
		return 0, fmt.Errorf("%s: %s, not a number", path, n.Kind)
	}
	v, err := strconv.ParseUint(string(n.Num), 10, 31)
	if err != nil || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %s is not an integer from 0 to %d", path, n.Num, math.MaxInt32)
	}
	return int(v), nil
}

// encode writes a strict tree back as JSON (objects keep their member
// order), so Intent.Params holds exactly what was checked.
func encode(n *strictjson.Node) json.RawMessage {
	var b []byte
	var walk func(*strictjson.Node)
	walk = func(n *strictjson.Node) {
		switch n.Kind {
		case strictjson.Null:
			b = append(b, "null"...)
		case strictjson.Bool:
			b = append(b, n.Str...)
		case strictjson.Number:
			b = append(b, n.Num...)
		case strictjson.String:
			s, err := json.Marshal(n.Str)
			if err != nil {
				panic(bug(err)) // a valid UTF-8 string always encodes
			}
			b = append(b, s...)
		case strictjson.Array:
			b = append(b, '[')
			for i, e := range n.Elems {
				if i > 0 {
					b = append(b, ',')
				}
				walk(e)
			}
			b = append(b, ']')
		case strictjson.Object:
			b = append(b, '{')
			for i, k := range n.Keys {
				if i > 0 {
					b = append(b, ',')
				}
				key, err := json.Marshal(k)
				if err != nil {
					panic(bug(err))
				}
				b = append(append(b, key...), ':')
				walk(n.Values[i])
			}
			b = append(b, '}')
		}
	}
	walk(n)
	return b
}

// bug marks a state the code rules out.
func bug(err error) error { return fmt.Errorf("guestproto: BUG: %w", err) }
