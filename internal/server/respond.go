package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// ts renders a time in the API's timestamp format (api.md §6).
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
// at most 64 characters of [A-Za-z0-9._-] (api.md §3), so it can never
// inject a header line or log field.
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

// fail answers an error: an *apiError with its status and message, anything
// else as a generic 500 (or 503 when the database is unavailable) whose
// details go to the log only.
func (rc *reqCtx) fail(err error) {
	if ae, ok := err.(*apiError); ok {
		if ae.retryAfter > 0 {
			rc.w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
		}
		if ae.status == http.StatusUnauthorized {
			rc.w.Header().Set("WWW-Authenticate", `Bearer realm="ironvise"`)
		}
		rc.writeJSON(ae.status, map[string]string{"error": ae.msg})
		return
	}
	status := http.StatusInternalServerError
	msg := "internal error (request " + rc.id + "); the server log has the details"
	if isUnavailable(err) {
		status = http.StatusServiceUnavailable
		msg = "database unavailable (request " + rc.id + "); retry shortly"
	}
	rc.s.log.Error("request failed", "request_id", rc.id, "route", rc.routeName(), "err", err)
	rc.writeJSON(status, map[string]string{"error": msg})
}
