package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// apiError is an error answered with a status code and a message that is
// safe to show to the client.
type apiError struct {
	status int
	msg    string
	// retryAfter, when positive, is sent as Retry-After (seconds).
	retryAfter int
}

func (e *apiError) Error() string { return e.msg }

func errf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// ts renders a time in the API's timestamp format
// (docs/design/api.md#json-shapes).
func ts(t time.Time) string { return t.UTC().Format(ledger.TimeFormat) }

// optTS renders a zero time as null.
func optTS(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := ts(t)
	return &s
}

// optStr renders "" as null.
func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// newRequestID returns 16 random hex characters.
func newRequestID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return strconv.FormatInt(time.Now().UnixNano(), 16)
	}
	return hex.EncodeToString(b[:])
}

// clientRequestID returns the client's X-Request-Id when it is safe to echo:
// at most 64 characters of [A-Za-z0-9._-]
// (docs/design/api.md#request-pipeline), so it can never inject a header line
// or log field.
func clientRequestID(v string) (string, bool) {
	if v == "" || len(v) > 64 {
		return "", false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", false
		}
	}
	return v, true
}

// writeJSON answers status with v as JSON.
func (rc *reqCtx) writeJSON(status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		rc.fail(fmt.Errorf("encode response: %w", err))
		return
	}
	rc.writeRawJSON(status, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// writeRawJSON answers status with a body that is already JSON.
func (rc *reqCtx) writeRawJSON(status int, body []byte) {
	h := rc.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	rc.w.WriteHeader(status)
	rc.status = status
	if rc.r.Method != http.MethodHead {
		rc.w.Write(body)
	}
}

// noContent answers 204 with no body (token and webhook deletes).
func (rc *reqCtx) noContent() {
	rc.w.Header().Set("Cache-Control", "no-store")
	rc.w.WriteHeader(http.StatusNoContent)
	rc.status = http.StatusNoContent
}

// fail answers an error: an *apiError with its status and message; a
// storage failure with what failed and the fix (failureError); anything
// else as a generic 500 whose details go to the log only. The log line is
// rate-limited per route and kind (errlog.go).
func (rc *reqCtx) fail(err error) {
	if ae, ok := err.(*apiError); ok {
		if ae.retryAfter > 0 {
			rc.w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
		}
		if ae.status == http.StatusUnauthorized {
			rc.w.Header().Set("WWW-Authenticate", `Bearer realm="ironvise"`)
		}
		rc.answerError(ae.status, ae.msg)
		return
	}
	f := ledger.Classify(err)
	status, msg := failureError(f, err, rc.id)
	rc.s.errLog.failed(rc.routeName(), f.Kind, rc.id, err)
	if f.Kind == ledger.FailureUnavailable {
		rc.w.Header().Set("Retry-After", strconv.Itoa(unavailableRetrySecs))
	}
	rc.answerError(status, msg)
}

// answerError writes an error's body. A route that answers an agent's hook
// turns it into a block in the agent's contract (hooks.go): an agent takes
// an HTTP error for "go ahead".
func (rc *reqCtx) answerError(status int, msg string) {
	if rc.route != nil && rc.route.blockOnError != nil {
		rc.route.blockOnError(rc, status, msg)
		return
	}
	rc.writeJSON(status, map[string]string{"error": msg})
}

// unavailableRetrySecs is the Retry-After of a 503 for an unreachable
// database: a PostgreSQL restart or failover takes seconds.
const unavailableRetrySecs = 2

// failureError is the status and client message of an error that is not an
// *apiError. The message names the cause and the fix, never a path or a
// credential: a dropped database connection is not a bug (503, retry), a
// full disk is not an unavailable database (507, free space), and neither
// is a 500.
func failureError(f ledger.Failure, err error, reqID string) (int, string) {
	switch f.Kind {
	case ledger.FailureUnavailable:
		return http.StatusServiceUnavailable, fmt.Sprintf("the ledger database is unavailable: %s (request %s); retry after the Retry-After seconds, and if it persists check that the database (DATABASE_URL) is up", f.Cause, reqID)
	case ledger.FailureStorageFull:
		// A file the server (or the ledger, for its remembered
		// checkpoint) writes itself fails as a *fs.PathError; the
		// database's own writes do not.
		what := "the ledger database"
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			what = "a file in the data directory (ECTO_DATA_DIR)"
		}
		return http.StatusInsufficientStorage, fmt.Sprintf("writing %s failed: %s (request %s); free space on the volume that holds it (for SQLite and the data files: the one of ECTO_DATA_DIR; for PostgreSQL: the database server's), then retry", what, f.Cause, reqID)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// A file operation of the server itself: say which operation and
		// why, without the path.
		return http.StatusInternalServerError, fmt.Sprintf("a file %s in the data directory failed: %v (request %s); check the permissions and the volume of ECTO_DATA_DIR", pe.Op, pe.Err, reqID)
	}
	return http.StatusInternalServerError, "internal error (request " + reqID + "); the server log has the details"
}
