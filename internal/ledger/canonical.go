package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the
// stack of the recursive parser.
const maxJSONDepth = 512

// Canonicalize returns the RFC 8785 (JCS) canonical form of the JSON text in:
// object members sorted by the UTF-16 code units of their names, no
// insignificant whitespace, numbers in their ECMAScript shortest form,
// strings with only the mandatory escapes.
//
// It is stricter than encoding/json, because the result is what gets hashed:
// it rejects invalid UTF-8, lone surrogate escapes, duplicate member names
// (I-JSON, RFC 7493), numbers outside the IEEE 754 double range, integers
// that a double cannot hold exactly (they would silently change value), and
// trailing data.
func Canonicalize(in []byte) ([]byte, error) {
	p := parser{data: in}
	// The canonical form is at most a little longer than the input
	// (escapes), so one allocation usually holds it.
	out, err := p.document(make([]byte, 0, len(in)), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	return out, nil
}

// CanonicalJSON marshals v with encoding/json and returns its canonical form.
// A json.RawMessage or []byte is taken as JSON text.
func CanonicalJSON(v any) ([]byte, error) {
	raw, err := marshalPayload(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// canonicalPayload returns the stored bytes of an event payload: the
// canonical form of v, which must be a JSON object, with a "type" member
// equal to typ added (docs/design/api.md#event-payloads: payloads are
// internally tagged) and, when origin is not "", an "event_origin" member
// equal to origin (see origin.go). A "type" or "event_origin" member with
// another value is refused rather than overwritten: a client cannot name its
// own origin.
func canonicalPayload(typ, origin string, v any) ([]byte, error) {
	raw, err := marshalPayload(v)
	if err != nil {
		return nil, err
	}
	stamps := []member{{"type", appendJCSString(nil, typ)}}
	if origin != "" {
		// Sorted by name, as object() expects: event_origin < type.
		stamps = []member{{OriginMember, appendJCSString(nil, origin)}, stamps[0]}
	}
	p := parser{data: raw}
	out, err := p.document(nil, stamps)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	return out, nil
}

func marshalPayload(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return []byte("{}"), nil
	case json.RawMessage:
		return x, nil
	case []byte:
		return x, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: marshal: %w", ErrInvalidPayload, err)
	}
	return raw, nil
}

type parser struct {
	data  []byte
	pos   int
	depth int
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

// document parses one complete JSON text. With stamps set, the top level
// must be an object and gets each stamp member (added, or checked when
// present).
func (p *parser) document(out []byte, stamps []member) ([]byte, error) {
	p.skipSpace()
	var err error
	if len(stamps) > 0 {
		if p.pos >= len(p.data) || p.data[p.pos] != '{' {
			return nil, p.errf("payload must be a JSON object")
		}
		out, err = p.object(out, stamps)
	} else {
		out, err = p.value(out)
	}
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errf("trailing data after JSON value")
	}
	return out, nil
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

func (p *parser) value(out []byte) ([]byte, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.errf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(out, nil)
	case c == '[':
		return p.array(out)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return appendJCSString(out, s), nil
	case c == 't':
		return p.literal(out, "true")
	case c == 'f':
		return p.literal(out, "false")
	case c == 'n':
		return p.literal(out, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	default:
		return nil, p.errf("unexpected character %q", c)
	}
}

func (p *parser) literal(out []byte, lit string) ([]byte, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
		return nil, p.errf("invalid literal")
	}
	p.pos += len(lit)
	return append(out, lit...), nil
}

type member struct {
	name  string
	value []byte
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.errf("nesting deeper than %d", maxJSONDepth)
	}
	return nil
}

// object parses an object. Each of stamps (a value already in canonical
// form) is added as a member, or, when the object has a member of that
// name, must equal it.
func (p *parser) object(out []byte, stamps []member) ([]byte, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	// Members are written straight into out, in input order. Input that
	// is already in RFC 8785 order (every certificate and payload IronVise
	// writes) then costs no copy at all; only an object out of order, or
	// one that gets stamps, is rebuilt, from one copy of its own bytes.
	// Canonicalising a value into a buffer of its own at every nesting
	// level made certificate verification allocate about 20 times the
	// document's size (issue 23 item 7; internal/evidence/dos_test.go).
	type span struct {
		name   string
		lo, hi int // the value is out[lo:hi]
	}
	start := len(out)
	out = append(out, '{')
	var spans []span
	sorted := true
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
	} else {
		for {
			p.skipSpace()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return nil, p.errf("expected member name")
			}
			name, err := p.str()
			if err != nil {
				return nil, err
			}
			p.skipSpace()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.errf("expected ':' after member name")
			}
			p.pos++
			if n := len(spans); n > 0 {
				switch c := compareUTF16(spans[n-1].name, name); {
				case c == 0:
					// I-JSON forbids duplicates; different parsers would
					// keep different values, so the hashed meaning would
					// be ambiguous.
					return nil, fmt.Errorf("duplicate member name %q", name)
				case c > 0:
					sorted = false
				}
				out = append(out, ',')
			}
			out = appendJCSString(out, name)
			out = append(out, ':')
			lo := len(out)
			if out, err = p.value(out); err != nil {
				return nil, err
			}
			spans = append(spans, span{name, lo, len(out)})
			p.skipSpace()
			if p.pos >= len(p.data) {
				return nil, p.errf("unexpected end of object")
			}
			if p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.data[p.pos] == '}' {
				p.pos++
				break
			}
			return nil, p.errf("expected ',' or '}' in object")
		}
	}
	p.depth--
	if sorted && len(stamps) == 0 {
		return append(out, '}'), nil
	}
	region := slices.Clone(out[start:])
	members := make([]member, len(spans))
	for i, sp := range spans {
		members[i] = member{sp.name, region[sp.lo-start : sp.hi-start]}
	}
	slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.name, b.name) })
	for i := 1; i < len(members); i++ {
		if members[i].name == members[i-1].name {
			return nil, fmt.Errorf("duplicate member name %q", members[i].name)
		}
	}
	for _, st := range stamps {
		i, found := slices.BinarySearchFunc(members, st.name, func(m member, n string) int { return compareUTF16(m.name, n) })
		if found {
			if !bytes.Equal(members[i].value, st.value) {
				return nil, fmt.Errorf("member %q is %s, want %s", st.name, members[i].value, st.value)
			}
		} else {
			members = slices.Insert(members, i, member{st.name, st.value})
		}
	}
	out = append(out[:start], '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendJCSString(out, m.name)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

func (p *parser) array(out []byte) ([]byte, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	out = append(out, '[')
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		var err error
		if out, err = p.value(out); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errf("unexpected end of array")
		}
		if p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.data[p.pos] == ']' {
			p.pos++
			break
		}
		return nil, p.errf("expected ',' or ']' in array")
	}
	p.depth--
	return append(out, ']'), nil
}

// str decodes a JSON string starting at the opening quote.
func (p *parser) str() (string, error) {
	p.pos++ // '"'
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			if !utf8.Valid(s) {
				return "", p.errf("invalid UTF-8 in string")
			}
			p.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	p.pos = start
	var b []byte
	for {
		if p.pos >= len(p.data) {
			return "", p.errf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(b), nil
		case c < 0x20:
			return "", p.errf("unescaped control character in string")
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", p.errf("unterminated escape")
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					// A high surrogate must be followed by an escaped low
					// one; anything else is a lone surrogate, which has no
					// UTF-8 form and would be silently replaced by other
					// decoders.
					if r >= 0xDC00 || p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
						return "", p.errf("lone surrogate escape")
					}
					p.pos += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if r2 < 0xDC00 || r2 > 0xDFFF {
						return "", p.errf("lone surrogate escape")
					}
					r = utf16.DecodeRune(r, r2)
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", p.errf("invalid escape \\%c", e)
			}
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errf("invalid UTF-8 in string")
			}
			b = append(b, p.data[p.pos:p.pos+size]...)
			p.pos += size
		}
	}
}

func (p *parser) hex4() (rune, error) {
	if p.pos+4 > len(p.data) {
		return 0, p.errf("short \\u escape")
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errf("invalid \\u escape")
		}
	}
	p.pos += 4
	return r, nil
}

func (p *parser) number(out []byte) ([]byte, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.errf("invalid number")
	}
	integer := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		integer = false
		p.pos++
		if digits() == 0 {
			return nil, p.errf("invalid number: no digits after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		integer = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errf("invalid number: no exponent digits")
		}
	}
	lit := string(p.data[start:p.pos])
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s is outside the IEEE 754 double range", lit)
	}
	if integer && (f >= 1<<53 || f <= -(1<<53)) {
		// RFC 8785 numbers are doubles. An integer literal that a double
		// cannot hold would be stored as a different number than the
		// producer wrote; refuse rather than change evidence.
		//
		// The one exception is a literal that already is the RFC 8785
		// spelling of its double: canonicalisation leaves its bytes as
		// written, and refusing it would make Canonicalize refuse its own
		// output (`7000000001e9` canonicalises to `7000000001000000000`;
		// see testdata/fuzz/FuzzCanonicalize).
		want, _ := new(big.Int).SetString(lit, 10)
		got, _ := new(big.Float).SetFloat64(f).Int(nil)
		if want.Cmp(got) != 0 && string(appendJCSNumber(nil, f)) != lit {
			return nil, fmt.Errorf("integer %s cannot be represented exactly as an IEEE 754 double (RFC 8785); encode it as a string", lit)
		}
	}
	return appendJCSNumber(out, f), nil
}

// appendJCSNumber appends the ECMAScript Number::toString form of f
// (RFC 8785 §3.2.2.3). f must be finite.
func appendJCSNumber(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0') // also -0
	}
	if f < 0 {
		out = append(out, '-')
		f = -f
	}
	// Shortest round-tripping digits and decimal exponent.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	mant, expPart, _ := bytes.Cut(e, []byte{'e'})
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	exp, _ := strconv.Atoi(string(expPart))
	k := len(digits)
	n := exp + 1 // the decimal point sits after n digits
	switch {
	case k <= n && n <= 21:
		out = append(out, digits...)
		for i := 0; i < n-k; i++ {
			out = append(out, '0')
		}
	case 0 < n && n <= 21:
		out = append(out, digits[:n]...)
		out = append(out, '.')
		out = append(out, digits[n:]...)
	case -6 < n && n <= 0:
		out = append(out, '0', '.')
		for i := 0; i < -n; i++ {
			out = append(out, '0')
		}
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if k > 1 {
			out = append(out, '.')
			out = append(out, digits[1:]...)
		}
		out = append(out, 'e')
		if n-1 >= 0 {
			out = append(out, '+')
		}
		out = strconv.AppendInt(out, int64(n-1), 10)
	}
	return out
}

// appendJCSString appends s as a JSON string with only the escapes RFC 8785
// requires: quote, backslash, and control characters (short forms where
// JSON has them, else \u00xx in lowercase hex).
func appendJCSString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"':
			out = append(out, '\\', '"')
		case '\\':
			out = append(out, '\\', '\\')
		case '\b':
			out = append(out, '\\', 'b')
		case '\t':
			out = append(out, '\\', 't')
		case '\n':
			out = append(out, '\\', 'n')
		case '\f':
			out = append(out, '\\', 'f')
		case '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// compareUTF16 orders member names by their UTF-16 code units, as RFC 8785
// §3.2.3 requires (this differs from code point order for characters above
// U+FFFF against U+E000..U+FFFF).
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			// Same high surrogate: the low surrogates order like the runes.
			return int(ra) - int(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + ((r - 0x10000) >> 10)
}
