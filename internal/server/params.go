package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/strictjson"
)

// queryFirst returns the first value of a query parameter
// (docs/design/api.md#path-rules: for repeated parameters the first counts).
func queryFirst(r *http.Request, name string) (string, bool) {
	v, ok := r.URL.Query()[name]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// parseUUID accepts only the 36-character hyphenated form, either case.
func parseUUID(s string) (uuid.UUID, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return uuid.Nil, fmt.Errorf("%q is not a UUID (expected the 36-character form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s)
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("%q is not a UUID", s)
	}
	return id, nil
}

// sessionParam parses the {id} path parameter (400 when it is not a UUID).
func (rc *reqCtx) sessionParam() (uuid.UUID, error) {
	id, err := parseUUID(rc.params["id"])
	if err != nil {
		return uuid.Nil, errf(http.StatusBadRequest, "session id: %v", err)
	}
	return id, nil
}

// pathSession resolves the {id} of the path to a listed session: 400 for a
// malformed id, 404 for an unknown one.
func (s *Server) pathSession(rc *reqCtx) (uuid.UUID, *ledger.Session, error) {
	id, err := rc.sessionParam()
	if err != nil {
		return uuid.Nil, nil, err
	}
	sess, err := s.sessionByID(rc, id)
	return id, sess, err
}

// sessionByID returns a listed session, or 404. The instance session (the
// nil UUID) is not a session of the API.
func (s *Server) sessionByID(rc *reqCtx, id uuid.UUID) (*ledger.Session, error) {
	if id == uuid.Nil {
		return nil, errf(http.StatusNotFound, "session %s not found", id)
	}
	sess, err := s.ledger().Session(rc.r.Context(), id)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, errf(http.StatusNotFound, "session %s not found", id)
	}
	if err != nil {
		return nil, err
	}
	return sess, nil
}

// object is a JSON object body whose fields are read with their types
// checked: a wrong type or a missing required field is a 422
// (docs/design/api.md#bodies-and-status).
type object map[string]json.RawMessage

// bodyObject decodes the body (already checked to be valid JSON) as an
// object; any other top-level value is a 422.
// maxBodyDepth bounds the nesting of a JSON request body's object.
const maxBodyDepth = 64

func (rc *reqCtx) bodyObject() (object, error) {
	// Strict: a duplicate key would otherwise let its last value win
	// where another reader of the same body takes the first.
	var o object
	if err := strictjson.Unmarshal(rc.body, maxBodyDepth, &o); err != nil || o == nil {
		return nil, errf(http.StatusUnprocessableEntity, "the body must be a JSON object")
	}
	return o, nil
}

func (o object) present(key string) bool {
	v, ok := o[key]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// str reads a string field; null counts as absent.
func (o object) str(key string, required bool) (string, bool, error) {
	if !o.present(key) {
		if required {
			return "", false, errf(http.StatusUnprocessableEntity, "missing required field %q", key)
		}
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(o[key], &s); err != nil {
		return "", false, errf(http.StatusUnprocessableEntity, "field %q must be a string", key)
	}
	return s, true, nil
}

// boolean reads a boolean field.
func (o object) boolean(key string, required bool) (bool, bool, error) {
	if !o.present(key) {
		if required {
			return false, false, errf(http.StatusUnprocessableEntity, "missing required field %q", key)
		}
		return false, false, nil
	}
	var b bool
	if err := json.Unmarshal(o[key], &b); err != nil {
		return false, false, errf(http.StatusUnprocessableEntity, "field %q must be a boolean", key)
	}
	return b, true, nil
}

// integer reads an integer field: a JSON number literal without fraction
// or exponent. Every integer of every request body is read here, so this
// is where a quoted number is refused: encoding/json decodes "5" into a
// json.Number without complaint, and {"max_steps":"5"} was once accepted
// where docs/design/api.md#bodies-and-status promises 422 (issue 13, item 8).
func (o object) integer(key string) (int64, bool, error) {
	if !o.present(key) {
		return 0, false, nil
	}
	if raw := bytes.TrimSpace(o[key]); len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false, errf(http.StatusUnprocessableEntity, "field %q must be an integer, a JSON number such as 5 (got %.40s; send it without quotes)", key, raw)
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(o[key]))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, false, errf(http.StatusUnprocessableEntity, "field %q must be an integer", key)
	}
	i, err := n.Int64()
	if err != nil {
		return 0, false, errf(http.StatusUnprocessableEntity, "field %q must be an integer", key)
	}
	return i, true, nil
}

// strings reads an array of strings.
func (o object) strings(key string) ([]string, bool, error) {
	if !o.present(key) {
		return nil, false, nil
	}
	var ss []string
	if err := json.Unmarshal(o[key], &ss); err != nil {
		return nil, false, errf(http.StatusUnprocessableEntity, "field %q must be an array of strings", key)
	}
	if ss == nil {
		ss = []string{}
	}
	return ss, true, nil
}
