// Package jsonerror is the JSON value a command run with --json prints on
// standard output when it fails, so that a script reading that output
// always gets exactly one JSON value, success or not.
//
// # Shape
//
//	{
//	  "ok": false,
//	  "command": "verify-session",
//	  "session_id": "0190f1c2-7a3b-7cde-8f01-23456789abcd",
//	  "error": {"kind": "not_found", "code": 2, "message": "session … is not in this ledger …"}
//	}
//
// ok is always false; session_id is present when the command knew the
// session; error.code is the process's exit status; error.kind is one of
// the Kind constants; check, sequence and problem are set when a
// verification check failed. docs/cli.md#json-output documents the fields
// for users; they are a stable interface.
//
// # Use
//
//	if asJSON {
//		jsonerror.Write(stdout, jsonerror.Failure{Command: "verify-cert",
//			Error: jsonerror.Detail{Kind: jsonerror.KindUsage, Code: 2, Message: err.Error()}})
//	}
//
// # Limitations
//
// The package writes the value; knowing whether the command already
// printed one (a failed verification prints its full result instead) is
// the caller's job.
package jsonerror

import (
	"encoding/json"
	"io"
)

// Kinds of failure, the value of error.kind.
const (
	// KindUsage is a command line the command does not accept: an unknown
	// flag, a missing or malformed argument.
	KindUsage = "usage"
	// KindConfig is an environment variable or configuration file that
	// does not load.
	KindConfig = "config"
	// KindNotFound is a session (or other named object) that does not
	// exist.
	KindNotFound = "not_found"
	// KindVerification is evidence that does not verify: error.check names
	// the failing check and error.sequence the first broken event.
	KindVerification = "verification"
	// KindFailed is any other failure that exits 1 (a denial, an unusable
	// sandbox, an unreadable certificate).
	KindFailed = "failed"
	// KindError is any other failure that keeps the command from running
	// (an unreachable ledger, an unwritable file).
	KindError = "error"
)

// Failure is the value a failing --json command prints.
type Failure struct {
	// OK is always false; Write sets it.
	OK bool `json:"ok"`
	// Command is the command that failed, such as "verify-session".
	Command string `json:"command"`
	// SessionID is the session the command was about, when known.
	SessionID string `json:"session_id,omitempty"`
	Error     Detail `json:"error"`
}

// Detail says what failed.
type Detail struct {
	Kind string `json:"kind"`
	// Code is the exit status of the process.
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Check, Sequence and Problem locate a failed verification: the check's
	// name, the first broken sequence (absent when the problem is not tied
	// to one event) and the check's own words.
	Check    string `json:"check,omitempty"`
	Sequence *int64 `json:"sequence,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// Write prints f as indented JSON on w, as every --json output is.
func Write(w io.Writer, f Failure) error {
	f.OK = false
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}

// KindOfCode is the kind of a failure known only by its exit status: 1 is
// KindFailed, anything else KindError.
func KindOfCode(code int) string {
	if code == 1 {
		return KindFailed
	}
	return KindError
}
