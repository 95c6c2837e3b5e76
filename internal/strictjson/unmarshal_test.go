package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Name string `json:"name"`
}

type embedded struct {
	Note string `json:"note"`
}

type doc struct {
	embedded
	Alg    string            `json:"alg"`
	Inner  inner             `json:"inner"`
	List   []inner           `json:"list"`
	ByName map[string]inner  `json:"by_name"`
	Ptr    *inner            `json:"ptr"`
	Raw    json.RawMessage   `json:"raw"`
	Any    any               `json:"any"`
	When   time.Time         `json:"when"`
	Tags   map[string]string `json:"tags,omitempty"`
	Hidden string            `json:"-"`
	NoTag  int
}

func TestUnmarshal(t *testing.T) {
	for _, c := range []struct {
		in   string
		kind ErrorKind
		want string // "" accepts; else a fragment of the error
	}{
		{`{"alg":"EdDSA","note":"n","inner":{"name":"a"},"list":[{"name":"b"}],"by_name":{"k":{"name":"c"}},"ptr":{"name":"d"},` +
			`"raw":{"anything":[1,{"x":2}]},"any":{"free":1},"when":"2026-01-02T03:04:05Z","tags":{"t":"v"},"NoTag":3}`, 0, ""},
		{`{}`, 0, ""},
		{`null`, 0, ""},
		{`{"alg":"x","jku":"https://evil.example"}`, ErrUnknown, `$: unknown field "jku"`},
		{`{"Alg":"x"}`, ErrUnknown, `$: unknown field "Alg"`},
		{`{"notag":1}`, ErrUnknown, `unknown field "notag"`},
		{`{"Hidden":"x"}`, ErrUnknown, `unknown field "Hidden"`},
		{`{"-":"x"}`, ErrUnknown, `unknown field "-"`},
		{`{"inner":{"name":"a","Name":"b"}}`, ErrUnknown, `$.inner: unknown field "Name"`},
		{`{"list":[{"name":"a"},{"nme":"b"}]}`, ErrUnknown, `$.list[1]: unknown field "nme"`},
		{`{"by_name":{"k":{"x":1}}}`, ErrUnknown, `$.by_name.k: unknown field "x"`},
		{`{"ptr":{"y":1}}`, ErrUnknown, `$.ptr: unknown field "y"`},
		{`{"alg":"a","alg":"b"}`, ErrDuplicate, "duplicate"},
		{`{"raw":{"a":1,"a":2}}`, ErrDuplicate, "duplicate"},
		{`{"alg":"a"} {}`, ErrSyntax, "trailing data"},
		{`{"alg":"a"}}`, ErrSyntax, "trailing data"},
		{`{"list":[[[[[[[[1]]]]]]]]}`, ErrSyntax, "deep"},
		{"{\"alg\":\"\xff\"}", ErrString, "UTF-8"},
		{`{"alg":5}`, ErrType, "cannot unmarshal"},
		{`[1]`, ErrType, "cannot unmarshal"},
	} {
		var d doc
		err := Unmarshal([]byte(c.in), 6, &d)
		if c.want == "" {
			if err != nil {
				t.Errorf("Unmarshal(%s): %v", c.in, err)
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || se.Kind != c.kind || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Unmarshal(%s) = %v; want kind %d with %q", c.in, err, c.kind, c.want)
		}
	}
	var d doc
	if err := Unmarshal([]byte(`{"alg":"EdDSA","inner":{"name":"a"},"NoTag":3}`), 4, &d); err != nil || d.Alg != "EdDSA" || d.Inner.Name != "a" || d.NoTag != 3 {
		t.Fatalf("decoded %+v, %v", d, err)
	}
}

// FuzzUnmarshalSkim: the tree-free check Unmarshal runs first accepts
// exactly what Decode and the field check accept together.
func FuzzUnmarshalSkim(f *testing.F) {
	for _, s := range []string{
		`{"alg":"EdDSA","inner":{"name":"a"},"list":[{"name":"b"}],"by_name":{"k":{"name":"c"}},"raw":{"x":[1,{"y":2}]}}`,
		`{"alg":"a","alg":"b"}`, `{"Alg":"x"}`, `{"inner":{"nme":1}}`, `{"note":"\u00e9\ud83d\ude00"}`, `{"no\u0074e":"x"}`,
		`{"a\u0000":1}`, `[{"name":1}]`, `{"list":[[1]]}`, `{"x":1}}`, `{"raw":"\ud800"}`, "{\"alg\":\"\xff\"}", `{"when":"2026-01-02T03:04:05Z"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		typ := reflect.TypeFor[*doc]()
		sk := &skim{parser: parser{data: data, maxDepth: 6}}
		root, err := Decode(data, 6)
		tree := err == nil && checkFields(root, typ, "$") == nil
		if got := sk.ok(typ); got != tree {
			t.Fatalf("skim says %v, the tree decoder %v (%v) for %q", got, tree, err, data)
		}
	})
}
