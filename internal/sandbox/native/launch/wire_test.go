package launch

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func testSpec() Spec {
	return Spec{
		Command:   `printf '%s\n' "a = b" | grep -c = ; echo "tab	and é"`,
		Argv:      []string{"grep", "", "a b", "x=y"},
		Workspace: "/srv/ws with space", Scratch: "/tmp/ironvise-scratch-1",
		Env:        []string{"PATH=/usr/bin:/bin", "HOME=/tmp/x", "EMPTY=", "WEIRD=a=b=c"},
		Limits:     Limits{CPUSecs: 30, MemMiB: 512, NoFile: 64, NProc: 512, FSizeMiB: 256},
		SwitchUser: true, UID: 1000, GID: 1001, UserNS: true, Container: true, Proxy: true,
		Seccomp:       []byte{0x20, 0, 0, 0, 4, 0, 0, 0, 0xff, 0x06},
		SeccompSHA256: strings.Repeat("ab", 32),
		Inject:        map[string]int{StepLandlock: 38, StepExec: 2, StepSeccomp: InjectSkip},
		Hide:          []string{"/home/a/.ssh", "/var/lib/ironvise data"},
		ScratchMiB:    256,
		TimerSlackNS:  50_000,
	}
}

func TestSpecArgsRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
	}{
		{"everything", testSpec()},
		{"overlay", Spec{Command: "true", Workspace: "/srv/ws", Scratch: "/tmp/s", Seccomp: []byte{1}, SeccompSHA256: "x", ScratchMiB: 1,
			Overlay: &Overlay{Layers: []string{"/d/o/2/upper", "/d/o/1/upper"}, Upper: "/d/o/3/upper", Work: "/d/o/3/work"}}},
		{"minimal", Spec{Command: "true", Workspace: "/", Scratch: "/tmp/s", Seccomp: []byte{1}, SeccompSHA256: "x", ScratchMiB: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args, err := tc.spec.Args()
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseArgs(args)
			if err != nil {
				t.Fatalf("ParseArgs(%q): %v", args, err)
			}
			if !reflect.DeepEqual(got, tc.spec) {
				t.Fatalf("got %+v; want %+v", got, tc.spec)
			}
		})
	}
}

func TestSpecArgsRejectsNUL(t *testing.T) {
	s := testSpec()
	s.Command = "echo a\x00b"
	if _, err := s.Args(); err == nil {
		t.Fatal("a NUL byte in the command was encoded")
	}
}

func TestParseArgsRejects(t *testing.T) {
	good, err := testSpec().Args()
	if err != nil {
		t.Fatal(err)
	}
	without := func(prefix string) []string {
		var out []string
		for _, a := range good {
			if !strings.HasPrefix(a, prefix) {
				out = append(out, a)
			}
		}
		return out
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "is missing"},
		{"json of an older binary", []string{`{"command":"true"}`}, "not key=value"},
		{"unknown key", slices.Concat(good, []string{"colour=red"}), "unknown key"},
		{"command twice", slices.Concat(good, []string{"command=rm -rf /"}), "given twice"},
		{"no command", without("command="), "command is missing"},
		{"no workspace", without("workspace="), "workspace is missing"},
		{"no seccomp", without("seccomp="), "seccomp is missing"},
		{"no hash", without("seccomp_sha256="), "seccomp_sha256 is missing"},
		{"no limits", without("limits="), "limits is missing"},
		{"four limits", slices.Concat(without("limits="), []string{"limits=1,2,3,4"}), "want 5 integers"},
		{"limit not a number", slices.Concat(without("limits="), []string{"limits=1,2,x,4,5"}), "limits"},
		{"bad base64", slices.Concat(without("seccomp="), []string{"seccomp=@@@"}), "seccomp"},
		{"bad user", slices.Concat(without("user="), []string{"user=1000"}), "user"},
		{"bad userns", slices.Concat(without("userns="), []string{"userns=yes"}), "userns"},
		{"bad container", slices.Concat(without("container="), []string{"container=true"}), "container"},
		{"container twice", slices.Concat(good, []string{"container=1"}), "container given twice"},
		{"bad inject", slices.Concat(good, []string{"inject=landlock"}), "inject"},
		{"no scratch cap", without("scratch_mib="), "scratch_mib is missing"},
		{"zero scratch cap", slices.Concat(without("scratch_mib="), []string{"scratch_mib=0"}), "positive"},
		{"relative hidden path", slices.Concat(good, []string{"hide=.ssh"}), "absolute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseArgs(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseArgs = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestStatusRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		st   Status
	}{
		{"applied", Status{Applied: &Applied{LandlockABI: 7, SeccompSHA256: strings.Repeat("0f", 32), UID: 65534,
			CapEffective: 0, CapPermitted: 1 << 40, NoNewPrivs: true, PidMax: 813, Namespaces: []string{"mount", "pid", "user"},
			RLimits:    RLimits{CPUSecs: 30, ASMiB: 512, NoFile: 64, NProc: 512, FSizeMiB: 256},
			ScratchMiB: 256, ScratchInodes: 65536, Hidden: 3, Verified: []string{VerifiedSeccomp, VerifiedLandlock}, Exec: ExecArgv}}},
		{"applied without namespaces", Status{Applied: &Applied{LandlockABI: 1, SeccompSHA256: "x", Exec: ExecShell}}},
		{"applied in overlay mode", Status{Applied: &Applied{LandlockABI: 1, SeccompSHA256: "x", Exec: ExecShell, Overlay: "redirect_dir=nofollow,metacopy=off,index=off,xino=off,userxattr"}}},
		{"error", Status{Error: &SetupError{Step: StepMounts, Errno: 1, Message: "mount /proc: \"quoted\"\nsecond line", Fix: "run as root"}}},
		{"error without errno or fix", Status{Error: &SetupError{Step: StepSpec, Message: "missing launch specification"}}},
		{"outcome exit", Status{Outcome: &Outcome{Exit: 3, Killed: 2}}},
		{"outcome signal", Status{Outcome: &Outcome{Exit: -1, Signal: 9}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.st.Marshal()
			if strings.ContainsAny(string(line), "\n\r") {
				t.Fatalf("status line %q is not one line", line)
			}
			got, err := ParseStatus(line)
			if err != nil {
				t.Fatalf("ParseStatus(%q): %v", line, err)
			}
			if !reflect.DeepEqual(got, tc.st) {
				t.Fatalf("got %+v / %+v; want %+v / %+v", got.Applied, got.Error, tc.st.Applied, tc.st.Error)
			}
		})
	}
}

func TestParseStatusRejects(t *testing.T) {
	for _, line := range []string{
		"",
		`{"applied":{}}`,
		"applied landlock_abi=7",
		"applied landlock_abi=x seccomp_sha256=\"a\" uid=0 cap_effective=0 cap_permitted=0 no_new_privs=true pid_max=0 namespaces=\"\" rlimits=1,2,3,4,5",
		"error step=\"x\"",
		"error errno=0 message=\"m\"",
		"error step=\"x\" errno=0 message=\"unterminated",
		"error step=\"x\"errno=0",
		"error step=\"x\" step=\"y\" errno=0",
		"error =1",
		"exit code=0",
		"outcome exit=0 signal=0",
		"outcome exit=x signal=0 killed=0",
		strings.Replace(string(testStatusApplied().Marshal()), `exec="argv"`, `exec="sh"`, 1),
		strings.Replace(string(testStatusApplied().Marshal()), ` exec="argv"`, ``, 1),
	} {
		if st, err := ParseStatus([]byte(line)); err == nil {
			t.Errorf("ParseStatus(%q) = %+v; want an error", line, st)
		}
	}
}

func TestSetupErrorText(t *testing.T) {
	e := &SetupError{Step: StepLandlock, Errno: 38, Message: "landlock_create_ruleset", Fix: "use Linux 5.13"}
	if got, want := e.Error(), "landlock: landlock_create_ruleset (function not implemented); fix: use Linux 5.13"; got != want {
		t.Fatalf("got %q; want %q", got, want)
	}
}

// FuzzParseArgs: whatever the arguments, ParseArgs does not panic, and a
// specification it accepts encodes back to arguments that decode to the
// same specification.
func FuzzParseArgs(f *testing.F) {
	good, _ := testSpec().Args()
	f.Add(strings.Join(good, "\x00"))                                                                     // a full, valid specification
	f.Add("command=true\x00workspace=/\x00scratch=/s\x00limits=1,2,3,4,5\x00seccomp=\x00seccomp_sha256=") // empty program and hash
	f.Add("command=a=b\x00command=c")                                                                     // a key twice, = in the value
	f.Add("inject=:\x00inject=x:-1")                                                                      // empty step, negative errno
	f.Add("limits=9999999999999999999999,0,0,0,0")                                                        // overflowing integer
	f.Fuzz(func(t *testing.T, joined string) {
		s, err := ParseArgs(strings.Split(joined, "\x00"))
		if err != nil {
			return
		}
		args, err := s.Args()
		if err != nil {
			t.Fatalf("accepted spec does not encode: %v", err)
		}
		again, err := ParseArgs(args)
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, s, again)
		}
	})
}

// FuzzParseStatus: whatever the line, ParseStatus does not panic, and a
// record it accepts marshals to a line that parses to the same record.
func FuzzParseStatus(f *testing.F) {
	f.Add(string(testStatusApplied().Marshal()))                                         // a full applied record
	f.Add(`error step="mounts" errno=1 message="a \"b\"" fix=""`)                        // escaped quotes
	f.Add(`error step="x" errno=0 message="\xff" fix="\u00e9"`)                          // escapes that are not UTF-8
	f.Add(`applied rlimits=1,2,3,4,5 namespaces="a,,b" uid=-1 pid_max=0 landlock_abi=0`) // missing fields
	f.Fuzz(func(t *testing.T, line string) {
		st, err := ParseStatus([]byte(line))
		if err != nil {
			return
		}
		again, err := ParseStatus(st.Marshal())
		if err != nil || !reflect.DeepEqual(again, st) {
			t.Fatalf("round trip of %q: %v\n%+v %+v\n%+v %+v", line, err, st.Applied, st.Error, again.Applied, again.Error)
		}
	})
}

func testStatusApplied() Status {
	return Status{Applied: &Applied{LandlockABI: 7, SeccompSHA256: "ab", NoNewPrivs: true, Namespaces: []string{"mount", "pid"},
		RLimits: RLimits{CPUSecs: 30, ASMiB: 512, NoFile: 64, NProc: 512, FSizeMiB: 256}, Exec: ExecArgv}}
}

// framedSpec is testSpec encoded and framed.
func framedSpec(t *testing.T) []byte {
	t.Helper()
	spec, err := testSpec().Encode()
	if err != nil {
		t.Fatal(err)
	}
	framed, err := Frame(spec)
	if err != nil {
		t.Fatal(err)
	}
	return framed
}

// TestFrameRoundTrip: a framed specification reads back whole, and the
// bytes after it (the parent's Start) stay in the pipe for the launcher's
// later read.
func TestFrameRoundTrip(t *testing.T) {
	framed := framedSpec(t)
	r := bytes.NewReader(append(framed, Start))
	got, err := ReadFrame(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, testSpec()) {
		t.Fatalf("got %+v; want %+v", got, testSpec())
	}
	if b, err := r.ReadByte(); err != nil || b != Start {
		t.Fatalf("after the frame: %q, %v; want the start byte", b, err)
	}
}

// TestReadFrameIntoBuffer: the specification read into a caller's buffer is the
// same as one read into memory of its own, keeps nothing of the buffer
// (which the launcher reuses for its reads after it), and one longer than
// the buffer is read whole all the same.
func TestReadFrameIntoBuffer(t *testing.T) {
	framed := framedSpec(t)
	for _, size := range []int{len(framed), len(framed) - 5, 8, 0} {
		buf := make([]byte, size)
		got, err := ReadFrame(bytes.NewReader(framed), buf)
		if err != nil {
			t.Fatalf("buffer of %d bytes: %v", size, err)
		}
		payload := framed[4:]
		switch {
		case size >= len(payload) && !bytes.Equal(buf[:len(payload)], payload):
			t.Fatalf("buffer of %d bytes: the %d-byte specification was not read into it", size, len(payload))
		case size < len(payload) && !bytes.Equal(buf, make([]byte, size)):
			t.Fatalf("buffer of %d bytes: written, though the %d-byte specification does not fit", size, len(payload))
		}
		for i := range buf {
			buf[i] = 'X'
		}
		if !reflect.DeepEqual(got, testSpec()) {
			t.Fatalf("buffer of %d bytes, then overwritten: got %+v; want %+v", size, got, testSpec())
		}
	}
}

// TestReadFrameRejects: a launcher given no specification, an empty one,
// one longer than the bound or one cut short takes none, so it never
// confines (or runs) anything from a partial one.
func TestReadFrameRejects(t *testing.T) {
	framed := framedSpec(t)
	cases := map[string][]byte{
		"nothing":   nil,
		"short hdr": {0, 0},
		"empty":     {0, 0, 0, 0},
		"too large": {0xff, 0, 0, 0},
		"truncated": framed[:len(framed)-1],
	}
	for name, b := range cases {
		if _, err := ReadFrame(bytes.NewReader(b), nil); err == nil {
			t.Errorf("%s: read a specification from %q", name, b)
		}
	}
	if _, err := Frame(nil); err == nil {
		t.Error("Frame framed an empty specification")
	}
	if _, err := Frame(make([]byte, maxSpecBytes+1)); err == nil {
		t.Error("Frame framed a specification over the bound")
	}
}
