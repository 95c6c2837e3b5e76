package tripwire

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/verdict"
)

// homeHost is a host in a temporary directory: IronVise's own home (me)
// holding its data directory and credential stores, a second user (alice)
// beside it, and a project directory inside me's home.
type homeHost struct {
	base, me, alice, project, dataDir string
	list                              secretpaths.List
}

// newHomeHost builds the host and its protected-path list the way
// secretpaths.Compute builds one for these homes: the deny list under each
// home, plus the data directory.
func newHomeHost(t testing.TB) homeHost {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := homeHost{base: base, me: filepath.Join(base, "home", "me"), alice: filepath.Join(base, "home", "alice")}
	h.project = filepath.Join(h.me, "project")
	h.dataDir = filepath.Join(h.me, ".local", "share", "ironvise")
	files := map[string]string{
		filepath.Join(h.me, ".ssh", "id_ed25519"):                "ME PRIVATE KEY",
		filepath.Join(h.me, ".aws", "credentials"):               "[default]",
		filepath.Join(h.me, ".netrc"):                            "machine x password y",
		filepath.Join(h.me, ".bashrc"):                           "alias ll='ls -l'",
		filepath.Join(h.me, "notes.txt"):                         "notes",
		filepath.Join(h.dataDir, "keys", "issuer.ed25519"):       "ISSUER KEY",
		filepath.Join(h.alice, ".ssh", "id_rsa"):                 "ALICE KEY",
		filepath.Join(h.project, "sub", "x.txt"):                 "x",
		filepath.Join(h.project, "README"):                       "readme",
		filepath.Join(h.me, ".config", "myapp", "token"):         "app token",
		filepath.Join(h.base, "srv", "secrets", "db.password"):   "db",
		filepath.Join(h.me, ".config", "google-chrome", "Local"): "cookies",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A link in the project that leads into ~/.ssh: its name is harmless,
	// its target is not.
	mustSymlink(t, "../.ssh", filepath.Join(h.project, "keys"))
	h.list.Homes = []string{h.alice, h.me}
	h.list.Paths = []string{h.dataDir}
	for _, home := range h.list.Homes {
		for _, rel := range secretpaths.DenyList("linux") {
			h.list.Paths = append(h.list.Paths, filepath.Join(home, filepath.FromSlash(rel)))
		}
	}
	slices.Sort(h.list.Paths)
	return h
}

// tw builds a tripwire for workspace ws with the host's list.
func (h homeHost) tw(t testing.TB, ws string, extra map[string]any) *Tripwire {
	t.Helper()
	tw := setup(t, ws, extra)
	return New(tw.Config(), Options{Workspace: ws, Protected: h.list, Resolver: publicDNS})
}

func TestProtectedDenyListEntries(t *testing.T) {
	h := newHomeHost(t)
	// A home-like workspace: every store of the deny list lies inside it.
	tw := h.tw(t, h.me, nil)
	var cases []tcase
	for _, rel := range secretpaths.DenyList("linux") {
		cases = append(cases,
			tcase{"read_file " + rel, rf(rel), verdict.PathProtected, filepath.Join(h.me, rel), nil},
			tcase{"read_file under " + rel, rf(rel + "/x"), verdict.PathProtected, "", nil},
			tcase{"cat ~/" + rel, rc("cat ~/" + rel), verdict.PathProtected, "", nil},
			tcase{"cat alice's " + rel, rc("cat '" + filepath.Join(h.alice, rel) + "/x'"), verdict.PathProtected, filepath.Join(h.alice, rel), nil},
		)
	}
	run(t, tw, cases)
}

func TestProtectedTricks(t *testing.T) {
	h := newHomeHost(t)
	home := h.tw(t, h.me, nil)
	run(t, home, []tcase{
		{"cat key", rc("cat .ssh/id_ed25519"), verdict.PathProtected, ".ssh/id_ed25519", nil},
		{"tilde", rc("cat ~/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"HOME", rc("cat $HOME/.aws/credentials"), verdict.PathProtected, "", nil},
		{"quoted braced HOME", rc(`cat "${HOME}"/.aws/credentials`), verdict.PathProtected, "", nil},
		{"other user's tilde", rc("cat ~alice/.ssh/id_rsa"), verdict.PathProtected, "", nil},
		{"redirect read", rc("cat < ~/.netrc"), verdict.PathProtected, "", nil},
		{"redirect write", rc("echo key >> ~/.ssh/authorized_keys"), verdict.PathProtected, "", nil},
		{"static redirect", rc("wc -l < .netrc"), verdict.PathProtected, "", nil},
		{"trailing slash", rc("ls .ssh/"), verdict.PathProtected, "", nil},
		{"read_file trailing slash", rf(".ssh/"), verdict.PathProtected, "", nil},
		{"dot components", rc("cat ./.ssh/./id_ed25519"), verdict.PathProtected, "", nil},
		{"issuer key", rc("cat .local/share/ironvise/keys/issuer.ed25519"), verdict.PathProtected, h.dataDir, nil},
		{"data dir listing", rc("ls -la .local/share/ironvise"), verdict.PathProtected, "", nil},
		{"glob", rc("cat .ss?/id*"), verdict.PathProtected, "", nil},
		{"glob under tilde", rc("cat ~/.ss*/id_ed25519"), verdict.PathProtected, "", nil},
		{"glob over homes", rc("cat " + h.base + "/home/*/.ssh/id_rsa"), verdict.PathProtected, "", nil},
		{"brace expansion", rc("cat .{ssh,x}/id_ed25519"), verdict.PathProtected, "", nil},
		{"char range", rc("cat .s{r..t}h/id_ed25519"), verdict.PathProtected, "", nil},
		{"escaped name", rc(`cat .s\sh/id_ed25519`), verdict.PathProtected, "", nil},
		{"split quotes", rc(`cat ".s"'sh'/id_ed25519`), verdict.PathProtected, "", nil},
		{"option value", rc("dd if=.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"long option value", rc("tool --key-file=$HOME/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"attached option", rc("tool -i~/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		// curl file:// of any path is refused by curl_scheme first; the
		// path inside a file URL is found for every program.
		{"file URL", rc("xdg-open file://" + h.me + "/.netrc"), verdict.PathProtected, "", nil},
		{"at-file", rc("tool @.netrc"), verdict.PathProtected, "", nil},
		{"assignment", rc(`K=~/.ssh/id_ed25519; cat "$K"`), verdict.PathProtected, "", nil},
		{"inside sh -c", rc(`sh -c 'cat .aws/credentials'`), verdict.PathProtected, "", nil},
		{"inside substitution", rc(`echo "$(cat .netrc)"`), verdict.PathProtected, "", nil},
		{"proc root link", rc("cat /proc/self/root" + h.me + "/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"proc cwd link", rc("cat /proc/self/cwd/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"cd home", rc("cd ~ && cat .netrc"), verdict.PathProtected, "", nil},
		{"cd alone", rc("cd; cat .ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"cd computed", rc(`cd "$D" && cat .ssh/id_ed25519`), verdict.PathProtected, "a cd computes", nil},
		{"cd into store", rc("cd .ssh && cat id_ed25519"), verdict.PathProtected, "", nil},
		{"browser profile", rc("sqlite3 .config/google-chrome/Local"), verdict.PathProtected, "", nil},

		// What must stay allowed in a home workspace.
		{"plain file", rc("cat notes.txt"), verdict.OK, "", nil},
		{"dotfile not listed", rc("cat .bashrc"), verdict.OK, "", nil},
		{"star skips dotfiles", rc("ls *"), verdict.OK, "", nil},
		{"home itself", rc("ls ~ $HOME"), verdict.OK, "", nil},
		{"word that is no path", rc("grep -rn password notes.txt"), verdict.OK, "", nil},
		{"cd elsewhere", rc("cd project && cat README"), verdict.OK, "", nil},
		{"read_file plain", rf("notes.txt"), verdict.OK, "", nil},
	})

	// From a project inside the home: "..", symlinks and cd lead out.
	proj := h.tw(t, h.project, nil)
	run(t, proj, []tcase{
		{"dotdot argument", rc("cat ../.ssh/id_ed25519"), verdict.PathProtected, filepath.Join(h.me, ".ssh"), nil},
		{"dotdot read_file", rf("../.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"dotdot redirect", rc("cat < ../.netrc"), verdict.PathProtected, "", nil},
		{"symlink argument", rc("cat keys/id_ed25519"), verdict.PathProtected, filepath.Join(h.me, ".ssh"), nil},
		{"symlink read_file", rf("keys/id_ed25519"), verdict.PathProtected, "", nil},
		{"symlink itself", rf("keys"), verdict.PathProtected, "", nil},
		{"cd up", rc("cd .. && cat .ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"cd up repeated in a loop", rc("for i in 1 2; do cd ..; done; cat me/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"cd chain", rc("cd sub; cd ../..; cat .aws/credentials"), verdict.PathProtected, "", nil},
		{"absolute", rc("head -1 " + h.me + "/.aws/credentials"), verdict.PathProtected, "", nil},
		{"project file", rc("cat sub/x.txt README"), verdict.OK, "", nil},
		{"dotdot elsewhere", rc("ls .."), verdict.OK, "", nil},
		{"plain traversal stays traversal", rf("../notes.txt"), verdict.PathTraversal, "", nil},
	})
}

func TestProtectedBeatsRoots(t *testing.T) {
	h := newHomeHost(t)
	// An allowed root (and a writable one) that contains the home does
	// not open up the stores in it.
	tw := h.tw(t, h.project, map[string]any{"allowed_roots": []string{h.base}, "writable_roots": []string{h.base}})
	run(t, tw, []tcase{
		{"read through a wide root", rf(h.me + "/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"write through a wide root", rc("echo x > " + h.me + "/.ssh/authorized_keys"), verdict.PathProtected, "", nil},
		{"other files still allowed", rf(h.me + "/notes.txt"), verdict.OK, "", nil},
	})
}

func TestProtectedPathsFromTripwireJSON(t *testing.T) {
	h := newHomeHost(t)
	cfg, err := LoadConfigBytes([]byte(`{"protected_paths": ["~/.config/myapp", "`+h.base+`/srv/secrets/"]}`), LoadOptions{Workspace: h.me})
	if err != nil {
		t.Fatal(err)
	}
	want := []secretpaths.Entry{{Path: ".config/myapp", HomeRelative: true}, {Path: h.base + "/srv/secrets"}}
	if !slices.Equal(cfg.ProtectedPaths, want) {
		t.Fatalf("ProtectedPaths = %+v; want %+v", cfg.ProtectedPaths, want)
	}
	// The composition root merges the entries into the list; here as in
	// internal/cli.
	list, err := secretpaths.Compute(secretpaths.Sources{DataDir: h.dataDir, Home: h.me, Extra: cfg.ProtectedPaths})
	if err != nil {
		t.Fatal(err)
	}
	tw := New(cfg, Options{Workspace: h.me, Protected: list})
	run(t, tw, []tcase{
		{"user entry under home", rc("cat .config/myapp/token"), verdict.PathProtected, filepath.Join(h.me, ".config", "myapp"), nil},
		{"user entry read_file", rf(".config/myapp/token"), verdict.PathProtected, "", nil},
		{"absolute user entry", rc("cat " + h.base + "/srv/secrets/db.password"), verdict.PathProtected, "", nil},
		{"mandatory entry still there", rc("cat ~/.ssh/id_ed25519"), verdict.PathProtected, "", nil},
		{"neighbour allowed", rc("cat notes.txt"), verdict.OK, "", nil},
	})
	// The entries are part of the recorded configuration.
	other, err := LoadConfigBytes([]byte(`{"protected_paths": []}`), LoadOptions{Workspace: h.me})
	if err != nil {
		t.Fatal(err)
	}
	if other.SHA256 == cfg.SHA256 {
		t.Fatal("protected_paths does not change the configuration hash")
	}
}

func TestProtectedPathsValidation(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"protected_paths": "~/.ssh"}`, "$.protected_paths: expected array of strings"},
		{`{"protected_paths": [1]}`, "$.protected_paths[0]: expected string"},
		{`{"protected_paths": ["/srv/ok", "relative/x"]}`, `$.protected_paths[1]: "relative/x": neither absolute nor ~/-relative`},
		{`{"protected_paths": ["~"]}`, `$.protected_paths[0]: "~": a whole home directory`},
		{`{"protected_paths": ["~bob/.ssh"]}`, `$.protected_paths[0]: "~bob/.ssh": only ~/`},
		{`{"protected_paths": ["/srv/*"]}`, `$.protected_paths[0]: "/srv/*": globs are not supported`},
		{`{"protected_paths": ["/"]}`, `$.protected_paths[0]: "/": it is the system directory /`},
		{`{"protected_paths": ["/srv/../etc"]}`, `$.protected_paths[0]: "/srv/../etc": ".." components`},
	} {
		_, err := LoadConfigBytes([]byte(tc.json), LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), "tripwire.json: "+tc.want) {
			t.Errorf("%s: got %v; want %q", tc.json, err, tc.want)
		}
	}
}

func TestProtectedFoldsCaseOnDarwin(t *testing.T) {
	h := newHomeHost(t)
	cfg, err := LoadConfigBytes([]byte(`{}`), LoadOptions{Workspace: h.me})
	if err != nil {
		t.Fatal(err)
	}
	mac := New(cfg, Options{Workspace: h.me, Protected: h.list, GOOS: "darwin"})
	in := rc("cat " + h.me + "/.SSH/id_ed25519")
	in.Justification = "valid reason"
	if v := mac.Check(mac.View(context.Background(), in)); v.Code != verdict.PathProtected {
		t.Fatalf("darwin: got %s; want path_protected (names fold there)", v.Code)
	}
}

func TestCheckPathAtOpenRefusesProtected(t *testing.T) {
	h := newHomeHost(t)
	tw := h.tw(t, h.project, nil)
	// A name that was harmless when the intent was checked now leads into
	// ~/.ssh: the re-check at open time sees where it leads.
	target := filepath.Join(h.project, "later")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, v := tw.CheckPathAtOpen("later"); v.Denied() {
		t.Fatalf("before the swap: %s", v.Code)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "../.ssh/id_ed25519", target)
	if _, v := tw.CheckPathAtOpen("later"); v.Code != verdict.PathProtected {
		t.Fatalf("after the swap: got %s; want path_protected", v.Code)
	}
}

// BenchmarkProtectedCommand measures the word checks on a typical command
// with a list the size of a small multi-user host (a dozen homes). Every
// word that may name a file is resolved (one lstat per component beyond
// the workspace): about 5 µs more than without a list on the development
// machine (16 → 21 µs for this command). The pipeline's 20 µs target
// (internal/check) is measured without a list.
func BenchmarkProtectedCommand(b *testing.B) {
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var list secretpaths.List
	for i := range 12 {
		home := filepath.Join(ws, "..", "home", string(rune('a'+i)))
		list.Homes = append(list.Homes, home)
		for _, rel := range secretpaths.DenyList("linux") {
			list.Paths = append(list.Paths, filepath.Join(home, rel))
		}
	}
	slices.Sort(list.Paths)
	cfg, err := LoadConfigBytes(nil, LoadOptions{Workspace: ws})
	if err != nil {
		b.Fatal(err)
	}
	in := rc("grep -rn 'PermitRootLogin' /etc/ssh 2>/dev/null | head -20")
	in.Justification = "check sshd root login setting"
	for _, tc := range []struct {
		name string
		list secretpaths.List
	}{{"without_list", secretpaths.List{}}, {"with_list", list}} {
		tw := New(cfg, Options{Workspace: ws, Protected: tc.list})
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if v := tw.Check(tw.View(context.Background(), in)); v.Denied() {
					b.Fatal(v.Message)
				}
			}
		})
	}
}

// FuzzProtectedCommand runs commands against a home workspace with a
// protected list: no input panics and every verdict is well formed.
func FuzzProtectedCommand(f *testing.F) {
	for _, s := range []string{
		"cat ~/.ssh/id_ed25519",          // tilde
		"cat .{ssh,aws,{a,b}}/x{1..3}",   // nested and ranged braces
		"cat .s{z..a}h/id",               // descending range
		"cat .ss[h/id",                   // unterminated bracket
		`cat .s\sh/id \\ \`,              // escapes, trailing backslash
		"cd ..; cd ../..; cat *",         // climbing cds and a star
		"cd ~alice && cat .ssh/id_rsa",   // another user's home
		"cat /proc/self/cwd/../.netrc",   // cwd magic link
		"x=--key=$HOME/.netrc; tool $x",  // assignment with a home
		"cat /home/*/*/*/*/*/*/*/*/*/*/", // deep glob
		"cat {{{{{{{{{{a,b}}}}}}}}}}",    // deep braces
	} {
		f.Add(s)
	}
	h := newHomeHost(f)
	tw := h.tw(f, h.me, nil)
	f.Fuzz(func(t *testing.T, cmd string) {
		wellFormed(t, check(t, tw, rc(cmd)))
	})
}

func TestProtectedWorkIsBounded(t *testing.T) {
	h := newHomeHost(t)
	tw := h.tw(t, h.me, nil)
	// Six cds reach 64 directories; three words of 64 brace forms each
	// are 12288 names: more than one intent may cost.
	in := rc("cd a; cd b; cd c; cd d; cd e; cd f; cat x{a..z}{a..z} y{a..z}{a..z} z{a..z}{a..z}")
	in.Justification = "valid reason"
	start := time.Now()
	v := tw.Check(tw.View(context.Background(), in))
	if v.Code != verdict.CmdTooComplex || !strings.Contains(v.Message, "protected paths") {
		t.Fatalf("got %s %q; want cmd_too_complex", v.Code, v.Message)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the bounded check took %v", d)
	}
}

func TestProtectedGlobByNameWhenTheBudgetIsSpent(t *testing.T) {
	h := newHomeHost(t)
	tw := h.tw(t, h.me, nil)
	v := tw.View(context.Background(), rc("true"))
	// ~/snap/firefox is listed but does not exist: a glob cannot expand
	// to it, so with a budget the pattern is harmless...
	pat := filepath.Join(h.me, "sn*p", "firefox", "x")
	if hit := tw.newScan(v).globHit(pat); hit != nil {
		t.Fatalf("expanded glob: got %+v; want no hit (nothing exists)", hit)
	}
	// ...and without one it is matched by name, the conservative answer.
	s := tw.newScan(v)
	s.entries = 0
	if hit := s.globHit(pat); hit == nil || hit.entry != filepath.Join(h.me, "snap", "firefox") {
		t.Fatalf("by name: got %+v; want the listed ~/snap/firefox", hit)
	}
}
