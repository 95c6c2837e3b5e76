// Package wire is the message format of the exec socket
// (docs/api.md#the-exec-socket): the socket's path in the data directory,
// the request and the response, their size caps, and the client's side of
// the JSON — encoding a request, decoding a response — written without
// encoding/json.
//
// # Why no encoding/json
//
// exec's thin client (internal/execclient) runs from a package initialiser
// before the rest of the ironvise binary is initialised, and Go initialises
// a package only once everything it imports is. encoding/json imports
// reflect, and by the time reflect is initialised the initialisers of
// SQLite, protobuf and database/sql have run too (Go picks, among the
// packages whose imports are ready, the first by import path). So this
// package uses only packages initialised at the very start; the daemon's
// side keeps encoding/json and the strict decoder (package localsock), and
// the tests hold the two sides to each other: AppendRequest writes the
// bytes json.Marshal writes, and ParseResponse accepts only what
// strictjson.Unmarshal accepts, reading the same values.
//
// # Limitations
//
// ParseResponse is stricter than the daemon's decoder in form, not in
// meaning: a response must be one flat object with exactly the members of
// Response; numbers are integers. The daemon writes nothing else.
package wire

import (
	"encoding/base64"
	"errors"
	"path"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Size caps of one message. A request is a command line and a few names;
// a response carries the command's output, which the sandbox already caps.
const (
	MaxRequest  = 1 << 20
	MaxResponse = 64 << 20
)

// Path is the socket of the daemon serving dataDir. The daemon path is
// Linux only (package localsock), where path and path/filepath agree.
func Path(dataDir string) string { return path.Join(dataDir, "run", "ironvise.sock") }

// Request is one `ironvise exec` as the client shipped it. Workspace is
// absolute (the client resolved it against its working directory), and
// Env is the client's candidate sandbox environment.
type Request struct {
	Command      string `json:"command"`
	Session      string `json:"session,omitempty"`
	Workspace    string `json:"workspace"`
	Policy       string `json:"policy,omitempty"`
	PolicySHA256 string `json:"policy_sha256,omitempty"`
	// WorkspaceMode is exec's --workspace-mode ("" for none).
	WorkspaceMode string `json:"workspace_mode,omitempty"`
	Justification string `json:"justification"`
	// Output is how exec reports its result on stdout: "" as usual,
	// OutputJSON or OutputQuiet (exec's --json and --quiet). The daemon
	// renders the result, so it is the same with --no-daemon.
	Output string `json:"output,omitempty"`
	// Program is how the hints in the output name the binary the client
	// ran (package progname); empty: ironvise.
	Program string   `json:"program,omitempty"`
	Env     []string `json:"env,omitempty"`
}

// Values of Request.Output.
const (
	OutputJSON  = "json"
	OutputQuiet = "quiet"
)

// Response is what exec prints and exits with. Error is the message exec
// prints as "ironvise: ERROR" (empty: none). NotStarted is true when the
// daemon ran nothing for the request (a refused peer, a bad request).
type Response struct {
	Stdout     []byte `json:"stdout,omitempty"`
	Stderr     []byte `json:"stderr,omitempty"`
	Code       int    `json:"code"`
	Error      string `json:"error,omitempty"`
	NotStarted bool   `json:"not_started,omitempty"`
}

// AppendRequest appends r as JSON to dst: the bytes json.Marshal(r) gives.
func AppendRequest(dst []byte, r *Request) []byte {
	dst = append(dst, `{"command":`...)
	dst = appendString(dst, r.Command)
	dst = appendMember(dst, "session", r.Session, true)
	dst = appendMember(dst, "workspace", r.Workspace, false)
	dst = appendMember(dst, "policy", r.Policy, true)
	dst = appendMember(dst, "policy_sha256", r.PolicySHA256, true)
	dst = appendMember(dst, "workspace_mode", r.WorkspaceMode, true)
	dst = appendMember(dst, "justification", r.Justification, false)
	dst = appendMember(dst, "output", r.Output, true)
	dst = appendMember(dst, "program", r.Program, true)
	if len(r.Env) > 0 {
		dst = append(dst, `,"env":[`...)
		for i, kv := range r.Env {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, kv)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func appendMember(dst []byte, name, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendString(dst, v)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes
// one: <, > and & escaped for HTML, invalid UTF-8 as U+FFFD, and U+2028
// and U+2029 escaped for JavaScript.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&':
				dst = append(dst, c)
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// errSyntax is every reason ParseResponse refuses a message: the daemon
// never writes one, so which byte was wrong matters less than that nothing
// half-read is used.
var errSyntax = errors.New("wire: malformed response")

// ParseResponse decodes one response strictly: one object, each member of
// Response at most once and nothing else, the whole input used.
func ParseResponse(data []byte) (*Response, error) {
	p := parser{data: data}
	var r Response
	seen := map[string]bool{}
	p.space()
	if !p.take('{') {
		return nil, errSyntax
	}
	p.space()
	if !p.take('}') {
		for {
			p.space()
			key, ok := p.str()
			if !ok || seen[key] {
				return nil, errSyntax
			}
			seen[key] = true
			p.space()
			if !p.take(':') {
				return nil, errSyntax
			}
			p.space()
			if !p.member(key, &r) {
				return nil, errSyntax
			}
			p.space()
			if p.take('}') {
				break
			}
			if !p.take(',') {
				return nil, errSyntax
			}
		}
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, errSyntax
	}
	return &r, nil
}

type parser struct {
	data []byte
	pos  int
}

// space skips JSON's whitespace.
func (p *parser) space() {
	for p.pos < len(p.data) && isByteIn(p.data[p.pos], " \t\n\r") {
		p.pos++
	}
}

func isByteIn(c byte, set string) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == c {
			return true
		}
	}
	return false
}

func (p *parser) take(c byte) bool {
	if p.pos < len(p.data) && p.data[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) word(w string) bool {
	if len(p.data)-p.pos < len(w) || string(p.data[p.pos:p.pos+len(w)]) != w {
		return false
	}
	p.pos += len(w)
	return true
}

// member reads the value of key into r. null leaves the field as it is,
// as encoding/json does.
func (p *parser) member(key string, r *Response) bool {
	if p.word("null") {
		switch key {
		case "stdout", "stderr", "code", "error", "not_started":
			return true
		}
		return false
	}
	switch key {
	case "stdout", "stderr":
		s, ok := p.str()
		if !ok {
			return false
		}
		b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(b, []byte(s))
		if err != nil {
			return false
		}
		if key == "stdout" {
			r.Stdout = b[:n]
		} else {
			r.Stderr = b[:n]
		}
		return true
	case "code":
		n, ok := p.integer()
		r.Code = n
		return ok
	case "error":
		s, ok := p.str()
		r.Error = s
		return ok
	case "not_started":
		switch {
		case p.word("true"):
			r.NotStarted = true
		case p.word("false"):
			r.NotStarted = false
		default:
			return false
		}
		return true
	}
	return false
}

// integer reads a JSON number without fraction or exponent that fits an
// int: encoding/json refuses anything else for an int field.
func (p *parser) integer() (int, bool) {
	start := p.pos
	p.take('-')
	digits := p.pos
	for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
		p.pos++
	}
	if p.pos == digits || (p.data[digits] == '0' && p.pos-digits > 1) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(p.data[start:p.pos]), 10, strconv.IntSize)
	return int(n), err == nil
}

// str reads a JSON string: valid UTF-8, no raw control characters, and
// every \u escape of a surrogate half paired.
func (p *parser) str() (string, bool) {
	if !p.take('"') {
		return "", false
	}
	var out []byte
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), true
		case c < 0x20:
			return "", false
		case c == '\\':
			r, ok := p.escape()
			if !ok {
				return "", false
			}
			out = utf8.AppendRune(out, r)
		case c < utf8.RuneSelf:
			out = append(out, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			out = append(out, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
	return "", false
}

// escape reads one escape sequence at p.pos (the backslash).
func (p *parser) escape() (rune, bool) {
	if p.pos+1 >= len(p.data) {
		return 0, false
	}
	c := p.data[p.pos+1]
	p.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'u':
		r, ok := p.hex4()
		if !ok || (r >= 0xdc00 && r <= 0xdfff) {
			return 0, false
		}
		if r < 0xd800 || r > 0xdbff {
			return r, true
		}
		if !p.word(`\u`) {
			return 0, false
		}
		lo, ok := p.hex4()
		if !ok {
			return 0, false
		}
		if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
			return pair, true
		}
	}
	return 0, false
}

func (p *parser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}
