package execclient

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/localsock/wire"
)

// TestImportGraph keeps the thin path's imports to packages that Go
// initialises at the very start (see the package documentation): none of
// the heavy ones, and none of the standard packages that would make it
// wait for them.
func TestImportGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "github.com/ironvise/ironvise/internal/execclient/early")
	cmd.Env = append(os.Environ(), "GOOS=linux")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	heavy := []string{
		"net/http", "github.com/prometheus/", "google.golang.org/protobuf/", "modernc.org/", "github.com/spf13/cobra",
		"database/sql", "github.com/ironvise/ironvise/internal/ledger", "github.com/ironvise/ironvise/internal/scan",
		"github.com/ironvise/ironvise/internal/redact", "github.com/ironvise/ironvise/internal/server",
		"github.com/ironvise/ironvise/internal/config", "github.com/ironvise/ironvise/internal/cli",
	}
	// Initialised late: a dependency on any of them lets the heavy
	// packages' initialisers run first (reflect is where protobuf's and
	// database/sql's become ready; strings and path/filepath sort after
	// them).
	late := []string{"reflect", "fmt", "strings", "path/filepath", "net", "encoding/json", "encoding/binary", "bufio"}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		for _, h := range heavy {
			if d == h || strings.HasSuffix(h, "/") && strings.HasPrefix(d, h) {
				t.Errorf("the thin path imports %s", d)
			}
		}
		if slices.Contains(late, d) {
			t.Errorf("the thin path imports %s, which Go initialises after the heavy packages", d)
		}
	}
	if !slices.Contains(deps, "github.com/ironvise/ironvise/internal/execclient") {
		t.Fatalf("go list printed no execclient: %s", out)
	}
}

// configVars are the variables config.Load reads: with nothing set, and
// with every variable the thin path knows set (a variable read only when
// another is set would show there).
func configVars(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	record := func(env map[string]string) {
		config.Load(func(name string) (string, bool) {
			seen[name] = true
			v, ok := env[name]
			return v, ok
		})
	}
	record(nil)
	all := map[string]string{}
	for _, n := range slices.Concat(dataDirVars, hostVars, checkedVars) {
		all[n] = "x"
	}
	record(all)
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func TestVariableListsAreConfigs(t *testing.T) {
	known := slices.Concat(dataDirVars, hostVars, checkedVars)
	read := configVars(t)
	for _, n := range read {
		if !slices.Contains(known, n) {
			t.Errorf("config reads %s, which the thin path does not know: add it to checkedVars (or, if config takes any value of it and it does not move the data directory, hostVars)", n)
		}
	}
	for _, n := range known {
		if !slices.Contains(read, n) {
			t.Errorf("the thin path lists %s, which config no longer reads", n)
		}
	}
	seen := map[string]bool{}
	for _, n := range known {
		if seen[n] {
			t.Errorf("%s is listed twice", n)
		}
		seen[n] = true
	}
}

// odd are values a variable might hold, for config to take or refuse.
var odd = []string{"", " ", "x", "relative/dir", "/abs", "/abs/../dir/", " /abs", "/abs\t", "/abs\u00a0", "\u2003/abs",
	"/a:/b", "::", "~", "\x00", "\xff", "1", "-1", "true", "99999999999999999999", "http://x"}

// TestHostVarsAreNeverInvalid: config takes any value of hostVars, and
// none moves the data directory.
func TestHostVarsAreNeverInvalid(t *testing.T) {
	for _, n := range hostVars {
		for _, v := range odd {
			for _, base := range []map[string]string{{"HOME": "/home/u"}, {"ECTO_DATA_DIR": "/d"}, {"XDG_DATA_HOME": "/x", "HOME": "/h"}} {
				want, err := config.Load(config.MapLookup(base))
				if err != nil {
					t.Fatal(err)
				}
				env := map[string]string{n: v}
				for k, bv := range base {
					env[k] = bv
				}
				got, err := config.Load(config.MapLookup(env))
				if err != nil || got.DataDir != want.DataDir {
					t.Errorf("%s=%q: config %v, data directory %q (want %q)", n, v, err, got.DataDir, want.DataDir)
				}
			}
		}
	}
}

func noDotEnv(string) (os.FileInfo, error) { return nil, fs.ErrNotExist }

// TestDataDirIsConfigs compares DataDir with config.Load over every
// combination of the data directory variables' odd values: where the thin
// path resolves one, config resolves the same and finds nothing wrong.
func TestDataDirIsConfigs(t *testing.T) {
	vals := append([]string{"<unset>"}, odd...)
	resolved := 0
	for _, d := range vals {
		for _, x := range vals {
			for _, h := range vals {
				env := map[string]string{}
				for k, v := range map[string]string{"ECTO_DATA_DIR": d, "XDG_DATA_HOME": x, "HOME": h} {
					if v != "<unset>" {
						env[k] = v
					}
				}
				dir, ok := DataDir(config.MapLookup(env), noDotEnv)
				if !ok {
					continue
				}
				resolved++
				cfg, err := config.Load(config.MapLookup(env))
				if err != nil || cfg.DataDir != dir {
					t.Errorf("%q: thin path %q; config %v %v", env, dir, cfg, err)
				}
			}
		}
	}
	if resolved < 100 {
		t.Fatalf("only %d combinations resolved", resolved)
	}
	if dir, ok := DataDir(config.MapLookup(map[string]string{"HOME": "/home/u/"}), noDotEnv); !ok || dir != "/home/u/.local/share/ironvise" {
		t.Fatalf("HOME: %q %v", dir, ok)
	}
}

func TestDataDirFallsThrough(t *testing.T) {
	base := map[string]string{"ECTO_DATA_DIR": "/d"}
	if _, ok := DataDir(config.MapLookup(base), noDotEnv); !ok {
		t.Fatal("a plain ECTO_DATA_DIR was not resolved")
	}
	for _, n := range checkedVars {
		env := map[string]string{"ECTO_DATA_DIR": "/d", n: ""}
		if _, ok := DataDir(config.MapLookup(env), noDotEnv); ok {
			t.Errorf("%s set (empty): the thin path went on", n)
		}
	}
	dotEnvExists := func(string) (os.FileInfo, error) { return nil, nil }
	dotEnvUnreadable := func(string) (os.FileInfo, error) { return nil, fs.ErrPermission }
	for _, stat := range []func(string) (os.FileInfo, error){dotEnvExists, dotEnvUnreadable} {
		if _, ok := DataDir(config.MapLookup(base), stat); ok {
			t.Error("a .env that may exist did not leave the command line to the full one")
		}
	}
}

// shellQuoteReference is the quoting exec always had, with strings.
func shellQuoteReference(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func FuzzJoinCommand(f *testing.F) {
	for _, s := range []string{"ls", "", "a b", "it's", "x\xff", "é", "a=b,c:d", "$HOME", "-la", "'"} {
		f.Add(s, "-la")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got := JoinCommand([]string{a}); got != a {
			t.Fatalf("one argument %q became %q", a, got)
		}
		want := shellQuoteReference(a) + " " + shellQuoteReference(b)
		if got := JoinCommand([]string{a, b}); got != want {
			t.Fatalf("JoinCommand(%q, %q) = %q; want %q", a, b, got, want)
		}
	})
}

func TestNewRequest(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	t.Chdir(dir)
	os.WriteFile("local.yaml", []byte("x"), 0o600)
	env := map[string]string{"LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-x", "TZ": "UTC"}
	for _, c := range []struct {
		ws, pol, wantWS, wantPol string
	}{
		{"", "", dir, ""},
		{"sub/../w", "./local.yaml", filepath.Join(dir, "w"), dir + "/./local.yaml"},
		{"/abs//x/", "strict", "/abs/x", "strict"},
		{".", "./missing.yaml", dir, dir + "/./missing.yaml"},
		{".", "sub/team", dir, filepath.Join(dir, "sub/team")},
	} {
		o := Options{Command: "ls", Session: "s", Workspace: c.ws, Policy: c.pol, PolicySHA256: "ab", Justification: "why"}
		req, err := NewRequest(o, config.MapLookup(env))
		if err != nil {
			t.Fatal(err)
		}
		want := wire.Request{Command: "ls", Session: "s", Workspace: c.wantWS, Policy: c.wantPol, PolicySHA256: "ab", Justification: "why", Env: []string{"LANG=C.UTF-8", "TZ=UTC"}}
		if req.Command != want.Command || req.Session != want.Session || req.Workspace != want.Workspace || req.Policy != want.Policy ||
			req.PolicySHA256 != want.PolicySHA256 || req.Justification != want.Justification || !slices.Equal(req.Env, want.Env) {
			t.Errorf("NewRequest(%+v) = %+v; want %+v", o, req, want)
		}
	}
}

// TestNewRequestLocalPolicyName: a bare --policy name that names a file in
// the working directory (as itself or with .toml) is not sent to the
// daemon, which cannot see this directory nor tell whether the name is
// ambiguous; the command runs in-process instead.
func TestNewRequestLocalPolicyName(t *testing.T) {
	t.Chdir(t.TempDir())
	os.WriteFile("local.yaml", []byte("x"), 0o600)
	os.WriteFile("team.toml", []byte("x"), 0o600)
	os.Mkdir("dir", 0o700)
	for _, pol := range []string{"local.yaml", "team", "team.toml"} {
		if _, err := NewRequest(Options{Command: "ls", Policy: pol}, config.MapLookup(nil)); !errors.Is(err, ErrLocalPolicy) {
			t.Errorf("--policy %s: %v; want ErrLocalPolicy", pol, err)
		}
	}
	for _, pol := range []string{"strict", "dir"} {
		if req, err := NewRequest(Options{Command: "ls", Policy: pol}, config.MapLookup(nil)); err != nil || req.Policy != pol {
			t.Errorf("--policy %s: %+v, %v; want the name sent as is", pol, req, err)
		}
	}
}

func TestAbortedIfInterrupted(t *testing.T) {
	ctxErr := context.Canceled
	usage := errors.New("ledger: busy")
	for _, c := range []struct {
		ctxErr   error
		code     int
		err      error
		wantCode int
		wantMsg  string
	}{
		{nil, ExitUsage, usage, ExitUsage, "ledger: busy"},
		{ctxErr, 3, nil, 3, ""},
		{ctxErr, ExitUsage, usage, ExitAborted, "interrupted before the command ran (context canceled); nothing was run: ledger: busy"},
		{ctxErr, ExitUsage, nil, ExitAborted, "interrupted before the command ran (context canceled); nothing was run: exit 2"},
	} {
		code, err := AbortedIfInterrupted(c.ctxErr, c.code, c.err)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if code != c.wantCode || msg != c.wantMsg {
			t.Errorf("AbortedIfInterrupted(%v, %d, %v) = %d %q; want %d %q", c.ctxErr, c.code, c.err, code, msg, c.wantCode, c.wantMsg)
		}
		if c.err != nil && code != c.code && !errors.Is(err, c.err) {
			t.Error("the usage error is not wrapped")
		}
	}
}

// TestDialNothingListens: no socket, a stale one, an ended context — no
// daemon, and nothing is left open.
func TestDialNothingListens(t *testing.T) {
	if !daemonPath {
		t.Skip("no daemon path on this platform")
	}
	data := t.TempDir()
	if _, err := Dial(context.Background(), data); err == nil {
		t.Fatal("Dial without a socket succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Dial(ctx, data); err == nil {
		t.Fatal("Dial with an ended context succeeded")
	}
	if _, err := Dial(context.Background(), "/"+strings.Repeat("x", 200)); err == nil {
		t.Fatal("Dial to a path too long for a socket succeeded")
	}
}

// TestNewRequestPolicyPathAsOpened: the daemon opens the --policy path the
// client sends, and an in-process exec opens the path as typed; both must
// name the same file. Cleaning the path as text does not: through a
// symbolic link, dir/.. is the link target's parent, and a trailing slash
// makes a file's path fail to open.
func TestNewRequestPolicyPathAsOpened(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	t.Chdir(dir)
	os.MkdirAll("real/sub", 0o700)
	os.Symlink("real/sub", "link")
	os.WriteFile("p.toml", []byte("working directory"), 0o600)
	os.WriteFile("real/p.toml", []byte("beside the link's target"), 0o600)
	for _, pol := range []string{"link/../p.toml", dir + "/link/../p.toml", "./p.toml/", dir + "/p.toml/."} {
		req, err := NewRequest(Options{Command: "ls", Policy: pol}, config.MapLookup(nil))
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := os.ReadFile(pol)
		got, gotErr := os.ReadFile(req.Policy)
		if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("--policy %s sent as %s, which reads %q (%v); the path as typed reads %q (%v)", pol, req.Policy, got, gotErr, want, wantErr)
		}
	}
}

// TestNewRequestReadsTheSameOnTheWire: the daemon reads the request with
// encoding/json, which takes invalid UTF-8 as U+FFFD; a workspace, policy
// path or variable that is not UTF-8 would name another directory, file or
// value there. Such a request is either refused (the command runs
// in-process, which reads them as they are) or read as sent.
func TestNewRequestReadsTheSameOnTheWire(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	t.Chdir(dir)
	os.Mkdir("caf\xe9", 0o700)
	for _, c := range []struct {
		o   Options
		env map[string]string
	}{
		{Options{Command: "ls", Workspace: "caf\xe9"}, nil},
		{Options{Command: "ls", Policy: "./caf\xe9.toml"}, nil},
		{Options{Command: "ls"}, map[string]string{"LANG": "fr_FR.ISO-8859-1", "TZ": "Europe/Z\xfcrich"}},
		{Options{Command: "ls", Workspace: "café", Policy: "./café.toml"}, map[string]string{"TZ": "Europe/Zürich"}},
	} {
		req, err := NewRequest(c.o, config.MapLookup(c.env))
		if errors.Is(err, ErrNotUTF8) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var got wire.Request
		if err := json.Unmarshal(wire.AppendRequest(nil, req), &got); err != nil {
			t.Fatal(err)
		}
		if got.Workspace != req.Workspace || got.Policy != req.Policy || !slices.Equal(got.Env, req.Env) {
			t.Errorf("sent %q %q %q; the daemon reads %q %q %q", req.Workspace, req.Policy, req.Env, got.Workspace, got.Policy, got.Env)
		}
	}
}
