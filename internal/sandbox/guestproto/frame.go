package guestproto

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// Statuses of a Result.
const (
	// StatusOK: the command ran; ExitCode or Signal says how it ended.
	StatusOK = "ok"
	// StatusTimeout: the guest-side timeout killed the command.
	StatusTimeout = "timeout"
	// StatusUnsupported: the intent's action is not run_command.
	StatusUnsupported = "unsupported"
	// StatusError: the guest could not run the command (bad intent,
	// setup failure); Reason says why.
	StatusError = "error"
)

// Result is the payload of a result frame.
type Result struct {
	Status string `json:"status"`
	// Reason explains timeout, unsupported and error.
	Reason string `json:"reason,omitempty"`
	// ExitCode is nil when a signal ended the command or it never ran.
	ExitCode *int   `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// Stdout and Stderr are the first KeepBytes of each stream;
	// StdoutTotal and StderrTotal count every byte the command wrote.
	Stdout      []byte `json:"stdout"`
	Stderr      []byte `json:"stderr"`
	StdoutTotal int64  `json:"stdout_total"`
	StderrTotal int64  `json:"stderr_total"`
	DurationMS  int64  `json:"duration_ms"`
	// UID is the uid the command ran as; NoNewPrivs whether it was set.
	UID        *int `json:"uid"`
	NoNewPrivs bool `json:"no_new_privs"`
}

// Frame markers.
const (
	beginMarker = "IRONVISE-RESULT-BEGIN"
	endMarker   = "IRONVISE-RESULT-END"
	version     = "v1"
	linePrefix  = '|'
	lineWidth   = 76
	// NoNonce stands in for the nonce in a frame the guest writes when it
	// could not read one from the intent image. The host never accepts it
	// as a result; it only shows its reason.
	NoNonce = "none"
)

// WriteFrame writes r framed for the run nonce (NoNonce when the intent
// could not be read) to w.
func WriteFrame(w io.Writer, nonce string, r Result) error {
	payload, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("guestproto: encode result: %w", err)
	}
	enc := base64.StdEncoding.EncodeToString(payload)
	sum := sha256.Sum256(payload)
	var b bytes.Buffer
	b.Grow(len(enc) + len(enc)/lineWidth*2 + 256)
	// A leading newline ends whatever partial line the console holds.
	fmt.Fprintf(&b, "\n%s %s %s\n", beginMarker, version, nonce)
	for len(enc) > 0 {
		n := min(lineWidth, len(enc))
		b.WriteByte(linePrefix)
		b.WriteString(enc[:n])
		b.WriteByte('\n')
		enc = enc[n:]
	}
	fmt.Fprintf(&b, "%s %s %s exit=%s status=%s bytes=%d sha256=%s\n",
		endMarker, version, nonce, exitField(r.ExitCode), r.Status, len(payload), hex.EncodeToString(sum[:]))
	_, err = w.Write(b.Bytes())
	return err
}

func exitField(code *int) string {
	if code == nil {
		return "none"
	}
	return strconv.Itoa(*code)
}

// ParseFrame finds the result frame of the run nonce in the serial output
// out and verifies it. Errors wrap ErrNoOutput, ErrNoFrame, ErrTruncated or
// ErrCorrupt. When out holds no frame for nonce but a verified NoNonce
// frame, that frame's Result is returned with the ErrNoFrame error, for its
// reason.
func ParseFrame(out []byte, nonce string) (*Result, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, ErrNoOutput
	}
	var (
		found   *Result
		orphan  *Result
		inFrame string // the nonce of the frame being read
		payload strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), len(out)+1)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		// A marker may follow console noise on the same line.
		if i := strings.Index(line, beginMarker+" "); i >= 0 {
			f := strings.Fields(line[i:])
			if len(f) != 3 || f[1] != version {
				return nil, fmt.Errorf("%w: malformed begin marker %q", ErrCorrupt, clip(line[i:]))
			}
			if inFrame != "" && inFrame == nonce {
				return nil, fmt.Errorf("%w: a frame began inside another", ErrCorrupt)
			}
			inFrame = f[2]
			payload.Reset()
			continue
		}
		if inFrame == "" {
			continue
		}
		if i := strings.Index(line, endMarker+" "); i >= 0 {
			r, err := verify(line[i:], inFrame, payload.String())
			switch {
			case inFrame == nonce && err != nil:
				return nil, err
			case inFrame == nonce && found != nil:
				return nil, fmt.Errorf("%w: two frames for this run", ErrCorrupt)
			case inFrame == nonce:
				found = r
			case inFrame == NoNonce && err == nil:
				orphan = r
			}
			inFrame = ""
			continue
		}
		if len(line) > 0 && line[0] == linePrefix {
			payload.WriteString(line[1:])
		}
		// Anything else inside a frame is console noise (kernel messages);
		// the hash decides whether the payload survived it.
	}
	switch {
	case found != nil:
		return found, nil
	case inFrame == nonce:
		return nil, fmt.Errorf("%w: the output ended inside the frame", ErrTruncated)
	case orphan != nil:
		return orphan, fmt.Errorf("%w: the guest reported without this run's nonce", ErrNoFrame)
	}
	return nil, ErrNoFrame
}

// verify checks the end marker against the payload and decodes it.
func verify(end, nonce, b64 string) (*Result, error) {
	f := strings.Fields(end)
	if len(f) != 7 || f[1] != version || f[2] != nonce ||
		!strings.HasPrefix(f[3], "exit=") || !strings.HasPrefix(f[4], "status=") ||
		!strings.HasPrefix(f[5], "bytes=") || !strings.HasPrefix(f[6], "sha256=") {
		return nil, fmt.Errorf("%w: malformed end marker %q", ErrCorrupt, clip(end))
	}
	payload, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not base64: %w", ErrCorrupt, err)
	}
	if n, err := strconv.Atoi(f[5][len("bytes="):]); err != nil || n != len(payload) {
		return nil, fmt.Errorf("%w: %d payload bytes, the marker says %s", ErrCorrupt, len(payload), f[5])
	}
	sum := sha256.Sum256(payload)
	if f[6][len("sha256="):] != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("%w: payload hash mismatch", ErrCorrupt)
	}
	var r Result
	if err := strictjson.Unmarshal(payload, 2, &r); err != nil {
		return nil, fmt.Errorf("%w: payload: %w", ErrCorrupt, err)
	}
	if f[3][len("exit="):] != exitField(r.ExitCode) || f[4][len("status="):] != r.Status {
		return nil, fmt.Errorf("%w: the end marker disagrees with the payload", ErrCorrupt)
	}
	switch r.Status {
	case StatusOK, StatusTimeout, StatusUnsupported, StatusError:
	default:
		return nil, fmt.Errorf("%w: unknown status %q", ErrCorrupt, r.Status)
	}
	if len(r.Stdout) > KeepBytes || len(r.Stderr) > KeepBytes ||
		r.StdoutTotal < int64(len(r.Stdout)) || r.StderrTotal < int64(len(r.Stderr)) {
		return nil, fmt.Errorf("%w: stream sizes out of range", ErrCorrupt)
	}
	return &r, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
