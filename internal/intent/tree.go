package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/ironvise/ironvise/internal/verdict"
)

// kind is the JSON type of a node.
type kind int

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

func (k kind) String() string {
	switch k {
	case kBool:
		return "boolean"
	case kNumber:
		return "number"
	case kString:
		return "string"
	case kArray:
		return "array"
	case kObject:
		return "object"
	}
	return "null"
}

// node is a decoded JSON value that keeps object keys in source order, so
// "unknown key" errors name the first offending key deterministically.
type node struct {
	kind  kind
	str   string
	num   json.Number
	keys  []string
	vals  []*node
	elems []*node
}

func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// decodeTree reads exactly one JSON object from text with a token reader.
// It rejects duplicate keys at any depth, nesting deeper than MaxDepth and
// any data after the object (checks.md §3 step 2).
func decodeTree(text string) (*node, *Error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.UseNumber()
	root, err := readValue(dec, "$", 1)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, &Error{verdict.SchemaNotJSON, "$", "not a single JSON object: got " + root.kind.String()}
	}
	if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
		return nil, &Error{verdict.SchemaNotJSON, "$", "not a single JSON object: trailing data after the object"}
	}
	return root, nil
}

func readValue(dec *json.Decoder, path string, depth int) (*node, *Error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth > MaxDepth {
			return nil, &Error{verdict.SchemaNotJSON, path, fmt.Sprintf("nesting deeper than %d", MaxDepth)}
		}
		if t == '{' {
			return readObject(dec, path, depth)
		}
		if t == '[' {
			return readArray(dec, path, depth)
		}
		// A closing delimiter where a value belongs; the decoder reports
		// this itself, but keep the branch total.
		return nil, &Error{verdict.SchemaNotJSON, path, "unexpected " + string(t)}
	case string:
		return &node{kind: kString, str: t}, nil
	case json.Number:
		return &node{kind: kNumber, num: t}, nil
	case bool:
		if t {
			return &node{kind: kBool, str: "true"}, nil
		}
		return &node{kind: kBool, str: "false"}, nil
	case nil:
		return &node{kind: kNull}, nil
	}
	return nil, &Error{verdict.SchemaNotJSON, path, fmt.Sprintf("unexpected token %v", tok)}
}

func readObject(dec *json.Decoder, path string, depth int) (*node, *Error) {
	n := &node{kind: kObject}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, &Error{verdict.SchemaNotJSON, path, "object key is not a string"}
		}
		// Duplicate keys are how a parser differential hides a second
		// value from a check: one reader keeps the first, another the last.
		if n.get(key) != nil {
			return nil, &Error{verdict.SchemaDuplicateKey, path, fmt.Sprintf("duplicate key %q", key)}
		}
		v, e := readValue(dec, childPath(path, key), depth+1)
		if e != nil {
			return nil, e
		}
		n.keys = append(n.keys, key)
		n.vals = append(n.vals, v)
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntaxError(err)
	}
	return n, nil
}

func readArray(dec *json.Decoder, path string, depth int) (*node, *Error) {
	n := &node{kind: kArray}
	for dec.More() {
		v, e := readValue(dec, path+"["+strconv.Itoa(len(n.elems))+"]", depth+1)
		if e != nil {
			return nil, e
		}
		n.elems = append(n.elems, v)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, syntaxError(err)
	}
	return n, nil
}

func syntaxError(err error) *Error {
	if errors.Is(err, io.EOF) {
		return &Error{verdict.SchemaNotJSON, "$", "not a single JSON object: unexpected end of input"}
	}
	return &Error{verdict.SchemaNotJSON, "$", "not a single JSON object: " + err.Error()}
}

// childPath renders an object member path; keys that are not simple
// identifiers are quoted so the path stays unambiguous.
func childPath(parent, key string) string {
	simple := key != ""
	for _, r := range key {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			simple = false
			break
		}
	}
	if simple {
		return parent + "." + key
	}
	return parent + "[" + strconv.Quote(key) + "]"
}
