package strictjson

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// parser is a hand-written RFC 8259 parser. encoding/json's token reader
// decodes each string through reflection and costs a third of a whole
// check pipeline step; this one reads the bytes once. It accepts exactly
// RFC 8259 JSON (FuzzDecode compares it with encoding/json) and is stricter
// in one place: an escaped unpaired surrogate (\ud800) is an error, where
// encoding/json would silently substitute U+FFFD.
type parser struct {
	data     []byte
	pos      int
	maxDepth int
}

func (p *parser) errorf(path, format string, args ...any) *Error {
	return &Error{ErrSyntax, path, fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(path string, depth int) (*Node, *Error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.errorf("$", "unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{' || c == '[':
		if depth > p.maxDepth {
			return nil, p.errorf(path, "nesting deeper than %d", p.maxDepth)
		}
		if c == '{' {
			return p.object(path, depth)
		}
		return p.array(path, depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &Node{Kind: String, Str: s}, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", &Node{Kind: Bool, Str: "true"})
	case c == 'f':
		return p.literal("false", &Node{Kind: Bool, Str: "false"})
	case c == 'n':
		return p.literal("null", &Node{Kind: Null})
	default:
		return nil, p.errorf("$", "invalid character %s looking for beginning of value", quoteChar(c))
	}
}

func (p *parser) literal(word string, n *Node) (*Node, *Error) {
	if !strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		return nil, p.errorf("$", "invalid literal at offset %d", p.pos)
	}
	p.pos += len(word)
	return n, nil
}

func (p *parser) object(path string, depth int) (*Node, *Error) {
	p.pos++ // '{'
	n := &Node{Kind: Object}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("$", "unexpected end of input")
		}
		if p.data[p.pos] != '"' {
			return nil, p.errorf("$", "invalid character %s looking for beginning of object key string", quoteChar(p.data[p.pos]))
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		// A duplicate key is a parser differential: one reader keeps the
		// first value, another the last.
		if n.Get(key) != nil {
			return nil, &Error{ErrDuplicate, path, fmt.Sprintf("duplicate key %q", key)}
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("$", "expected ':' after object key at offset %d", p.pos)
		}
		p.pos++
		v, err := p.value(Child(path, key), depth+1)
		if err != nil {
			return nil, err
		}
		n.Keys = append(n.Keys, key)
		n.Values = append(n.Values, v)
		if done, err := p.separator('}', "object key:value pair"); err != nil || done {
			return n, err
		}
	}
}

// separator reads what follows a member or element: ',' (more follow) or
// the closing byte (done).
func (p *parser) separator(closing byte, after string) (done bool, err *Error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false, p.errorf("$", "unexpected end of input")
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		return false, nil
	case closing:
		p.pos++
		return true, nil
	}
	return false, p.errorf("$", "invalid character %s after %s", quoteChar(p.data[p.pos]), after)
}

func (p *parser) array(path string, depth int) (*Node, *Error) {
	p.pos++ // '['
	n := &Node{Kind: Array}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	for {
		v, err := p.value(Index(path, len(n.Elems)), depth+1)
		if err != nil {
			return nil, err
		}
		n.Elems = append(n.Elems, v)
		if done, err := p.separator(']', "array element"); err != nil || done {
			return n, err
		}
	}
}

// number accepts the RFC 8259 grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (*Node, *Error) {
	start := p.pos
	if err := p.skipNumber(); err != nil {
		return nil, err
	}
	return &Node{Kind: Number, Num: jsonNumber(p.data[start:p.pos])}, nil
}

// skipNumber reads a number without keeping it.
func (p *parser) skipNumber() *Error {
	start := p.pos
	d := p.data
	digits := func() int {
		s := p.pos
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
		}
		return p.pos - s
	}
	if d[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return p.errorf("$", "invalid number at offset %d", start)
	}
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.errorf("$", "invalid number at offset %d", start)
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.errorf("$", "invalid number at offset %d", start)
		}
	}
	return nil
}

// str decodes a string starting at the opening quote.
func (p *parser) str() (string, *Error) {
	d := p.data
	start := p.pos + 1
	i := start
	// Fast path: no escapes.
	for i < len(d) {
		c := d[i]
		if c == '"' {
			s := string(d[start:i])
			if !utf8.ValidString(s) {
				return "", &Error{ErrString, "$", "invalid UTF-8 in string"}
			}
			p.pos = i + 1
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errorf("$", "invalid character %s in string literal", quoteChar(c))
		}
		i++
	}
	var b strings.Builder
	b.Write(d[start:i])
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			s := b.String()
			if !utf8.ValidString(s) {
				return "", &Error{ErrString, "$", "invalid UTF-8 in string"}
			}
			p.pos = i + 1
			return s, nil
		case c < 0x20:
			return "", p.errorf("$", "invalid character %s in string literal", quoteChar(c))
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(d) {
			break
		}
		switch e := d[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n, err := p.unicodeEscape(i)
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
			i += n
			continue
		default:
			return "", p.errorf("$", "invalid escape %s in string", quoteChar(e))
		}
		i += 2
	}
	return "", p.errorf("$", "unexpected end of input")
}

// unicodeEscape decodes \uXXXX (and a following low surrogate) at i and
// returns the rune and the bytes consumed.
func (p *parser) unicodeEscape(i int) (rune, int, *Error) {
	hex4 := func(at int) (rune, bool) {
		if at+6 > len(p.data) || p.data[at] != '\\' || p.data[at+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(p.data[at+2:at+6]), 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(i)
	if !ok {
		return 0, 0, p.errorf("$", "invalid \\u escape in string")
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if r < 0xDC00 {
		if r2, ok := hex4(i + 6); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
			return utf16.DecodeRune(r, r2), 12, nil
		}
	}
	return 0, 0, &Error{ErrString, "$", fmt.Sprintf("unpaired surrogate escape \\u%04x in string", r)}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return "'" + strings.Trim(strconv.QuoteToASCII(string(rune(c))), `"`) + "'"
}
