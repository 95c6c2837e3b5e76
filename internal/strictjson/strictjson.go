// Package strictjson is IronVise's one strict decoder of untrusted JSON:
// into an ordered tree (Decode) or into a Go value (Unmarshal), rejecting
// what a lenient decoder silently accepts: duplicate keys at any depth,
// nesting beyond a limit, any data after the first value, and — into a
// struct — members that name no field, compared exactly.
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
// or, into a struct whose field names must match exactly:
//
//	var doc Document
//	err := strictjson.Unmarshal(data, 32, &doc)
//
// # Limitations
//
// Numbers are kept as json.Number text; callers decide which number forms
// they accept. The whole document is held in memory: callers cap the input
// size before decoding.
package strictjson

import (
	"encoding/json"
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
	ErrString                     // invalid UTF-8 or an unpaired surrogate in a string
	ErrUnknown                    // a member no field of the destination has (Unmarshal)
	ErrType                       // a value the destination cannot hold (Unmarshal)
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
// Invalid UTF-8 inside a string and escaped unpaired surrogates are errors.
func Decode(data []byte, maxDepth int) (*Node, error) {
	p := &parser{data: data, maxDepth: maxDepth}
	root, err := p.value("$", 1)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, &Error{ErrSyntax, "$", "trailing data after the value"}
	}
	return root, nil
}

func jsonNumber(b []byte) json.Number { return json.Number(b) }

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
