package guestproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const testNonce = "0123456789abcdef0123456789abcdef"

func intp(i int) *int { return &i }

func TestIntentImageRoundTrip(t *testing.T) {
	run := Run{Nonce: testNonce, TimeoutSecs: 28, Limits: Limits{CPUSecs: 30, NoFile: 64, NProc: 512}, Env: []string{"LANG=C.UTF-8"}}
	for _, cmd := range []string{"ls -la", `printf '%s\n' "a\"b"; echo é`, strings.Repeat("x", 5000)} {
		img, err := EncodeIntent(cmd, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(img)%SectorSize != 0 || len(img) == 0 {
			t.Fatalf("image of %d bytes is not a multiple of %d", len(img), SectorSize)
		}
		body := bytes.TrimRight(img, "\x00")
		if bytes.ContainsRune(body, 0) || len(img)-len(body) >= SectorSize {
			t.Fatalf("padding: %d bytes of JSON in %d", len(body), len(img))
		}
		in, err := DecodeIntent(img)
		if err != nil {
			t.Fatal(err)
		}
		got, err := in.Command()
		if err != nil || got != cmd || !reflect.DeepEqual(*in.Run, run) || in.Nonce() != testNonce {
			t.Fatalf("decoded %q %+v, %v", got, in.Run, err)
		}
	}
}

func TestDecodeIntent(t *testing.T) {
	pad := func(s string) []byte {
		b := make([]byte, 1024)
		copy(b, s)
		return b
	}
	cases := []struct {
		name    string
		img     []byte
		command string
		err     error
	}{
		{"padded", pad(`{"action":"run_command","params":{"command":"id"}}`), "id", nil},
		{"unpadded", []byte(`{"action":"run_command","params":{"command":"id"}}`), "id", nil},
		{"trailing newline and padding", pad("{\"action\":\"run_command\",\"params\":{\"command\":\"id\"}}\n"), "id", nil},
		{"the intent's own fields", []byte(`{"action":"run_command","params":{"command":"id"},"justification":"why","reasoning":"r"}`), "id", nil},
		{"unknown param", []byte(`{"action":"run_command","params":{"command":"id","timeout":3}}`), "", ErrIntent},
		{"other action", pad(`{"action":"read_file","params":{"path":"/etc/passwd"}}`), "", ErrUnsupported},
		{"no action", []byte(`{"params":{"command":"id"}}`), "", ErrUnsupported},
		{"empty command", []byte(`{"action":"run_command","params":{"command":""}}`), "", ErrIntent},
		{"command not a string", []byte(`{"action":"run_command","params":{"command":["id"]}}`), "", ErrIntent},
		{"no params", []byte(`{"action":"run_command"}`), "", ErrIntent},
		{"not JSON", pad("echo hello"), "", ErrIntent},
		{"empty", make([]byte, 512), "", ErrIntent},
		{"NUL inside", []byte("{\"action\":\"run_\x00command\"}"), "", ErrIntent},
		{"two objects", []byte(`{"action":"run_command"} {"action":"x"}`), "", ErrIntent},
		{"bad nonce", []byte(`{"action":"run_command","params":{"command":"id"},"ironvise":{"nonce":"xyz"}}`), "", ErrIntent},
		{"too large", make([]byte, MaxIntentBytes+1), "", ErrIntent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := DecodeIntent(tc.img)
			var cmd string
			if err == nil {
				cmd, err = in.Command()
			}
			if !errors.Is(err, tc.err) || cmd != tc.command {
				t.Fatalf("got %q, %v; want %q, %v", cmd, err, tc.command, tc.err)
			}
		})
	}
}

// TestDecodeIntentIsStrict: what a lenient decoder would accept — and run
// something other than what the host's checks saw — is refused: duplicate
// members at any depth, member names in another case or unknown, invalid
// UTF-8, values of another type.
func TestDecodeIntentIsStrict(t *testing.T) {
	n := `"nonce":"` + testNonce + `"`
	cases := []struct {
		name, img, want string
	}{
		{"duplicate action, run_command last", `{"action":"read_file","params":{"command":"id"},"action":"run_command"}`, "duplicate key"},
		{"duplicate action, run_command first", `{"action":"run_command","action":"read_file","params":{"command":"id"}}`, "duplicate key"},
		{"duplicate command", `{"action":"run_command","params":{"command":"true","command":"rm -rf /"}}`, "duplicate key"},
		{"duplicate params", `{"action":"run_command","params":{"command":"true"},"params":{"command":"id"}}`, "duplicate key"},
		{"duplicate nonce", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,` + n + `}}`, "duplicate key"},
		{"duplicate limit", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"limits":{"nproc":1,"nproc":9999}}}`, "duplicate key"},
		{"escaped duplicate", `{"action":"run_command","params":{"command":"id","comm\u0061nd":"x"}}`, "duplicate key"},
		{"upper-case action", `{"Action":"run_command","params":{"command":"id"}}`, `unknown member "Action"`},
		{"upper-case params", `{"action":"run_command","Params":{"command":"id"}}`, `unknown member "Params"`},
		{"upper-case command", `{"action":"run_command","params":{"Command":"id"}}`, `unknown member "Command"`},
		{"upper-case ironvise", `{"action":"run_command","params":{"command":"id"},"IRONVISE":{` + n + `}}`, `unknown member "IRONVISE"`},
		{"upper-case nonce", `{"action":"run_command","params":{"command":"id"},"ironvise":{"Nonce":"` + testNonce + `"}}`, `unknown member "Nonce"`},
		{"upper-case limit", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"limits":{"NProc":1}}}`, `unknown member "NProc"`},
		{"unknown member", `{"action":"run_command","params":{"command":"id"},"env":["A=1"]}`, `unknown member "env"`},
		{"unknown run member", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"user":"root"}}`, `unknown member "user"`},
		{"long s folds to s", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"limits":{"cpu_\u017fecs":1}}}`, "unknown member"},
		{"invalid UTF-8 in the command", "{\"action\":\"run_command\",\"params\":{\"command\":\"echo \xff\"}}", "invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"action\":\"run_command\",\"params\":{\"command\":\"id\"},\"x\xff\":1}", "invalid UTF-8"},
		{"unpaired surrogate", `{"action":"run_command","params":{"command":"id \ud800"}}`, "surrogate"},
		{"action not a string", `{"action":["run_command"],"params":{"command":"id"}}`, "not a string"},
		{"params not an object", `{"action":"run_command","params":"id"}`, "not an object"},
		{"params null", `{"action":"run_command","params":null}`, "not an object"},
		{"ironvise not an object", `{"action":"run_command","params":{"command":"id"},"ironvise":[]}`, "not an object"},
		{"timeout a string", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"timeout_secs":"5"}}`, "not a number"},
		{"timeout a fraction", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"timeout_secs":1.5}}`, "not an integer"},
		{"timeout an exponent", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"timeout_secs":1e3}}`, "not an integer"},
		{"negative limit", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"limits":{"nproc":-1}}}`, "not an integer"},
		{"huge limit", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"limits":{"as_mib":4294967296}}}`, "not an integer"},
		{"env not strings", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"env":[1]}}`, "not a string"},
		{"env without =", `{"action":"run_command","params":{"command":"id"},"ironvise":{` + n + `,"env":["PATH"]}}`, "not NAME=value"},
		{"justification a number", `{"action":"run_command","params":{"command":"id"},"justification":1}`, "not a string"},
		{"not an object", `["run_command"]`, "not an object"},
		{"trailing data", `{"action":"run_command","params":{"command":"id"}}x`, "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := DecodeIntent([]byte(tc.img))
			if err == nil {
				cmd, cerr := in.Command()
				t.Fatalf("accepted: action %q, command %q (%v)", in.Action, cmd, cerr)
			}
			if !errors.Is(err, ErrIntent) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want ErrIntent containing %q", err, tc.want)
			}
		})
	}
}

// TestDecodeIntentReadsTheRun: every member of the host's part is read.
func TestDecodeIntentReadsTheRun(t *testing.T) {
	img := `{"action":"run_command","params":{"command":"id"},"ironvise":{"nonce":"` + testNonce + `","timeout_secs":28,` +
		`"limits":{"cpu_secs":30,"as_mib":512,"nofile":64,"nproc":512,"fsize_mib":100},"env":["LANG=C.UTF-8","A=b=c"]}}`
	in, err := DecodeIntent([]byte(img))
	if err != nil {
		t.Fatal(err)
	}
	want := Run{Nonce: testNonce, TimeoutSecs: 28, Limits: Limits{CPUSecs: 30, ASMiB: 512, NoFile: 64, NProc: 512, FSizeMiB: 100}, Env: []string{"LANG=C.UTF-8", "A=b=c"}}
	if !reflect.DeepEqual(*in.Run, want) {
		t.Fatalf("run %+v; want %+v", *in.Run, want)
	}
	if string(in.Params) != `{"command":"id"}` {
		t.Fatalf("params %s", in.Params)
	}
}

func TestEncodeIntentRejects(t *testing.T) {
	if _, err := EncodeIntent("", Run{Nonce: testNonce}); !errors.Is(err, ErrIntent) {
		t.Fatalf("empty command: %v", err)
	}
	if _, err := EncodeIntent("id", Run{Nonce: "short"}); !errors.Is(err, ErrIntent) {
		t.Fatalf("bad nonce: %v", err)
	}
	if _, err := EncodeIntent(strings.Repeat("x", MaxIntentBytes), Run{Nonce: testNonce}); !errors.Is(err, ErrIntent) {
		t.Fatalf("oversized: %v", err)
	}
}

func sample() Result {
	return Result{Status: StatusOK, ExitCode: intp(3), Stdout: []byte("hello\n\xff"), Stderr: []byte("warn\n"),
		StdoutTotal: 7, StderrTotal: 5, DurationMS: 12, UID: intp(65534), NoNewPrivs: true}
}

func frame(t *testing.T, nonce string, r Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteFrame(&b, nonce, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestFrameGolden freezes the frame format: a change to it breaks guests
// already deployed in root filesystems.
func TestFrameGolden(t *testing.T) {
	got := frame(t, testNonce, sample())
	path := filepath.Join("testdata", "frame-v1.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("frame changed:\n%s\nwant:\n%s", got, want)
	}
	r, err := ParseFrame(want, testNonce)
	if err != nil || !reflect.DeepEqual(*r, sample()) {
		t.Fatalf("golden frame parses to %+v, %v", r, err)
	}
}

func TestParseFrame(t *testing.T) {
	good := frame(t, testNonce, sample())
	lines := strings.Split(strings.TrimPrefix(good, "\n"), "\n")
	other := frame(t, strings.Repeat("f", NonceLen), Result{Status: StatusOK, ExitCode: intp(0), Stdout: []byte("forged")})
	noisy := lines[0] + "\r\n" + "[    0.412345] random: crng init done\r\n" + lines[1] + "\r\n" +
		"[    0.5] EXT4-fs (vda): mounted filesystem\r\n" + strings.Join(lines[2:], "\r\n")
	orphan := frame(t, NoNonce, Result{Status: StatusError, Reason: "guest: read /dev/vdb: no such device"})
	cases := []struct {
		name string
		out  string
		err  error
		ok   bool
	}{
		{"clean", good, nil, true},
		{"after boot noise", "[    0.000000] Linux version 6.1\nLoading…\n" + good + "reboot: Restarting system\n", nil, true},
		{"noise between payload lines and CRLF", noisy, nil, true},
		{"marker after noise on one line", "[ 1.0] tty" + strings.TrimPrefix(good, "\n"), nil, true},
		{"another run's frame first", other + good, nil, true},
		{"empty", "", ErrNoOutput, false},
		{"whitespace only", "\r\n\n  ", ErrNoOutput, false},
		{"kernel noise only", "[    0.000000] Linux version 6.1\nKernel panic - not syncing: No working init found.\n", ErrNoFrame, false},
		{"plain command output (unframed guest)", "hello world\n", ErrNoFrame, false},
		{"only another run's frame", other, ErrNoFrame, false},
		{"cut before the end", strings.Join(lines[:len(lines)-2], "\n"), ErrTruncated, false},
		{"payload line lost", strings.Replace(good, "\n"+lines[1]+"\n", "\n", 1), ErrCorrupt, false},
		{"payload altered", strings.Replace(good, lines[1], lines[1][:10]+"A"+lines[1][11:], 1), ErrCorrupt, false},
		{"noise inside a payload line", strings.Replace(good, lines[1], lines[1][:10]+"[ 0.5] x"+lines[1][10:], 1), ErrCorrupt, false},
		{"two frames for the run", good + good, ErrCorrupt, false},
		{"nested begin", lines[0] + "\n" + good, ErrCorrupt, false},
		{"exit in marker disagrees", strings.Replace(good, "exit=3", "exit=0", 1), ErrCorrupt, false},
		{"status in marker disagrees", strings.Replace(good, "status=ok", "status=timeout", 1), ErrCorrupt, false},
		{"length disagrees", strings.Replace(good, "bytes=", "bytes=1", 1), ErrCorrupt, false},
		{"malformed end", strings.Replace(good, " sha256=", " sha=", 1), ErrCorrupt, false},
		{"unknown version", strings.Replace(good, "BEGIN v1", "BEGIN v2", 1), ErrCorrupt, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseFrame([]byte(tc.out), testNonce)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v; want %v", err, tc.err)
			}
			if tc.ok && (r == nil || !reflect.DeepEqual(*r, sample())) {
				t.Fatalf("result %+v", r)
			}
			if !tc.ok && r != nil {
				t.Fatalf("a failed parse returned %+v", r)
			}
		})
	}
	t.Run("orphan frame gives its reason", func(t *testing.T) {
		r, err := ParseFrame([]byte("boot\n"+orphan), testNonce)
		if !errors.Is(err, ErrNoFrame) || r == nil || r.Reason != "guest: read /dev/vdb: no such device" {
			t.Fatalf("got %+v, %v", r, err)
		}
	})
}

func TestParseFrameRejectsOversizedStreams(t *testing.T) {
	r := Result{Status: StatusOK, ExitCode: intp(0), Stdout: bytes.Repeat([]byte("x"), KeepBytes+1), StdoutTotal: KeepBytes + 1}
	if _, err := ParseFrame([]byte(frame(t, testNonce, r)), testNonce); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("oversized stream: %v", err)
	}
	r = Result{Status: StatusOK, ExitCode: intp(0), Stdout: []byte("abc"), StdoutTotal: 1}
	if _, err := ParseFrame([]byte(frame(t, testNonce, r)), testNonce); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("total below kept: %v", err)
	}
	r = Result{Status: "maybe", ExitCode: intp(0)}
	if _, err := ParseFrame([]byte(frame(t, testNonce, r)), testNonce); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown status: %v", err)
	}
}

// FuzzParseFrame: no input panics, and whatever parses re-frames to a frame
// that parses to the same result.
func FuzzParseFrame(f *testing.F) {
	var b bytes.Buffer
	_ = WriteFrame(&b, testNonce, sample())
	f.Add(b.Bytes())                                              // a valid frame
	f.Add([]byte(""))                                             // no output
	f.Add([]byte("IRONVISE-RESULT-BEGIN v1 " + testNonce + "\n")) // truncated
	f.Add([]byte("IRONVISE-RESULT-BEGIN v1 " + testNonce + "\n|e30=\nIRONVISE-RESULT-END v1 " + testNonce +
		" exit=none status=ok bytes=2 sha256=44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\n")) // "{}": hash ok, fields missing
	f.Add([]byte("\r\n[ 0.1] x\rIRONVISE-RESULT-END v1 none\n")) // stray end marker
	f.Fuzz(func(t *testing.T, out []byte) {
		r, err := ParseFrame(out, testNonce)
		if err != nil {
			return
		}
		var again bytes.Buffer
		if err := WriteFrame(&again, testNonce, *r); err != nil {
			t.Fatal(err)
		}
		r2, err := ParseFrame(again.Bytes(), testNonce)
		if err != nil || !reflect.DeepEqual(r, r2) {
			t.Fatalf("re-framed result does not round-trip: %+v vs %+v, %v", r, r2, err)
		}
	})
}

// sameRun compares runs, an empty env equal to none (EncodeIntent omits
// it).
func sameRun(a, b Run) bool {
	if len(a.Env) == 0 && len(b.Env) == 0 {
		a.Env, b.Env = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// FuzzDecodeIntent: no input panics; whatever is accepted, encoding/json's
// lenient reading of the same bytes agrees with (no parser differential:
// what the guest runs is what any reader of the image sees), and an
// accepted run_command re-encodes to an image that decodes to the same
// command and run.
func FuzzDecodeIntent(f *testing.F) {
	img, _ := EncodeIntent("ls -la", Run{Nonce: testNonce, TimeoutSecs: 5, Limits: Limits{NProc: 8}, Env: []string{"LANG=C"}})
	f.Add(img)                                                                                                                                // the host's own image
	f.Add([]byte(`{"action":"run_command","params":{"command":"id"}}`))                                                                       // unpadded, no nonce
	f.Add([]byte("{\"action\":\"run_command\",\"params\":{\"command\":\"\\u0000\"}}"))                                                        // NUL inside the command
	f.Add([]byte(`{"action":"read_file"}` + "\x00\x00"))                                                                                      // unsupported action
	f.Add([]byte(`[1,2,3]`))                                                                                                                  // not an object
	f.Add([]byte(`{"action":"read_file","params":{"command":"id"},"action":"run_command"}`))                                                  // duplicate, last would win
	f.Add([]byte(`{"Action":"run_command","Params":{"Command":"id"}}`))                                                                       // case-folded names
	f.Add([]byte(`{"action":"run_command","params":{"command":"id","comm\u0061nd":"x"}}`))                                                    // escaped duplicate
	f.Add([]byte("{\"action\":\"run_command\",\"params\":{\"command\":\"\xff\"}}"))                                                           // invalid UTF-8
	f.Add([]byte(`{"action":"run_command","params":{"command":"id"},"ironvise":{"nonce":"` + testNonce + `","limits":{"cpu_\u017fecs":1}}}`)) // long s folds to s
	f.Add([]byte(`{"action":"run_command","params":{"command":"id"},"ironvise":{"nonce":"` + testNonce + `","timeout_secs":1e2}}`))           // a float for an int
	f.Fuzz(func(t *testing.T, img []byte) {
		in, err := DecodeIntent(img)
		if err != nil {
			return
		}
		cmd, cmdErr := in.Command()
		// The lenient reading.
		var lax struct {
			Action string `json:"action"`
			Params struct {
				Command string `json:"command"`
			} `json:"params"`
			Run *Run `json:"ironvise"`
		}
		if err := json.Unmarshal(bytes.TrimRight(img, "\x00"), &lax); err != nil {
			t.Fatalf("accepted an image encoding/json refuses: %v", err)
		}
		if lax.Action != in.Action || (in.Run == nil) != (lax.Run == nil) || in.Run != nil && !sameRun(*in.Run, *lax.Run) ||
			cmdErr == nil && lax.Params.Command != cmd {
			t.Fatalf("readers disagree: strict %q %+v %q, lenient %q %+v %q", in.Action, in.Run, cmd, lax.Action, lax.Run, lax.Params.Command)
		}
		if cmdErr != nil {
			return
		}
		run := Run{Nonce: testNonce}
		if in.Run != nil {
			run = *in.Run
		}
		enc, err := EncodeIntent(cmd, run)
		if err != nil {
			return // e.g. too large once re-encoded
		}
		in2, err := DecodeIntent(enc)
		if err != nil {
			t.Fatal(err)
		}
		if cmd2, err := in2.Command(); err != nil || cmd2 != cmd || !sameRun(*in2.Run, run) {
			t.Fatalf("round trip %q -> %q, %+v -> %+v, %v", cmd, cmd2, run, *in2.Run, err)
		}
	})
}
