package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// Unmarshal decodes exactly one JSON value from data into v (a pointer),
// strictly: everything Decode rejects (duplicate keys at any depth,
// nesting beyond maxDepth, invalid UTF-8, unpaired surrogates, trailing
// data), and any object member that names no field of the destination
// struct — matched exactly, where encoding/json would accept another case
// ("Alg" for "alg") and ignore or, with DisallowUnknownFields, still
// case-fold. Values then decode with encoding/json, so field types, tags
// and json.Unmarshaler implementations keep their usual meaning; a type
// with its own UnmarshalJSON or UnmarshalText checks its members itself,
// and a json.RawMessage or interface value is not looked into.
func Unmarshal(data []byte, maxDepth int, v any) error {
	sk := &skim{parser: parser{data: data, maxDepth: maxDepth}}
	if !sk.ok(reflect.TypeOf(v)) {
		// Rare: read it again as a tree, to say where and why.
		root, err := Decode(data, maxDepth)
		if err != nil {
			return err
		}
		if err := checkFields(root, reflect.TypeOf(v), "$"); err != nil {
			return err
		}
		return &Error{ErrSyntax, "$", "not acceptable JSON"}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &Error{ErrType, "$", err.Error()}
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkFields reports the first object member of n that the destination
// type t has no field for.
func checkFields(n *Node, t reflect.Type, path string) error {
	if t == nil {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == Object:
		fields := cachedFields(t)
		for i, k := range n.Keys {
			ft, ok := fields[k]
			if !ok {
				return &Error{ErrUnknown, path, "unknown field " + quote(k)}
			}
			if err := checkFields(n.Values[i], ft, Child(path, k)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map && n.Kind == Object:
		for i, k := range n.Keys {
			if err := checkFields(n.Values[i], t.Elem(), Child(path, k)); err != nil {
				return err
			}
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == Array:
		for i, e := range n.Elems {
			if err := checkFields(e, t.Elem(), Index(path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps the member names encoding/json gives the fields of a
// struct type to their types, embedded structs' fields included.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
