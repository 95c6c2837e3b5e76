package ledger

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"whitespace and order", " { \"b\" : 1 , \"a\" : [ 1 , 2 ] } ", `{"a":[1,2],"b":1}`},
		{"nested objects sorted", `{"z":{"y":1,"x":2},"a":null}`, `{"a":null,"z":{"x":2,"y":1}}`},
		// RFC 8785 §3.2.3: sorting by UTF-16 code units.
		{"utf16 order", `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		// RFC 8785 §3.2.2.3 number examples.
		{"numbers", `[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0, 1e21, 1e20, 0.000001, 1e-7, 123456789, -1.5e-10]`,
			`[333333333.3333333,1e+30,4.5,0.002,1e-27,0,1e+21,100000000000000000000,0.000001,1e-7,123456789,-1.5e-10]`},
		{"max safe integer", `9007199254740991`, `9007199254740991`},
		{"exact large integer", `9007199254740992`, `9007199254740992`},
		// The fuzz reproducer (testdata/fuzz/FuzzCanonicalize): an exponent
		// form whose canonical spelling is an integer literal above 2^53.
		{"exponent to large integer", `7000000001e9`, `7000000001000000000`},
		{"large integer already canonical", `7000000001000000000`, `7000000001000000000`},
		{"string escapes", `"\u0000\u001f\b\f\n\r\t\"\\\/<>&\u2028é"`, "\"\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\/<>&\u2028é\""},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"empty containers", `{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in))
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			again, err := Canonicalize(got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"duplicate names", `{"a":1,"a":1}`},
		{"duplicate after unescape", `{"a":1,"\u0061":2}`},
		{"lone high surrogate", `"\ud800"`},
		{"lone low surrogate", `"\udc00x"`},
		{"high then non-low", `"\ud800\u0041"`},
		{"invalid utf8", "\"\xff\""},
		{"raw control", "\"a\x01b\""},
		{"trailing data", `{} {}`},
		{"trailing comma", `[1,]`},
		{"leading zero", `01`},
		{"bare dot", `1.`},
		{"huge number", `1e400`},
		{"inexact integer", `9007199254740993`},
		{"inexact negative integer", `-123456789012345678901`},
		{"NaN", `NaN`},
		{"single quotes", `{'a':1}`},
		{"bad escape", `"\x"`},
		{"empty", ``},
		{"too deep", strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := Canonicalize([]byte(tc.in)); !errors.Is(err, ErrInvalidPayload) {
				t.Fatalf("Canonicalize(%q) = %s, %v; want ErrInvalidPayload", tc.in, got, err)
			}
		})
	}
}

// TestCanonicalNumbersRoundTrip checks that every canonical number parses
// back to the same double (the shortest round-trip form is what RFC 8785
// prescribes).
func TestCanonicalNumbersRoundTrip(t *testing.T) {
	vals := []float64{0, 1, -1, 0.1, 1.0 / 3, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e21, 1e-6, 1e-7, 5e-324, 123e18, 9007199254740991, -2.5e-8}
	for _, v := range vals {
		got := string(appendJCSNumber(nil, v))
		var back float64
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != v {
			t.Errorf("%v -> %s -> %v, %v", v, got, back, err)
		}
	}
}

func TestCanonicalPayloadType(t *testing.T) {
	got, err := canonicalPayload("observation", "", struct {
		Content string `json:"content"`
		Zeta    int    `json:"zeta"`
	}{"<tag> & ok", 1})
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json escapes <, > and &; the canonical form does not.
	if want := `{"content":"<tag> & ok","type":"observation","zeta":1}`; string(got) != want {
		t.Fatalf("got %s; want %s", got, want)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil || !reflect.DeepEqual(m["type"], "observation") {
		t.Fatalf("payload %s does not parse with a type", got)
	}
}
