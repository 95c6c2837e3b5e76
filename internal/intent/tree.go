package intent

import (
	"errors"

	"github.com/ironvise/ironvise/internal/strictjson"
	"github.com/ironvise/ironvise/internal/verdict"
)

// decodeTree reads exactly one JSON object from text
// (docs/design/checks.md#schema-check step 2): duplicate keys at any depth,
// nesting deeper than MaxDepth and data after the object are denials.
func decodeTree(text string) (*strictjson.Node, *Error) {
	root, err := strictjson.Decode([]byte(text), MaxDepth)
	if err != nil {
		var de *strictjson.Error
		if errors.As(err, &de) && de.Kind == strictjson.ErrDuplicate {
			return nil, &Error{verdict.SchemaDuplicateKey, de.Path, de.Problem}
		}
		if errors.As(err, &de) && de.Kind == strictjson.ErrString {
			return nil, &Error{verdict.SchemaInvalidString, de.Path, de.Problem}
		}
		if errors.As(err, &de) && de.Path != "$" {
			return nil, &Error{verdict.SchemaNotJSON, de.Path, de.Problem}
		}
		msg := err.Error()
		if errors.As(err, &de) {
			msg = de.Problem
		}
		return nil, &Error{verdict.SchemaNotJSON, "$", "not a single JSON object: " + msg}
	}
	if root.Kind != strictjson.Object {
		return nil, &Error{verdict.SchemaNotJSON, "$", "not a single JSON object: got " + root.Kind.String()}
	}
	return root, nil
}
