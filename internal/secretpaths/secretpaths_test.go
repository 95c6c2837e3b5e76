package secretpaths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// fixture is a host in a temporary directory: a passwd file, a /home with
// two users, root's home and IronVise's own home (a workspace-like
// directory holding the data directory).
type fixture struct {
	root, passwd, homeParent, rootHome, own, alice, bob, svc, dataDir string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{
		root:       root,
		passwd:     filepath.Join(root, "etc", "passwd"),
		homeParent: filepath.Join(root, "home"),
		rootHome:   filepath.Join(root, "root"),
		own:        filepath.Join(root, "work", "me"),
		alice:      filepath.Join(root, "home", "alice"),
		bob:        filepath.Join(root, "home", "bob"),
		svc:        filepath.Join(root, "srv", "svc"),
	}
	f.dataDir = filepath.Join(f.own, ".local", "share", "ironvise")
	for _, d := range []string{filepath.Dir(f.passwd), f.rootHome, f.alice, f.bob, f.svc, f.dataDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A file in /home is not a home; a passwd home that does not exist is
	// skipped; malformed and comment lines name no home.
	if err := os.WriteFile(filepath.Join(f.homeParent, "README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	passwd := strings.Join([]string{
		"# comment",
		"root:x:0:0:root:" + f.rootHome + ":/bin/sh",
		"svc:x:998:998::" + f.svc + ":/usr/sbin/nologin",
		"nobody:x:65534:65534::" + filepath.Join(root, "nonexistent") + ":/usr/sbin/nologin",
		"+::::::",
		"broken-line",
	}, "\n")
	if err := os.WriteFile(f.passwd, []byte(passwd), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f fixture) sources() Sources {
	return Sources{
		DataDir: f.dataDir, Home: f.own,
		passwdFile: f.passwd, homeParents: []string{f.homeParent}, fixedHomes: []string{f.rootHome},
	}
}

func compute(t *testing.T, s Sources) List {
	t.Helper()
	l, err := Compute(s)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return l
}

func TestComputeHomesAndDenyList(t *testing.T) {
	f := newFixture(t)
	l := compute(t, f.sources())

	wantHomes := []string{f.alice, f.bob, f.rootHome, f.svc, f.own}
	slices.Sort(wantHomes)
	if !slices.Equal(l.Homes, wantHomes) {
		t.Fatalf("homes: got %v; want %v", l.Homes, wantHomes)
	}
	// Every deny-list entry under every home: IronVise's own, root's, a
	// passwd home outside /home, and each directory of /home.
	for _, h := range wantHomes {
		for _, rel := range DenyList("linux") {
			p := filepath.Join(h, filepath.FromSlash(rel))
			if !slices.Contains(l.Paths, p) {
				t.Errorf("%s is not listed", p)
			}
		}
	}
	if !slices.Contains(l.Paths, f.dataDir) {
		t.Errorf("the data directory %s is not listed", f.dataDir)
	}
	if slices.ContainsFunc(l.Paths, func(p string) bool { return strings.Contains(p, "nonexistent") || strings.Contains(p, "README") }) {
		t.Errorf("a missing home or a file in /home was treated as a home: %v", l.Paths)
	}
	if !slices.IsSorted(l.Paths) || len(slices.Compact(slices.Clone(l.Paths))) != len(l.Paths) {
		t.Errorf("paths are not sorted and unique")
	}
	// Deterministic: the same host gives the same list.
	if again := compute(t, f.sources()); !slices.Equal(again.Paths, l.Paths) {
		t.Errorf("two computations differ")
	}
}

func TestDenyListNamesEveryRequiredStore(t *testing.T) {
	required := []string{".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker/config.json", ".netrc",
		".git-credentials", ".npmrc", ".pypirc", ".password-store"}
	browsers := map[string][]string{
		"linux": {".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
			".config/vivaldi", ".config/opera", "snap/firefox", "snap/chromium", ".var/app/org.mozilla.firefox", ".var/app/com.google.Chrome"},
		"darwin": {"Library/Application Support/Google/Chrome", "Library/Application Support/Firefox", "Library/Application Support/Microsoft Edge",
			"Library/Application Support/BraveSoftware", "Library/Application Support/Vivaldi", "Library/Application Support/com.operasoftware.Opera"},
		"windows": {"AppData/Local/Google/Chrome/User Data", "AppData/Roaming/Mozilla/Firefox", "AppData/Local/Microsoft/Edge/User Data",
			"AppData/Local/BraveSoftware/Brave-Browser/User Data", "AppData/Local/Vivaldi/User Data", "AppData/Roaming/Opera Software"},
	}
	for goos, extra := range browsers {
		t.Run(goos, func(t *testing.T) {
			t.Parallel()
			got := DenyList(goos)
			for _, want := range append(slices.Clone(required), extra...) {
				if !slices.Contains(got, want) {
					t.Errorf("DenyList(%q) lacks %q", goos, want)
				}
			}
		})
	}
}

func TestComputeResolvesSymlinks(t *testing.T) {
	f := newFixture(t)
	// alice keeps her keys elsewhere behind a symlink: both names are
	// listed, so neither can be read.
	real := filepath.Join(f.root, "vault", "alice-ssh")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(f.alice, ".ssh")); err != nil {
		t.Fatal(err)
	}
	// bob's home is reached through a symlinked parent.
	if err := os.Symlink(f.bob, filepath.Join(f.root, "bob-link")); err != nil {
		t.Fatal(err)
	}
	s := f.sources()
	s.Extra = []Entry{{Path: filepath.Join(f.root, "bob-link", "notes")}}
	l := compute(t, s)
	for _, want := range []string{filepath.Join(f.alice, ".ssh"), real, filepath.Join(f.root, "bob-link", "notes"), filepath.Join(f.bob, "notes")} {
		if !slices.Contains(l.Paths, want) {
			t.Errorf("%s is not listed", want)
		}
	}
}

func TestComputeNamedRebasedAndExtra(t *testing.T) {
	f := newFixture(t)
	cfgHome := filepath.Join(f.root, "xdg-config")
	ledger := filepath.Join(f.root, "db", "ledger.db")
	kube := filepath.Join(f.root, "ops", "admin.conf")
	s := f.sources()
	s.ConfigHome = cfgHome
	s.Named = []Source{{Name: "DATABASE_URL", Path: ledger}, {Name: "KUBECONFIG", Path: kube}}
	s.Extra = []Entry{{Path: ".config", HomeRelative: true}, {Path: filepath.Join(f.root, "srv", "secrets")}}
	l := compute(t, s)
	for _, want := range []string{ledger, kube, filepath.Join(cfgHome, "gcloud"), filepath.Join(cfgHome, "google-chrome"),
		filepath.Join(f.alice, ".config"), filepath.Join(f.own, ".config"), filepath.Join(f.root, "srv", "secrets")} {
		if !slices.Contains(l.Paths, want) {
			t.Errorf("%s is not listed", want)
		}
	}
	// ~/.config covers ~/.config/gcloud: the inner entry is dropped.
	if slices.Contains(l.Paths, filepath.Join(f.alice, ".config", "gcloud")) {
		t.Errorf("an entry inside another entry was kept")
	}
	for _, p := range l.Paths {
		if q, ok := (List{Paths: slices.DeleteFunc(slices.Clone(l.Paths), func(x string) bool { return x == p })}).Covering(p); ok {
			t.Errorf("%s lies inside %s", p, q)
		}
	}
}

func TestComputeRefusesUnusableSources(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		mut  func(*Sources)
		want string
	}{
		{"empty data dir", func(s *Sources) { s.DataDir = "" }, "ECTO_DATA_DIR is empty"},
		{"relative data dir", func(s *Sources) { s.DataDir = "data" }, `ECTO_DATA_DIR="data" is not an absolute path`},
		{"data dir at the root", func(s *Sources) { s.DataDir = "/" }, `ECTO_DATA_DIR="/" is the system directory /`},
		{"store at a system dir", func(s *Sources) { s.Named = []Source{{Name: "GNUPGHOME", Path: "/etc"}} }, `GNUPGHOME="/etc" is the system directory /etc`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := f.sources()
			tc.mut(&s)
			_, err := Compute(s)
			if !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want ErrSource naming %q", err, tc.want)
			}
		})
	}
}

func TestComputeFailsWhenHomesCannotBeListed(t *testing.T) {
	f := newFixture(t)
	s := f.sources()
	// A parent that cannot be read (here: a file) would silently drop
	// every home in it.
	s.homeParents = []string{f.passwd}
	if _, err := Compute(s); !errors.Is(err, ErrHomes) {
		t.Fatalf("got %v; want ErrHomes", err)
	}
}

func TestParseEntry(t *testing.T) {
	ok := []struct {
		in   string
		want Entry
	}{
		{"/srv/secrets", Entry{Path: "/srv/secrets"}},
		{"/srv/secrets/", Entry{Path: "/srv/secrets"}},
		{"/etc/ssl/private", Entry{Path: "/etc/ssl/private"}},
		{"~/.config/myapp", Entry{Path: ".config/myapp", HomeRelative: true}},
		{"~/.config//myapp/", Entry{Path: ".config/myapp", HomeRelative: true}},
	}
	for _, tc := range ok {
		got, err := ParseEntry(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseEntry(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", "empty path"},
		{"/srv/\x00x", "contains NUL"},
		{"~/.config/*", "globs are not supported"},
		{"/srv/../etc/shadow", `".." components`},
		{"~", "a whole home directory"},
		{"~/", "a whole home directory"},
		{"~alice/.ssh", "only ~/ (every home)"},
		{"relative/path", "neither absolute nor ~/-relative"},
		{"/", "system directory /"},
		{"/usr", "system directory /usr"},
		{"~//etc", "must be relative"},
	}
	for _, tc := range bad {
		_, err := ParseEntry(tc.in)
		if !errors.Is(err, ErrEntry) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "accepted:") {
			t.Errorf("ParseEntry(%q): got %v; want ErrEntry with %q and what is accepted", tc.in, err, tc.want)
		}
	}
}

func TestCheckWorkspaceRefusesSystemRoots(t *testing.T) {
	for _, r := range SystemRoots("linux") {
		// The workspace arrives symlink-resolved, like the CLI passes it:
		// /bin arrives as /usr/bin on merged-/usr systems.
		for _, ws := range []string{r, evalOrSelf(r)} {
			err := CheckWorkspace(ws, List{})
			var we *WorkspaceError
			if !errors.As(err, &we) || !errors.Is(err, ErrWorkspace) {
				t.Errorf("CheckWorkspace(%q): got %v; want a WorkspaceError", ws, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, "refused") || !strings.Contains(msg, "fix:") {
				t.Errorf("CheckWorkspace(%q): message %q does not say what failed and the fix", ws, msg)
			}
		}
	}
	if err := CheckWorkspace("/", List{}); err == nil || !strings.Contains(err.Error(), "root of the file system") {
		t.Errorf("/: got %v", err)
	}
}

func TestCheckWorkspaceProtectedAndAllowed(t *testing.T) {
	f := newFixture(t)
	l := compute(t, f.sources())
	refused := []string{f.dataDir, filepath.Join(f.dataDir, "keys"), filepath.Join(f.alice, ".ssh"), filepath.Join(f.own, ".aws", "sub")}
	for _, ws := range refused {
		if err := CheckWorkspace(ws, l); !errors.Is(err, ErrWorkspace) || !strings.Contains(err.Error(), "lies inside") {
			t.Errorf("CheckWorkspace(%q): got %v; want refused as inside a protected path", ws, err)
		}
	}
	// A workspace that contains protected paths is fine: the sandbox hides
	// them. So are ordinary directories under system roots.
	for _, ws := range []string{f.own, f.homeParent, f.root, filepath.Join(f.own, "project"), "/usr/src", "/var/www", "/etc/nginx"} {
		if err := CheckWorkspace(ws, l); err != nil {
			t.Errorf("CheckWorkspace(%q): %v; want allowed", ws, err)
		}
	}
}

func evalOrSelf(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// TestListWith: paths added to a list keep its rules: sorted, without
// duplicates, none inside another.
func TestListWith(t *testing.T) {
	l := List{Paths: []string{"/home/a/.ssh", "/srv/data"}, Homes: []string{"/home/a"}}
	got := l.With([]string{"/work/home/.ssh", "/home/a/.ssh/id", "/srv", "/home/a/.ssh"})
	if want := []string{"/home/a/.ssh", "/srv", "/work/home/.ssh"}; !slices.Equal(got.Paths, want) {
		t.Fatalf("paths %q, want %q", got.Paths, want)
	}
	if !slices.Equal(got.Homes, l.Homes) || !slices.Equal(l.Paths, []string{"/home/a/.ssh", "/srv/data"}) {
		t.Fatalf("homes %q; the original list became %q", got.Homes, l.Paths)
	}
}

// TestMaybeSystemRootMissesNone: the stat pre-filter of CheckWorkspace
// never rules out a path that systemRoot, resolving every system
// directory's links, finds to be one — on each system directory, its real
// location, what lies directly under each, and a link to each — and it
// does rule out an ordinary directory (else it would save nothing).
func TestMaybeSystemRootMissesNone(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the pre-filter is off on Windows")
	}
	dir := t.TempDir()
	candidates := []string{dir}
	for i, r := range SystemRoots(runtime.GOOS) {
		candidates = append(candidates, r, evalOrSelf(r))
		if entries, err := os.ReadDir(evalOrSelf(r)); err == nil {
			for j, e := range entries {
				if j == 20 {
					break
				}
				candidates = append(candidates, filepath.Join(r, e.Name()), filepath.Join(evalOrSelf(r), e.Name()))
			}
		}
		link := filepath.Join(dir, fmt.Sprintf("link%d", i))
		if err := os.Symlink(r, link); err == nil {
			candidates = append(candidates, link)
		}
	}
	checked := 0
	for _, p := range candidates {
		if _, is := systemRoot(Memo(OSLinks{}), p, runtime.GOOS); is {
			checked++
			if !maybeSystemRoot(p) {
				t.Errorf("%s is a system directory, and the pre-filter ruled it out", p)
			}
		}
	}
	if checked < len(SystemRoots(runtime.GOOS))/2 {
		t.Fatalf("only %d candidates were system directories", checked)
	}
	if maybeSystemRoot(dir) {
		t.Errorf("the pre-filter did not rule out the ordinary directory %s", dir)
	}
}

// BenchmarkCheckWorkspace: an ordinary workspace checked by resolving
// every system directory's links (what CheckWorkspace did for each
// command) against the stat pre-filter that rules it out first.
func BenchmarkCheckWorkspace(b *testing.B) {
	ws := b.TempDir()
	b.Run("resolve", func(b *testing.B) {
		for b.Loop() {
			if _, is := systemRoot(Memo(OSLinks{}), ws, runtime.GOOS); is {
				b.Fatal(ws)
			}
		}
	})
	b.Run("prefilter", func(b *testing.B) {
		for b.Loop() {
			if err := CheckWorkspace(ws, List{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
