package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		in   string
		kind ErrorKind // -1 = ok
		want string    // substring of the error, or "" for ok
	}{
		{`{"a":[1,-2.5e3,true,false,null,"x\u00e9\ud83d\ude00\n"]}`, -1, ""},
		{` {} `, -1, ""},
		{`[]`, -1, ""},
		{`"s"`, -1, ""},
		{`0`, -1, ""},
		{`{"a":1,"a":2}`, ErrDuplicate, `$: duplicate key "a"`},
		{`{"a":{"b":1,"b":1}}`, ErrDuplicate, `$.a: duplicate key "b"`},
		{`{"a":1}{}`, ErrSyntax, "trailing data"},
		{`{"a":1,}`, ErrSyntax, "beginning of object key"},
		{`[1,]`, ErrSyntax, "beginning of value"},
		{`01`, ErrSyntax, "trailing data"},
		{`1.`, ErrSyntax, "invalid number"},
		{`-`, ErrSyntax, "invalid number"},
		{`+1`, ErrSyntax, "beginning of value"},
		{`tru`, ErrSyntax, "invalid literal"},
		{`"a` + "\x01" + `"`, ErrSyntax, "in string literal"},
		{`"\x"`, ErrSyntax, "invalid escape"},
		{`"\u12"`, ErrSyntax, `invalid \u escape`},
		{`"\ud800"`, ErrString, "unpaired surrogate"},
		{`"\udc00\ud800"`, ErrString, "unpaired surrogate"},
		{"\"\xff\"", ErrString, "invalid UTF-8"},
		{``, ErrSyntax, "unexpected end of input"},
		{`{"a"`, ErrSyntax, "expected ':'"},
		{`[[[[1]]]]`, ErrSyntax, "nesting deeper than 3"},
	}
	for _, tc := range cases {
		n, err := Decode([]byte(tc.in), 3)
		if tc.kind == -1 {
			if err != nil || n == nil {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != tc.kind || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v; want kind %d containing %q", tc.in, err, tc.kind, tc.want)
		}
	}
}

// toAny converts a node to the value encoding/json would produce (with
// UseNumber), for the differential test.
func toAny(n *Node) any {
	switch n.Kind {
	case Object:
		m := map[string]any{}
		for i, k := range n.Keys {
			m[k] = toAny(n.Values[i])
		}
		return m
	case Array:
		a := []any{}
		for _, e := range n.Elems {
			a = append(a, toAny(e))
		}
		return a
	case String:
		return n.Str
	case Number:
		return n.Num
	case Bool:
		return n.Str == "true"
	}
	return nil
}

// FuzzDecode checks the hand-written parser against encoding/json: the
// same inputs are accepted with the same values, except where strictjson is
// stricter by design (duplicate keys, nesting, invalid UTF-8 and unpaired
// surrogates in strings).
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"action":"run_command","params":{"command":"ls"}}`, // typical intent
		`[1, 2.5, -0, 1e10, "\u0041\ud83d\ude00"]`,           // numbers and escapes
		`{"a":{"a":{"a":[]}}}`,                               // nesting
		`"\ud800"`,                                           // unpaired surrogate
		`{"a":1,"a":2}`,                                      // duplicate key
		"\"\xc3\x28\"",                                       // invalid UTF-8
		` {"x" : null , "y":[true,false]} `,                  // whitespace
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Decode(data, 64)
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		stdErr := dec.Decode(&want)
		if stdErr == nil {
			if _, e := dec.Token(); !errors.Is(e, io.EOF) {
				stdErr = errors.New("trailing data")
			}
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error of type %T", err)
			}
			if e.Kind == ErrSyntax && stdErr == nil && !strings.Contains(e.Problem, "nesting") {
				t.Fatalf("rejected %q (%v) that encoding/json accepts", data, err)
			}
			return
		}
		if stdErr != nil {
			t.Fatalf("accepted %q that encoding/json rejects: %v", data, stdErr)
		}
		if !utf8.Valid(data) {
			t.Fatalf("accepted invalid UTF-8 %q", data)
		}
		if got := toAny(n); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %#v; encoding/json %#v", data, got, want)
		}
	})
}

func BenchmarkDecodeIntent(b *testing.B) {
	data := []byte(`{"action":"run_command","params":{"command":"grep -rn 'PermitRootLogin' /etc/ssh 2>/dev/null | head -20"},"justification":"check sshd root login setting"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, 32); err != nil {
			b.Fatal(err)
		}
	}
}
