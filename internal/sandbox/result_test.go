package sandbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func intp(v int) *int { return &v }

func TestResultJSONFieldNames(t *testing.T) {
	abi := 7
	r := Result{Tier: TierNativeLinux, Status: StatusOK, ExitCode: intp(0), Duration: 1500 * time.Millisecond,
		Stdout: "hi\n", Enforced: &Enforced{LandlockABI: &abi, Capabilities: "none", Network: "none",
			RLimits: &RLimits{CPUSecs: 30, ASMiB: 512, NoFile: 64, NProc: 512, FSizeMiB: 256}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tier":"native-linux","status":"ok","reason":null,"exit_code":0,"signal":null,"duration_ms":1500,"stdout":"hi\n","stderr":"","stdout_truncated":false,"stderr_truncated":false,"enforced":{"landlock_abi":7,"rlimits":{"cpu_secs":30,"as_mib":512,"nofile":64,"nproc":512,"fsize_mib":256},"capabilities":"none","network":"none"}}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Duration != r.Duration || *back.ExitCode != 0 || back.Reason != "" || back.Enforced.RLimits.NProc != 512 {
		t.Fatalf("round trip: %+v", back)
	}
	a := Aborted(TierDocker, "line one\nline two", 0)
	b, _ = json.Marshal(a)
	if !strings.Contains(string(b), `"reason":"line one line two"`) || !strings.Contains(string(b), `"exit_code":null`) || !strings.Contains(string(b), `"enforced":null`) {
		t.Fatalf("aborted: %s", b)
	}
	if strings.Contains(string(b), "exec_mode") {
		t.Fatalf("a command that never ran has an exec_mode: %s", b)
	}
}

func TestResultExecMode(t *testing.T) {
	for _, mode := range []string{ExecArgv, ExecShell} {
		b, err := json.Marshal(Result{Tier: TierNativeLinux, Status: StatusOK, ExitCode: intp(0), ExecMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(string(b), `"enforced":null,"exec_mode":"`+mode+`"}`) {
			t.Fatalf("exec_mode %s: %s", mode, b)
		}
		var back Result
		if err := json.Unmarshal(b, &back); err != nil || back.ExecMode != mode {
			t.Fatalf("round trip of %s: %+v %v", b, back, err)
		}
	}
	if r := Ran(TierDocker, 0, &Collector{}, &Collector{}); r.ExecMode != ExecShell {
		t.Fatalf("Ran: exec_mode %q, want shell", r.ExecMode)
	}
}

func TestObservation(t *testing.T) {
	cases := []struct {
		name string
		r    Result
		want string
	}{
		{"exit with both streams", Result{Status: StatusOK, ExitCode: intp(2), Stdout: "out\n", Stderr: "err\n"}, "[exit 2]\nout\n--- stderr ---\nerr\n"},
		{"stdout without newline", Result{Status: StatusOK, ExitCode: intp(0), Stdout: "out", Stderr: "err"}, "[exit 0]\nout\n--- stderr ---\nerr"},
		{"no stderr", Result{Status: StatusOK, ExitCode: intp(0), Stdout: "out\n"}, "[exit 0]\nout\n"},
		{"only stderr", Result{Status: StatusOK, ExitCode: intp(1), Stderr: "boom\n"}, "[exit 1]\n--- stderr ---\nboom\n"},
		{"signal", Result{Status: StatusOK, Signal: "SIGKILL"}, "[signal SIGKILL]\n"},
		{"timeout", Result{Status: StatusTimeout, Signal: "SIGKILL", Duration: 30*time.Second + 12*time.Millisecond, Stdout: "partial\n"}, "[timeout after 30 s]\npartial\n"},
		{"aborted", Aborted(TierNativeLinux, "landlock is not supported; fix: boot with lsm=landlock", 0), "[sandbox aborted: landlock is not supported; fix: boot with lsm=landlock]\n"},
		{"permissive", Result{Status: StatusPermissive, ExitCode: intp(0), Stdout: "x\n"}, "[exit 0]\nx\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Observation(); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestProcessExitCode(t *testing.T) {
	cases := []struct {
		r    Result
		want int
	}{
		{Result{Status: StatusOK, ExitCode: intp(3)}, 3},
		{Result{Status: StatusOK, Signal: "SIGSEGV"}, 139},
		{Result{Status: StatusTimeout, Signal: "SIGKILL"}, 137},
		{Result{Status: StatusOK, Signal: "SIGXCPU"}, 152},
		{Aborted(TierNativeLinux, "x", 0), 125},
		{Result{Status: StatusPermissive, ExitCode: intp(0)}, 0},
	}
	for _, tc := range cases {
		if got := tc.r.ProcessExitCode(); got != tc.want {
			t.Errorf("%s: got %d; want %d", tc.r.Headline(), got, tc.want)
		}
	}
}

func TestCapStream(t *testing.T) {
	ascii := strings.Repeat("a", StreamCap+10)
	euro := strings.Repeat("€", StreamCap/3+5) // 3-byte runes: 65536 is not a boundary
	cases := []struct {
		name      string
		in        string
		total     int64
		wantTrunc bool
		wantTail  string
		wantLen   int
	}{
		{"short", "hello", 5, false, "hello", 5},
		{"exactly the cap", ascii[:StreamCap], StreamCap, false, "a", StreamCap},
		{"ascii over", ascii, int64(len(ascii)), true, "a\n[truncated: 10 bytes omitted]", StreamCap + len("\n[truncated: 10 bytes omitted]")},
		{"collected less than total", "abc", 5000000, true, "abc\n[truncated: 4999997 bytes omitted]", 0},
		{"utf-8 boundary", euro, int64(len(euro)), true, "€\n[truncated: ", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, trunc := CapStream([]byte(tc.in), tc.total)
			if trunc != tc.wantTrunc || !strings.Contains(got, tc.wantTail) {
				t.Fatalf("got trunc=%v tail %q", trunc, got[max(0, len(got)-50):])
			}
			if tc.wantLen > 0 && len(got) != tc.wantLen {
				t.Fatalf("len %d; want %d", len(got), tc.wantLen)
			}
			body, _, _ := strings.Cut(got, "\n[truncated:")
			if !utf8.ValidString(body) {
				t.Fatal("a UTF-8 sequence was split")
			}
		})
	}
	// 65535 bytes of "a" then a 3-byte rune: keep 65535, omit 3.
	in := strings.Repeat("a", StreamCap-1) + "€"
	got, _ := CapStream([]byte(in), int64(len(in)))
	if !strings.HasSuffix(got, "a\n[truncated: 3 bytes omitted]") {
		t.Fatalf("tail %q", got[len(got)-40:])
	}
}

func FuzzCapStream(f *testing.F) {
	f.Add([]byte("plain"), int64(5))                                  // short, untouched
	f.Add([]byte(strings.Repeat("é", StreamCap)), int64(2*StreamCap)) // cut inside 2-byte runes
	f.Add([]byte{0xff, 0xfe, 0xe2, 0x82}, int64(1<<30))               // invalid bytes and a huge total
	f.Add([]byte(strings.Repeat("x", StreamCap+1)), int64(0))         // total smaller than the data
	f.Fuzz(func(t *testing.T, b []byte, total int64) {
		if total < 0 {
			total = -total
		}
		got, trunc := CapStream(b, total)
		body, _, cut := strings.Cut(got, "\n[truncated:")
		if !utf8.ValidString(body) {
			t.Fatal("the text is not valid UTF-8")
		}
		if len(body) > 256<<10 {
			t.Fatalf("kept %d bytes", len(body))
		}
		if trunc != cut && !strings.Contains(string(b), "\n[truncated:") {
			t.Fatalf("truncated=%v but marker present=%v", trunc, cut)
		}
		if int64(len(b)) > total && len(b) > StreamCap && !trunc {
			t.Fatal("a stream longer than the cap was not cut")
		}
	})
}

func TestCollectorKeepsOneMiBAndCountsAll(t *testing.T) {
	var c Collector
	chunk := make([]byte, 300000)
	for range 10 {
		if n, err := c.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v: a short write would stop the copy", n, err)
		}
	}
	got, trunc := c.Capped()
	if !trunc || !strings.HasSuffix(got, "[truncated: 2934464 bytes omitted]") || len(c.Bytes()) != CollectLimit {
		t.Fatalf("kept %d, tail %q", len(c.Bytes()), got[len(got)-40:])
	}
}

func TestCommandEnv(t *testing.T) {
	env := CommandEnv([]string{"OPENAI_API_KEY=sk", "LANG=de_DE.UTF-8", "LC_ALL=C", "LC_=x", "LD_PRELOAD=/x.so", "PATH=/evil", "TZ=UTC", "HOME=/root", "TERM=xterm", "lc_all=x", "LANG=second"},
		map[string]string{"PATH": DefaultPath, "HOME": "/s"})
	want := []string{"HOME=/s", "LANG=de_DE.UTF-8", "LC_ALL=C", "PATH=" + DefaultPath, "TERM=xterm", "TZ=UTC"}
	if strings.Join(env, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q\nwant %q", env, want)
	}
	if env := CommandEnv(nil, nil); len(env) != 1 || env[0] != "LANG=C.UTF-8" {
		t.Fatalf("default LANG: %q", env)
	}
}

func TestLimitsTightenNeverRaises(t *testing.T) {
	l := DefaultLimits().Tighten(Limits{CPUSecs: 5, MemMiB: 4096, NoFile: -1, NProc: 16})
	if l.CPUSecs != 5 || l.MemMiB != 512 || l.NoFile != 64 || l.NProc != 16 || l.FSizeMiB != DefaultFSizeMiB {
		t.Fatalf("%+v", l)
	}
	o := Options{Timeout: 10 * time.Second}
	if o.EffectiveTimeout(Request{Timeout: time.Hour}) != 10*time.Second || o.EffectiveTimeout(Request{Timeout: time.Second}) != time.Second {
		t.Fatal("a request raised the timeout")
	}
}
