package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"syscall"
	"testing"
)

type fakePgError struct{ code string }

func (e *fakePgError) Error() string    { return "ERROR: x (SQLSTATE " + e.code + ")" }
func (e *fakePgError) SQLState() string { return e.code }

type fakeSQLiteError struct{ code int }

func (e *fakeSQLiteError) Error() string { return fmt.Sprintf("sqlite error %d", e.code) }
func (e *fakeSQLiteError) Code() int     { return e.code }

// TestClassify: what each storage failure is (issue 13 item 5). The
// first case is the settings write that used to read "database
// unavailable": an errno looks like a net.Error, but ENOSPC is a full disk.
func TestClassify(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want FailureKind
	}{
		{"ENOSPC writing a file", fmt.Errorf("server: write settings.json: %w", &fs.PathError{Op: "write", Path: "/d/settings.json", Err: syscall.ENOSPC}), FailureStorageFull},
		{"EDQUOT", &fs.PathError{Op: "write", Path: "x", Err: syscall.EDQUOT}, FailureStorageFull},
		{"EACCES is not a database outage", &fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, FailureOther},
		{"SQLite full", fmt.Errorf("ledger: append: %w", &fakeSQLiteError{13}), FailureStorageFull},
		{"SQLite full, extended code", &fakeSQLiteError{13 | 1<<8}, FailureStorageFull},
		{"SQLite busy", &fakeSQLiteError{5}, FailureUnavailable},
		{"PostgreSQL disk_full", &fakePgError{"53100"}, FailureStorageFull},
		{"PostgreSQL admin shutdown", fmt.Errorf("ledger: %w", &fakePgError{"57P01"}), FailureUnavailable},
		{"PostgreSQL connection failure", &fakePgError{"08006"}, FailureUnavailable},
		{"PostgreSQL too many connections", &fakePgError{"53300"}, FailureUnavailable},
		{"PostgreSQL unique violation", &fakePgError{"23505"}, FailureOther},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, FailureUnavailable},
		{"refused", fmt.Errorf("dial: %w", syscall.ECONNREFUSED), FailureUnavailable},
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), FailureUnavailable},
		{"pgx conn closed", errors.New("conn closed"), FailureUnavailable},
		{"deadline", fmt.Errorf("ledger: %w", context.DeadlineExceeded), FailureUnavailable},
		{"closed ledger", ErrClosed, FailureUnavailable},
		{"a bug", errors.New("something else"), FailureOther},
		{"nil", nil, FailureOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.err); got.Kind != tc.want || (tc.want != FailureOther && got.Cause == "") {
				t.Fatalf("Classify(%v) = %+v; want kind %d with a cause", tc.err, got, tc.want)
			}
		})
	}
}
