package ledger

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// Failure kinds of the storage under a ledger, for front ends that must
// say why a write failed (issue 13, item 5: a dropped PostgreSQL
// connection was answered as a generic 500, a full disk as one too). The
// classification reads the drivers' error interfaces (an SQLSTATE, a
// SQLite result code) and the system's errno, so this package still
// imports no driver.

// FailureKind says what kind of failure an error is.
type FailureKind int

// The failure kinds Classify tells apart.
const (
	// FailureOther is anything else: a bug, a refused write, bad data.
	FailureOther FailureKind = iota
	// FailureUnavailable means the database cannot be reached now (down,
	// restarting, the connection dropped, too many connections, locked):
	// the same request may succeed shortly.
	FailureUnavailable
	// FailureStorageFull means there is no space left where the data is
	// written (the disk, a quota, PostgreSQL's disk_full).
	FailureStorageFull
)

// Failure is the classification of an error.
type Failure struct {
	Kind FailureKind
	// Cause is a short description of the underlying condition, safe to
	// show to a client (no paths, no credentials): "connection refused",
	// "no space left on device", "SQLSTATE 57P01".
	Cause string
}

// sqlStater is implemented by PostgreSQL driver errors (pgconn.PgError).
type sqlStater interface{ SQLState() string }

// coder is implemented by SQLite driver errors (modernc.org/sqlite.Error).
type coder interface{ Code() int }

// SQLite primary result codes (https://sqlite.org/rescode.html).
const (
	sqliteBusy   = 5
	sqliteLocked = 6
	sqliteFull   = 13
)

// Classify says whether err is the storage being unreachable or full.
func Classify(err error) Failure {
	if err == nil {
		return Failure{}
	}
	// Full before unavailable: a full disk can also break a connection.
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT) {
		return Failure{FailureStorageFull, errno.Error()}
	}
	var st sqlStater
	if errors.As(err, &st) {
		code := st.SQLState()
		switch {
		case code == "53100":
			return Failure{FailureStorageFull, "PostgreSQL reports disk_full (SQLSTATE 53100)"}
		case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03", code == "53300":
			// Connection exceptions, the server shutting down or not yet
			// accepting, too many connections.
			return Failure{FailureUnavailable, "PostgreSQL SQLSTATE " + code}
		}
	}
	var c coder
	if errors.As(err, &c) {
		switch c.Code() & 0xff {
		case sqliteFull:
			return Failure{FailureStorageFull, "SQLite reports the database or disk is full"}
		case sqliteBusy, sqliteLocked:
			return Failure{FailureUnavailable, "the SQLite database is locked"}
		}
	}
	switch {
	case errors.Is(err, ErrClosed):
		return Failure{FailureUnavailable, "the ledger is closing"}
	case errors.Is(err, context.DeadlineExceeded):
		return Failure{FailureUnavailable, "the database did not answer in time"}
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return Failure{FailureUnavailable, "the database closed the connection"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return Failure{FailureUnavailable, "connection refused"}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Failure{FailureUnavailable, "the database closed the connection"}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return Failure{FailureUnavailable, "network error talking to the database"}
	}
	// Driver errors that carry no type to test: pgx's closed connections
	// and failed dials.
	s := err.Error()
	for _, m := range []struct{ text, cause string }{
		{"conn closed", "the database closed the connection"},
		{"failed to connect", "cannot connect to the database"},
		{"connection refused", "connection refused"},
		{"server closed the connection", "the database closed the connection"},
		{"database is locked", "the SQLite database is locked"},
		{"no space left on device", "no space left on device"},
	} {
		if strings.Contains(s, m.text) {
			kind := FailureUnavailable
			if m.cause == "no space left on device" {
				kind = FailureStorageFull
			}
			return Failure{kind, m.cause}
		}
	}
	return Failure{}
}
