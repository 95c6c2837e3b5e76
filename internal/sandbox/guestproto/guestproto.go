// Package guestproto is the wire format between IronVise and the init of a
// Firecracker guest (docs/design/sandbox.md#firecracker-tier): the intent
// image the host attaches as /dev/vdb, and the framed result the guest writes
// to its serial console.
//
// # The intent image
//
// /dev/vdb holds the intent as raw JSON — not a filesystem — padded with
// NUL bytes to a multiple of 512 bytes:
//
//	{"action":"run_command","params":{"command":"ls -la"},
//	 "ironvise":{"nonce":"…","timeout_secs":28,"limits":{…},"env":[…]}}
//
// action and params are the intent of docs/design/checks.md#intent-model
// (which may also carry justification and reasoning); "ironvise" is what the
// host adds for this run. The guest strips the padding, parses the JSON
// strictly (package strictjson: a duplicate key anywhere, invalid UTF-8, a
// member it does not know or spelled in another case, a value of the wrong
// type are all refused) and runs params.command for run_command; any other
// action is unsupported.
//
// # The result frame
//
// The serial console also carries the kernel's messages, so the guest frames
// its result:
//
//	IRONVISE-RESULT-BEGIN v1 <nonce>
//	|<base64 of the Result JSON, 76 characters a line>
//	…
//	IRONVISE-RESULT-END v1 <nonce> exit=<code|none> status=<status> bytes=<n> sha256=<hex>
//
// The host takes the one frame carrying its run's nonce, ignores lines
// between the markers that do not start with "|" (console noise), and
// checks the length and the SHA-256 of the payload. No output, no frame, a
// frame cut short or one that does not verify is a failure: the action is
// aborted (fail-closed).
//
//	img, _ := guestproto.EncodeIntent("ls", guestproto.Run{Nonce: n, TimeoutSecs: 28})
//	res, err := guestproto.ParseFrame(serialOutput, n)
//
// # Limitations
//
// The nonce keeps a frame printed by the command from passing for the
// guest's: the guest must run the command as a user that can read neither
// /dev/vdb nor write the console. Each stream carries at most [KeepBytes];
// the host caps it further (docs/design/checks.md#scanner-pipeline).
package guestproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// Sizes of the protocol.
const (
	// SectorSize is the block size the intent image is padded to.
	SectorSize = 512
	// MaxIntentBytes is the largest intent image the guest reads.
	MaxIntentBytes = 1 << 20
	// KeepBytes is what the guest keeps of each stream: the host's cap of
	// 64 KiB (docs/design/checks.md#scanner-pipeline) plus one UTF-8 sequence,
	// so that the host can cut without splitting a character exactly as for
	// other tiers.
	KeepBytes = 64<<10 + utf8.UTFMax
	// NonceLen is the length of a nonce in hex characters.
	NonceLen = 32
)

// ActionRunCommand is the one action the guest executes.
const ActionRunCommand = "run_command"

// Errors of this package, compared with errors.Is.
var (
	// ErrIntent means the intent image is not a usable intent.
	ErrIntent = errors.New("guestproto: bad intent")
	// ErrUnsupported means the intent's action is not run_command.
	ErrUnsupported = errors.New("guestproto: unsupported action")
	// ErrNoOutput means the guest wrote nothing at all.
	ErrNoOutput = errors.New("guestproto: no output")
	// ErrNoFrame means there was output but no result frame for this run.
	ErrNoFrame = errors.New("guestproto: no result frame")
	// ErrTruncated means a frame began but never ended.
	ErrTruncated = errors.New("guestproto: truncated result frame")
	// ErrCorrupt means a frame does not verify (length, hash, JSON, a
	// second frame).
	ErrCorrupt = errors.New("guestproto: corrupt result frame")
)

// Intent is the JSON of the intent image.
type Intent struct {
	Action string          `json:"action"`
	Params json.RawMessage `json:"params,omitempty"`
	// Run is what the host adds for this run; nil in an intent written by
	// something else.
	Run *Run `json:"ironvise,omitempty"`
}

// Run is the host's part of the intent image.
type Run struct {
	// Nonce is NonceLen hex characters, fresh for every run.
	Nonce string `json:"nonce"`
	// TimeoutSecs is the guest-side wall-clock limit of the command; the
	// host's own timeout is a little longer and kills the VM.
	TimeoutSecs int `json:"timeout_secs"`
	// Limits are rlimits the guest applies to the command.
	Limits Limits `json:"limits"`
	// Env is the command's extra environment (KEY=VALUE).
	Env []string `json:"env,omitempty"`
}

// Limits are per-process rlimits; zero means "not set".
type Limits struct {
	CPUSecs  int `json:"cpu_secs,omitempty"`
	ASMiB    int `json:"as_mib,omitempty"`
	NoFile   int `json:"nofile,omitempty"`
	NProc    int `json:"nproc,omitempty"`
	FSizeMiB int `json:"fsize_mib,omitempty"`
}

type runCommandParams struct {
	Command string `json:"command"`
}

// EncodeIntent returns the intent image of a run_command: the JSON padded
// with NUL bytes to a multiple of SectorSize.
func EncodeIntent(command string, run Run) ([]byte, error) {
	if command == "" {
		return nil, fmt.Errorf("%w: empty command", ErrIntent)
	}
	if !validNonce(run.Nonce) {
		return nil, fmt.Errorf("%w: nonce %q is not %d hex characters", ErrIntent, run.Nonce, NonceLen)
	}
	params, err := json.Marshal(runCommandParams{Command: command})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIntent, err)
	}
	b, err := json.Marshal(Intent{Action: ActionRunCommand, Params: params, Run: &run})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIntent, err)
	}
	if len(b) > MaxIntentBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrIntent, len(b), MaxIntentBytes)
	}
	padded := make([]byte, (len(b)+SectorSize-1)/SectorSize*SectorSize)
	copy(padded, b)
	return padded, nil
}

// DecodeIntent parses an intent image: the trailing NUL padding is
// stripped, the rest must be one JSON object of exactly the intent image's
// shape (see decodeTree): strict JSON — no duplicate key at any depth, no
// invalid UTF-8, nothing after the object — with every member name known
// and spelled exactly, and every value of its type.
func DecodeIntent(img []byte) (*Intent, error) {
	if len(img) > MaxIntentBytes {
		return nil, fmt.Errorf("%w: image larger than %d bytes", ErrIntent, MaxIntentBytes)
	}
	body := bytes.TrimRight(img, "\x00")
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("%w: the image is empty", ErrIntent)
	}
	// Security: the guest must run what the host's checks saw. A lenient
	// decoder lets a duplicate key's last value win
	// ("action":"read_file" … "action":"run_command" ran the command),
	// matches "Action" for "action", and turns invalid UTF-8 into U+FFFD;
	// the strict tree has none of that, and decodeTree matches names
	// exactly.
	root, err := strictjson.Decode(body, maxIntentDepth)
	if err != nil {
		return nil, fmt.Errorf("%w: not JSON: %w", ErrIntent, err)
	}
	in, err := decodeTree(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIntent, err)
	}
	return in, nil
}

// Command returns params.command of a run_command intent, ErrUnsupported
// for any other action, ErrIntent for a run_command without a command or
// whose params are not exactly {"command": "<non-empty string>"}.
func (in *Intent) Command() (string, error) {
	if in.Action != ActionRunCommand {
		return "", fmt.Errorf("%w: %q (only run_command runs in the guest)", ErrUnsupported, in.Action)
	}
	if len(in.Params) == 0 {
		return "", fmt.Errorf("%w: run_command without params", ErrIntent)
	}
	params, err := strictjson.Decode(in.Params, maxIntentDepth)
	if err != nil {
		return "", fmt.Errorf("%w: params: %w", ErrIntent, err)
	}
	command, err := commandOf(params, "$.params")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrIntent, err)
	}
	if command == "" {
		return "", fmt.Errorf("%w: params.command is empty", ErrIntent)
	}
	return command, nil
}

// Nonce returns the run's nonce, or "" for an intent without one.
func (in *Intent) Nonce() string {
	if in == nil || in.Run == nil {
		return ""
	}
	return in.Run.Nonce
}

func validNonce(s string) bool {
	if len(s) != NonceLen {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
