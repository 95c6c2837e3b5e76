package main

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox/guestproto"
)

// guestBin is the real guest binary, built once by TestMain the way the
// provisioning script builds it (static, no cgo). The tests drive it as a
// process against files standing in for /dev/vdb and /dev/ttyS0.
var guestBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ironvise-guest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The command runs as nobody and re-executes the binary: the
	// directory must be searchable by everyone.
	_ = os.Chmod(dir, 0o755)
	guestBin = filepath.Join(dir, "ironvise-guest")
	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the guest tests build the guest and need the go tool in PATH:", err)
		os.Exit(1)
	}
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", guestBin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the guest: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const nonce = "00112233445566778899aabbccddeeff"

// world returns a directory everyone may use (the command runs as nobody).
func world(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// runGuest writes img as the intent image, runs the guest and returns what
// it wrote to its console.
func runGuest(t *testing.T, img []byte) []byte {
	t.Helper()
	dir := world(t)
	intent, console := filepath.Join(dir, "vdb.img"), filepath.Join(dir, "ttyS0")
	if err := os.WriteFile(intent, img, 0o600); err != nil {
		t.Fatal(err)
	}
	// The console exists, as a device node would; only root may write it.
	if err := os.WriteFile(console, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(guestBin, "-intent", intent, "-console", console, "-workdir", dir, "-scratch", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("guest: %v %s", err, out)
	}
	b, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func image(t *testing.T, command string, run guestproto.Run) []byte {
	t.Helper()
	if run.Nonce == "" {
		run.Nonce = nonce
	}
	img, err := guestproto.EncodeIntent(command, run)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func result(t *testing.T, console []byte) *guestproto.Result {
	t.Helper()
	r, err := guestproto.ParseFrame(console, nonce)
	if err != nil {
		t.Fatalf("parse the console: %v\n%s", err, console)
	}
	return r
}

func TestGuestIsStaticAndSmall(t *testing.T) {
	f, err := elf.Open(guestBin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the guest has an ELF interpreter: it is not static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("the guest links %v", libs)
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "net/http" || dep == "database/sql" || strings.Contains(dep, "sqlite") || strings.Contains(dep, "pgx") || dep == "runtime/cgo" {
			t.Errorf("the guest imports %s (ARCHITECTURE.md forbids it)", dep)
		}
	}
}

func TestGuestRunsAPaddedIntent(t *testing.T) {
	cmd := `echo out; echo err >&2; printf 'uid=%s\n' "$(id -u)"; grep NoNewPrivs /proc/self/status; ulimit -n; ulimit -t; printf 'home=%s\n' "$HOME"; exit 3`
	img := image(t, cmd, guestproto.Run{TimeoutSecs: 20, Limits: guestproto.Limits{CPUSecs: 30, NoFile: 64, NProc: 512}, Env: []string{"LANG=C.UTF-8", "TZ=UTC"}})
	if len(img)%guestproto.SectorSize != 0 {
		t.Fatalf("image of %d bytes", len(img))
	}
	r := result(t, runGuest(t, img))
	if r.Status != guestproto.StatusOK || r.ExitCode == nil || *r.ExitCode != 3 || r.Signal != "" {
		t.Fatalf("result %+v", r)
	}
	want := "out\n"
	wantUID := os.Geteuid()
	if wantUID == 0 {
		wantUID = nobody
	}
	want += fmt.Sprintf("uid=%d\nNoNewPrivs:\t1\n64\n30\n", wantUID)
	if !strings.HasPrefix(string(r.Stdout), want) || !strings.Contains(string(r.Stdout), "home=/") || string(r.Stderr) != "err\n" {
		t.Fatalf("stdout %q stderr %q; want stdout starting %q", r.Stdout, r.Stderr, want)
	}
	if r.UID == nil || *r.UID != wantUID || !r.NoNewPrivs || r.StdoutTotal != int64(len(r.Stdout)) {
		t.Fatalf("record %+v", r)
	}
}

func TestGuestRunsAnUnpaddedIntent(t *testing.T) {
	img := []byte(`{"action":"run_command","params":{"command":"echo unpadded"},"justification":"test","ironvise":{"nonce":"` + nonce + `","timeout_secs":10}}`)
	r := result(t, runGuest(t, img))
	if r.Status != guestproto.StatusOK || string(r.Stdout) != "unpadded\n" || *r.ExitCode != 0 {
		t.Fatalf("result %+v", r)
	}
}

func TestGuestRejectsWhatIsNotARunCommand(t *testing.T) {
	cases := []struct {
		name, img, status, reason string
		keyed                     bool
	}{
		{"not JSON", "echo hello\n\x00\x00", guestproto.StatusError, "not JSON", false},
		{"empty image", strings.Repeat("\x00", 512), guestproto.StatusError, "empty", false},
		{"no nonce", `{"action":"run_command","params":{"command":"id"}}`, guestproto.StatusError, "no run nonce", false},
		{"unsupported action", `{"action":"read_file","params":{"path":"/etc/shadow"},"ironvise":{"nonce":"` + nonce + `"}}`, guestproto.StatusUnsupported, `unsupported action: "read_file"`, true},
		{"http_get", `{"action":"http_get","params":{"url":"http://x"},"ironvise":{"nonce":"` + nonce + `"}}`, guestproto.StatusUnsupported, "unsupported", true},
		{"empty command", `{"action":"run_command","params":{"command":""},"ironvise":{"nonce":"` + nonce + `"}}`, guestproto.StatusError, "params.command is empty", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := runGuest(t, []byte(tc.img))
			r, err := guestproto.ParseFrame(out, nonce)
			if tc.keyed && err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !tc.keyed && !errors.Is(err, guestproto.ErrNoFrame) {
				t.Fatalf("an unkeyed report must not pass for the run's frame: %v", err)
			}
			if r == nil || r.Status != tc.status || !strings.Contains(r.Reason, tc.reason) || r.ExitCode != nil {
				t.Fatalf("got %+v; want %s with %q", r, tc.status, tc.reason)
			}
		})
	}
}

func TestGuestExitCodesAndSignals(t *testing.T) {
	cases := []struct {
		command string
		code    int
		signal  string
	}{
		{"true", 0, ""},
		{"false", 1, ""},
		{"exit 42", 42, ""},
		{"exit 255", 255, ""},
		{"no-such-command-xyz", 127, ""},
		{"kill -KILL $$", -1, "SIGKILL"},
		{"kill -TERM $$", -1, "SIGTERM"},
	}
	for _, tc := range cases {
		t.Run(tc.command, func(t *testing.T) {
			r := result(t, runGuest(t, image(t, tc.command, guestproto.Run{TimeoutSecs: 10})))
			switch {
			case r.Status != guestproto.StatusOK:
				t.Fatalf("status %s %s", r.Status, r.Reason)
			case tc.signal != "" && (r.Signal != tc.signal || r.ExitCode != nil):
				t.Fatalf("got signal %q exit %v; want %s", r.Signal, r.ExitCode, tc.signal)
			case tc.signal == "" && (r.ExitCode == nil || *r.ExitCode != tc.code):
				t.Fatalf("got exit %v signal %q; want %d", r.ExitCode, r.Signal, tc.code)
			}
		})
	}
}

func TestGuestCapsHugeOutput(t *testing.T) {
	r := result(t, runGuest(t, image(t, "yes 0123456789 | head -c 5000000; head -c 200000 /dev/zero >&2; echo done >&2", guestproto.Run{TimeoutSecs: 30})))
	if r.Status != guestproto.StatusOK || *r.ExitCode != 0 {
		t.Fatalf("result %s %v", r.Status, r.ExitCode)
	}
	if len(r.Stdout) != guestproto.KeepBytes || r.StdoutTotal != 5000000 || len(r.Stderr) != guestproto.KeepBytes || r.StderrTotal != 200005 {
		t.Fatalf("kept %d of %d stdout, %d of %d stderr", len(r.Stdout), r.StdoutTotal, len(r.Stderr), r.StderrTotal)
	}
	if !bytes.HasPrefix(r.Stdout, []byte("0123456789\n0123456789\n")) {
		t.Fatalf("stdout starts %q", r.Stdout[:30])
	}
}

func TestGuestTimeoutKillsTheCommandAndItsChildren(t *testing.T) {
	marker := fmt.Sprintf("%d.%d", 300+os.Getpid()%100, time.Now().UnixNano()%1000000)
	start := time.Now()
	r := result(t, runGuest(t, image(t, "echo started; sleep "+marker+" & sleep "+marker+"; echo never", guestproto.Run{TimeoutSecs: 1})))
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the guest took %s", d)
	}
	if r.Status != guestproto.StatusTimeout || r.Signal != "SIGKILL" || r.ExitCode != nil || string(r.Stdout) != "started\n" ||
		!strings.Contains(r.Reason, "guest-side timeout of 1 s") {
		t.Fatalf("result %+v", r)
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Fatalf("processes survived the timeout: %v", pids)
	}
}

func TestGuestKillsWhatTheCommandLeftBehind(t *testing.T) {
	marker := fmt.Sprintf("%d.%d", 400+os.Getpid()%100, time.Now().UnixNano()%1000000)
	r := result(t, runGuest(t, image(t, "sleep "+marker+" >/dev/null 2>&1 & echo left", guestproto.Run{TimeoutSecs: 10})))
	if r.Status != guestproto.StatusOK || string(r.Stdout) != "left\n" {
		t.Fatalf("result %+v", r)
	}
	time.Sleep(100 * time.Millisecond)
	if pids := processesWith(marker); len(pids) > 0 {
		t.Fatalf("a background process outlived the command: %v", pids)
	}
}

func TestGuestLimits(t *testing.T) {
	r := result(t, runGuest(t, image(t, "while :; do :; done", guestproto.Run{TimeoutSecs: 30, Limits: guestproto.Limits{CPUSecs: 1}})))
	if r.Status != guestproto.StatusOK || r.Signal == "" {
		t.Fatalf("busy loop under a 1 s CPU limit: %+v", r)
	}
	r = result(t, runGuest(t, image(t, `awk 'BEGIN { s = "x"; for (;;) s = s s }'`, guestproto.Run{TimeoutSecs: 30, Limits: guestproto.Limits{ASMiB: 64}})))
	if r.Status != guestproto.StatusOK || (r.ExitCode != nil && *r.ExitCode == 0) {
		t.Fatalf("memory hog under a 64 MiB cap: %+v", r)
	}
}

// processesWith lists the pids whose command line contains marker.
func processesWith(marker string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestGuestAsPID1 boots the guest as PID 1 of fresh PID and mount
// namespaces — what it is in the VM: it mounts /dev, /proc, /sys and /tmp
// (privately), runs the command in /tmp as nobody, kills every other
// process of the namespace (setsid'd ones too), reaps the orphans and
// "reboots", which ends the namespace. The intent and console are given
// as flags, in a directory outside /tmp, which the guest covers.
func TestGuestAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create PID and mount namespaces")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	dir, err := os.MkdirTemp("/var/tmp", "ironvise-guest-pid1-")
	if err != nil {
		t.Skip("no /var/tmp: ", err)
	}
	defer os.RemoveAll(dir)
	intent, console := filepath.Join(dir, "vdb.img"), filepath.Join(dir, "ttyS0")
	marker := fmt.Sprintf("%d.%d", 500+os.Getpid()%100, time.Now().UnixNano()%1000000)
	cmd := `echo "uid=$(id -u)"; pwd; echo "home=$HOME"; touch /tmp/w && echo tmp-writable; ` +
		`setsid sleep ` + marker + ` & (sleep 0.1; exit 0) & p=$!; wait $p; echo done`
	if err := os.WriteFile(intent, image(t, cmd, guestproto.Run{TimeoutSecs: 10}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(console, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(unshare, "--pid", "--fork", "--mount", "--propagation", "private", guestBin,
		"-intent", intent, "-console", console)
	out, err := c.CombinedOutput()
	t.Logf("unshare: %v %s", err, out)
	b, rerr := os.ReadFile(console)
	if rerr != nil {
		t.Fatal(rerr)
	}
	r := result(t, b)
	if r.Status != guestproto.StatusOK || *r.ExitCode != 0 {
		t.Fatalf("result %+v", r)
	}
	got := string(r.Stdout)
	// The command starts in /workspace, or in "/" where there is none.
	wd := "/workspace"
	if _, err := os.Stat(wd); err != nil {
		wd = "/"
	}
	if got != "uid=65534\n"+wd+"\nhome=/tmp\ntmp-writable\ndone\n" {
		t.Fatalf("stdout %q", got)
	}
	// The setsid'd sleep holds the output pipe open and is outside the
	// command's process group: only init's kill of every process lets
	// the output end at once instead of after the drain grace period.
	if r.DurationMS >= drainGrace.Milliseconds() {
		t.Fatalf("the output ended after %d ms: a process outside the group survived the command", r.DurationMS)
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Fatalf("a setsid'd process outlived the guest: %v", pids)
	}
}

// TestGuestRefusesAmbiguousIntents: an image a lenient decoder would read
// as a run_command — the last of two actions winning, member names in
// another case, a second command, invalid UTF-8, an unknown member — is
// refused: the command never runs, and the report carries no run nonce
// (the image cannot be trusted to have come from the host).
func TestGuestRefusesAmbiguousIntents(t *testing.T) {
	dir := world(t)
	marker := filepath.Join(dir, "ran")
	touch := "touch " + marker
	n := `"ironvise":{"nonce":"` + nonce + `","timeout_secs":10}`
	cases := []struct{ name, img, reason string }{
		{"duplicate action, the last run_command", `{"action":"read_file","params":{"command":"` + touch + `"},` + n + `,"action":"run_command"}`, "duplicate key"},
		{"duplicate command", `{"action":"run_command","params":{"command":"true","command":"` + touch + `"},` + n + `}`, "duplicate key"},
		{"escaped duplicate command", `{"action":"run_command","params":{"command":"true","comm\u0061nd":"` + touch + `"},` + n + `}`, "duplicate key"},
		{"duplicate nonce", `{"action":"run_command","params":{"command":"` + touch + `"},"ironvise":{"nonce":"` + nonce + `","nonce":"` + strings.Repeat("f", 32) + `"}}`, "duplicate key"},
		{"upper-case keys", `{"Action":"run_command","Params":{"Command":"` + touch + `"},` + n + `}`, `unknown member "Action"`},
		{"upper-case command", `{"action":"run_command","params":{"COMMAND":"` + touch + `"},` + n + `}`, `unknown member "COMMAND"`},
		{"upper-case run member", `{"action":"run_command","params":{"command":"` + touch + `"},"ironvise":{"Nonce":"` + nonce + `"}}`, `unknown member "Nonce"`},
		{"unknown member", `{"action":"run_command","params":{"command":"` + touch + `"},` + n + `,"uid":0}`, `unknown member "uid"`},
		{"unknown run member", `{"action":"run_command","params":{"command":"` + touch + `"},"ironvise":{"nonce":"` + nonce + `","uid":0}}`, `unknown member "uid"`},
		{"invalid UTF-8", "{\"action\":\"run_command\",\"params\":{\"command\":\"" + touch + " \xff\"}," + n + "}", "invalid UTF-8"},
		{"a float limit", `{"action":"run_command","params":{"command":"` + touch + `"},"ironvise":{"nonce":"` + nonce + `","limits":{"nproc":1.5}}}`, "not an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := runGuest(t, []byte(tc.img))
			r, err := guestproto.ParseFrame(out, nonce)
			if !errors.Is(err, guestproto.ErrNoFrame) {
				t.Fatalf("the guest reported under the run's nonce (%v): %+v", err, r)
			}
			if r == nil || r.Status != guestproto.StatusError || !strings.Contains(r.Reason, tc.reason) || r.ExitCode != nil {
				t.Fatalf("got %+v; want an error report containing %q", r, tc.reason)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// TestGuestPassesOnlyAllowlistedEnv: of the environment in the image only
// the sandbox allowlist reaches the command; PATH, HOME and the rest are
// the guest's own, whatever the image says.
func TestGuestPassesOnlyAllowlistedEnv(t *testing.T) {
	env := []string{"OPENAI_API_KEY=sk-live-123", "DATABASE_URL=postgres://u:pw@db/x", "ECTO_KEY_PASSPHRASE=pp",
		"LD_PRELOAD=/tmp/x.so", "LD_LIBRARY_PATH=/tmp", "PATH=/tmp/evil", "HOME=/root", "BASH_ENV=/tmp/x", "ENV=/tmp/x",
		"PYTHONPATH=/tmp", "FOO=bar", "TZ=UTC", "LC_ALL=C", "TERM=dumb", "LANG=en_US.UTF-8", "TZ=Europe/Paris"}
	r := result(t, runGuest(t, image(t, "env | sort", guestproto.Run{TimeoutSecs: 10, Env: env})))
	if r.Status != guestproto.StatusOK || r.ExitCode == nil || *r.ExitCode != 0 {
		t.Fatalf("result %+v", r)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(r.Stdout)), "\n") {
		if name, _, _ := strings.Cut(l, "="); name != "PWD" && name != "SHLVL" && name != "_" && name != "OLDPWD" {
			got = append(got, l)
		}
	}
	// The guest's own five, and the allowlisted four the image carried
	// (the first TZ wins, as on the host).
	allowed := map[string]bool{"HOME": true, "LANG": true, "LC_ALL": true, "PATH": true, "SHELL": true, "TERM": true, "TMPDIR": true, "TZ": true}
	for _, l := range got {
		name, value, _ := strings.Cut(l, "=")
		if !allowed[name] {
			t.Errorf("%s reached the command", l)
		}
		switch {
		case name == "PATH" && value != commandPath, name == "HOME" && value == "/root", name == "TZ" && value != "UTC":
			t.Errorf("%s: the image overrode the guest's value", l)
		}
	}
	if len(got) != len(allowed) {
		t.Errorf("environment %q; want exactly %d variables", got, len(allowed))
	}
}
