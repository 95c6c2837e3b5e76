package strictjson

import (
	"bytes"
	"reflect"
	"sync"
	"unicode/utf8"
)

// skim checks data as Decode and checkFields together would, without
// building a tree: Unmarshal's fast path, so a large document costs the
// destination value and little more. It only answers whether data is
// acceptable; Unmarshal reruns the tree decoder to say why not.
type skim struct {
	parser
	// seen holds, per nesting depth, the keys of the object being read
	// (reused from object to object).
	seen [][][]byte
}

func (s *skim) ok(t reflect.Type) bool {
	if !s.value(t, 1) {
		return false
	}
	s.skipSpace()
	return s.pos == len(s.data)
}

func (s *skim) value(t reflect.Type, depth int) bool {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '{' || c == '[':
		if depth > s.maxDepth {
			return false
		}
		if c == '{' {
			return s.object(t, depth)
		}
		return s.array(t, depth)
	case c == '"':
		_, ok := s.skipString(false)
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return s.skipNumber() == nil
	case c == 't':
		return s.word("true")
	case c == 'f':
		return s.word("false")
	case c == 'n':
		return s.word("null")
	}
	return false
}

func (s *skim) word(w string) bool {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(w)) {
		return false
	}
	s.pos += len(w)
	return true
}

// destination resolves the type a JSON value decodes into for the field
// check: nil when nothing below is checked (an interface, a raw message, a
// type that decodes itself).
func destination(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	return t
}

func (s *skim) object(t reflect.Type, depth int) bool {
	s.pos++ // '{'
	t = destination(t)
	var fields map[string]reflect.Type
	var elem reflect.Type
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = cachedFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	}
	for len(s.seen) <= depth {
		s.seen = append(s.seen, nil)
	}
	s.seen[depth] = s.seen[depth][:0]
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return true
	}
	for {
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		key, ok := s.skipString(true)
		if !ok {
			return false
		}
		for _, k := range s.seen[depth] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		s.seen[depth] = append(s.seen[depth], key)
		vt := elem
		if fields != nil {
			if vt, ok = fields[string(key)]; !ok {
				return false
			}
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return false
		}
		s.pos++
		if !s.value(vt, depth+1) {
			return false
		}
		if done, err := s.separator('}', ""); err != nil || done {
			return err == nil
		}
	}
}

func (s *skim) array(t reflect.Type, depth int) bool {
	s.pos++ // '['
	var elem reflect.Type
	if t = destination(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return true
	}
	for {
		if !s.value(elem, depth+1) {
			return false
		}
		if done, err := s.separator(']', ""); err != nil || done {
			return err == nil
		}
	}
}

// skipString reads a string at the opening quote and checks it as str
// does. With decode it returns the decoded text (a key), sharing data's
// bytes when the string has no escape.
func (s *skim) skipString(decode bool) ([]byte, bool) {
	d := s.data
	start := s.pos + 1
	for i := start; i < len(d); i++ {
		switch c := d[i]; {
		case c == '"':
			if !utf8.Valid(d[start:i]) {
				return nil, false
			}
			s.pos = i + 1
			return d[start:i], true
		case c == '\\':
			// Escapes are rare in what is checked this way: decode
			// the string the ordinary way.
			str, err := s.str()
			return []byte(str), err == nil
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// fieldCache holds jsonFields by struct type.
var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

func cachedFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := jsonFields(t)
	fieldCache.Store(t, f)
	return f
}
