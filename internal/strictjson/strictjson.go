// Package strictjson decodes JSON into an ordered tree while rejecting what
// a lenient decoder silently accepts: duplicate keys at any depth, nesting
// beyond a limit, and any data after the first value.
//
// # Why
//
// encoding/json's struct decoding matches keys case-insensitively, lets a
// duplicate key overwrite the first, and maps invalid UTF-8 to U+FFFD.
// Where two readers of the same bytes could disagree — a check and the code
// that acts on its result — IronVise decodes with this package and walks
// the tree itself, so every key is matched exactly and reported with its
// JSON path.
//
// # Usage
//
//	root, err := strictjson.Decode(data, 32)
//	if err != nil { var de *strictjson.Error; errors.As(err, &de) } // de.Kind, de.Path
//	for i, k := range root.Keys { _ = root.Values[i] }
//
// # Limitations
//
// Numbers are kept as json.Number text; callers decide which number forms
// they accept. The whole document is held in memory: callers cap the input
// size before decoding.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Kind is the JSON type of a node.
type Kind int

// The JSON types.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

// String implements fmt.Stringer with the JSON type name.
func (k Kind) String() string {
	switch k {
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "null"
}

// Node is one decoded JSON value. Object keys keep their source order.
type Node struct {
	Kind   Kind
	Str    string      // String; "true"/"false" for Bool
	Num    json.Number // Number
	Keys   []string    // Object keys, in source order
	Values []*Node     // Object values, parallel to Keys
	Elems  []*Node     // Array elements
}

// Get returns the value of key in an object, or nil.
func (n *Node) Get(key string) *Node {
	for i, k := range n.Keys {
		if k == key {
			return n.Values[i]
		}
	}
	return nil
}

// ErrorKind classifies a decode failure.
type ErrorKind int

// Decode failure kinds.
const (
	ErrSyntax    ErrorKind = iota // not JSON, trailing data, too deep
	ErrDuplicate                  // a duplicate object key
)

// Error is a decode failure at a JSON path.
type Error struct {
	Kind    ErrorKind
	Path    string
	Problem string
}

// Error implements error.
func (e *Error) Error() string { return e.Path + ": " + e.Problem }

// Decode reads exactly one JSON value from data. maxDepth bounds the
// nesting of objects and arrays (the outermost container is depth 1).
func Decode(data []byte, maxDepth int) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	d := decoder{dec: dec, maxDepth: maxDepth}
	root, err := d.value("$", 1)
	if err != nil {
		return nil, err
	}
	if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
		return nil, &Error{ErrSyntax, "$", "trailing data after the value"}
	}
	return root, nil
}

type decoder struct {
	dec      *json.Decoder
	maxDepth int
}

func (d *decoder) value(path string, depth int) (*Node, *Error) {
	tok, err := d.dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth > d.maxDepth {
			return nil, &Error{ErrSyntax, path, fmt.Sprintf("nesting deeper than %d", d.maxDepth)}
		}
		switch t {
		case '{':
			return d.object(path, depth)
		case '[':
			return d.array(path, depth)
		}
		return nil, &Error{ErrSyntax, path, "unexpected " + string(t)}
	case string:
		return &Node{Kind: String, Str: t}, nil
	case json.Number:
		return &Node{Kind: Number, Num: t}, nil
	case bool:
		return &Node{Kind: Bool, Str: strconv.FormatBool(t)}, nil
	case nil:
		return &Node{Kind: Null}, nil
	}
	return nil, &Error{ErrSyntax, path, fmt.Sprintf("unexpected token %v", tok)}
}

func (d *decoder) object(path string, depth int) (*Node, *Error) {
	n := &Node{Kind: Object}
	for d.dec.More() {
		tok, err := d.dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, &Error{ErrSyntax, path, "object key is not a string"}
		}
		// A duplicate key is a parser differential: one reader keeps the
		// first value, another the last.
		if n.Get(key) != nil {
			return nil, &Error{ErrDuplicate, path, fmt.Sprintf("duplicate key %q", key)}
		}
		v, e := d.value(Child(path, key), depth+1)
		if e != nil {
			return nil, e
		}
		n.Keys = append(n.Keys, key)
		n.Values = append(n.Values, v)
	}
	if _, err := d.dec.Token(); err != nil { // the closing '}'
		return nil, syntaxError(err)
	}
	return n, nil
}

func (d *decoder) array(path string, depth int) (*Node, *Error) {
	n := &Node{Kind: Array}
	for d.dec.More() {
		v, e := d.value(Index(path, len(n.Elems)), depth+1)
		if e != nil {
			return nil, e
		}
		n.Elems = append(n.Elems, v)
	}
	if _, err := d.dec.Token(); err != nil { // the closing ']'
		return nil, syntaxError(err)
	}
	return n, nil
}

func syntaxError(err error) *Error {
	if errors.Is(err, io.EOF) {
		return &Error{ErrSyntax, "$", "unexpected end of input"}
	}
	return &Error{ErrSyntax, "$", err.Error()}
}

// Child renders an object member path; keys that are not simple
// identifiers are quoted so the path stays unambiguous.
func Child(parent, key string) string {
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

// Index renders an array element path.
func Index(parent string, i int) string { return parent + "[" + strconv.Itoa(i) + "]" }
