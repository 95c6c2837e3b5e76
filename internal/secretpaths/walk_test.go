package secretpaths

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// countingLinks counts what a walk asks of the file system.
type countingLinks struct {
	r               LinkReader
	lstats, readlns int
}

func (c *countingLinks) Lstat(name string) (fs.FileInfo, error) {
	c.lstats++
	return c.r.Lstat(name)
}

func (c *countingLinks) Readlink(name string) (string, error) {
	c.readlns++
	return c.r.Readlink(name)
}

// linkTree builds, under a fresh directory, a tree holding every shape a
// walk must get right: nested and chained links, relative and absolute
// ones, dangling links, loops, links to a parent and to themselves, files
// where directories are expected, a link to "file/", and chains longer
// than the kernel's 40 links and EvalSymlinks' 255. It returns the
// directory and the names a path may be built from.
func linkTree(tb testing.TB, dir string) (string, []string) {
	tb.Helper()
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		tb.Fatal(err)
	}
	for _, d := range []string{"a/b/c", "d/e", "home/u/.config/gh", "home/v"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for _, f := range []string{"f", "a/g", "a/b/h", "home/u/.netrc"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	links := [][2]string{
		{"a/up", ".."}, {"a/self", "."}, {"a/b/top", root}, {"l1", "a/b"}, {"l2", "l1/c"},
		{"dang", "nowhere/x"}, {"dangabs", "/nonexistent-ironvise/x"}, {"loop1", "loop2"}, {"loop2", "loop1"},
		{"selfloop", "selfloop"}, {"tofile", "f"}, {"tofileslash", "f/"}, {"todotdot", "a/b/../../d"},
		{"abs", filepath.Join(root, "a")}, {"lslash", "a/"}, {"lroot", "/"}, {"throughfile", "f/x"},
		{"home/u/.ssh", "../../d/e"}, {"home/v/.aws", filepath.Join(root, "home/u/.config")},
		{"home/v/.config", "../u/.config/"}, {"d/e/back", "../../home"}, {"a/b/c/dotlink", "./../g"},
	}
	chain := func(prefix string, n int, end string) {
		for i := range n {
			target := fmt.Sprintf("%s%d", prefix, i+1)
			if i == n-1 {
				target = end
			}
			links = append(links, [2]string{fmt.Sprintf("%s%d", prefix, i), target})
		}
	}
	chain("k", 45, "a")  // beyond the kernel's limit, within EvalSymlinks'
	chain("m", 260, "a") // beyond EvalSymlinks'
	// Within the limit to a directory, beyond it through a link in there:
	// the limit counts the links of the whole path.
	chain("n", 200, "a/b")
	chain("p", 60, "a")
	links = append(links, [2]string{"a/b/far", "../../p0"})
	names := []string{".", "..", "", "missing", "a", "b", "c", "d", "e", "g", "h", "f", "x", "home", "u", "v",
		".config", "gh", ".netrc", ".ssh", ".aws", "back", "dotlink", "k0", "k20", "m0", "n0", "n150", "p0"}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(root, l[0])); err != nil {
			tb.Fatal(err)
		}
		if !strings.ContainsAny(l[0][:1], "kmnp") {
			names = append(names, filepath.Base(l[0]))
		}
	}
	return root, names
}

// randomPath joins 1 to 5 names under root: "" makes a doubled
// separator, and a trailing separator is added now and then.
func randomPath(rng *rand.Rand, root string, names []string) string {
	var b strings.Builder
	b.WriteString(root)
	for range 1 + rng.IntN(5) {
		b.WriteByte('/')
		b.WriteString(names[rng.IntN(len(names))])
	}
	if rng.IntN(8) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

// TestWalksMatchTheirOriginals: over a tree of every link shape, RealPath
// through one Memo answers what filepath.EvalSymlinks answers, and Resolve
// through one Memo what Resolve answers reading the file system each time
// (the code before the Memo), refusals and errors included.
func TestWalksMatchTheirOriginals(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows; RealPath is EvalSymlinks there")
	}
	root, names := linkTree(t, t.TempDir())
	rng := rand.New(rand.NewPCG(1, 2))
	memo := Memo(OSLinks{})
	refuse := func(link string) error {
		if strings.HasSuffix(link, "/top") {
			return errors.New("refused " + link)
		}
		return nil
	}
	var found, resolved int
	// Paths the generator rarely builds: links counted across a parent
	// (n0 is 200 links, far 61 more), a file followed by more path.
	fixed := []string{"n0/far", "n0/far/b", "n150/far", "n0/c", "k0/b/far", "f/x", "tofile/x", "tofileslash/x"}
	for i := range 6000 + len(fixed) {
		p := randomPath(rng, root, names)
		if i < len(fixed) {
			p = root + "/" + fixed[i]
		}
		for _, q := range []string{p, filepath.Clean(p)} {
			want, wantErr := filepath.EvalSymlinks(q)
			got, gotErr := RealPath(memo, q)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("RealPath(%q) = %q, %v; EvalSymlinks: %q, %v", q, got, gotErr, want, wantErr)
			}
			if wantErr == nil {
				found++
			}
			for _, f := range []func(string) error{nil, refuse} {
				want, wantErr := resolveJoined(OSLinks{}, "/", SplitPath(q), f)
				got, gotErr := Resolve(memo, q, f)
				if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("Resolve(%q) through a Memo = %q, %v; the plain walk without: %q, %v", q, got, gotErr, want, wantErr)
				}
				if wantErr == nil {
					resolved++
				}
				// The walk continued from a directory not in Clean's form
				// (a caller's), which it cleans as it goes.
				if f != nil || q != p {
					continue
				}
				rel := strings.TrimPrefix(q, root+"/")
				for _, cur := range []string{root + "/", root + "/a/..", root + "//."} {
					want, wantErr := resolveJoined(OSLinks{}, cur, strings.Split(rel, "/"), f)
					got, gotErr := ResolveFrom(memo, cur, strings.Split(rel, "/"), f)
					if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
						t.Fatalf("ResolveFrom(%q, %q) = %q, %v; the plain walk: %q, %v", cur, rel, got, gotErr, want, wantErr)
					}
				}
			}
		}
	}
	t.Logf("%d found, %d resolved", found, resolved)
	// The tree must exercise both outcomes of each walk.
	if found < 500 || found > 11000 || resolved < 500 || resolved > 23000 {
		t.Fatalf("%d paths found and %d resolved of 12,000: the generator misses a case", found, resolved)
	}
}

// resolveJoined is ResolveFrom written the plain way, each step through
// filepath.Join: the definition the walk's appending of names must match.
func resolveJoined(r LinkReader, cur string, todo []string, refuse func(link string) error) (string, error) {
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := r.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return filepath.Join(append([]string{next}, todo...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", next)
		}
		if refuse != nil {
			if err := refuse(next); err != nil {
				return "", err
			}
		}
		target, err := r.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			cur = tv + string(filepath.Separator)
			target = target[len(tv):]
		}
		todo = append(SplitPath(target), todo...)
	}
	return cur, nil
}

// FuzzRealPath: for any path under the tree, RealPath through a Memo
// answers what filepath.EvalSymlinks answers.
func FuzzRealPath(f *testing.F) {
	if runtime.GOOS == "windows" {
		f.Skip("symlinks need privileges on Windows; RealPath is EvalSymlinks there")
	}
	root, _ := linkTree(f, f.TempDir())
	for _, s := range []string{"a/up/a/self/b", "tofileslash", "k0/b", "m0", "n0/far", "n0/c", "loop1/x", "home/v/.config/gh", "lroot/../" + root[1:] + "/l2/dotlink"} {
		f.Add(s)
	}
	memo := Memo(OSLinks{})
	f.Fuzz(func(t *testing.T, s string) {
		q := root + "/" + s
		want, wantErr := filepath.EvalSymlinks(q)
		got, gotErr := RealPath(memo, q)
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("RealPath(%q) = %q, %v; EvalSymlinks: %q, %v", q, got, gotErr, want, wantErr)
		}
	})
}

// TestMemoRepeatsErrors: a name that failed fails again with the same
// error, and is not asked about again.
func TestMemoRepeatsErrors(t *testing.T) {
	c := &countingLinks{r: OSLinks{}}
	m := Memo(c)
	for range 3 {
		if _, err := m.Lstat("/nonexistent-ironvise"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Lstat: %v", err)
		}
		if _, err := m.Readlink("/"); err == nil {
			t.Fatal("Readlink(/) succeeded")
		}
	}
	if c.lstats != 1 || c.readlns != 1 {
		t.Fatalf("%d lstat and %d readlink calls; want one each", c.lstats, c.readlns)
	}
}

// TestComputeMatchesUnsharedWalks: Compute through its Memo lists what it
// listed asking the file system about every path separately.
func TestComputeMatchesUnsharedWalks(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.root, "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	tree, _ := linkTree(t, filepath.Join(f.root, "tree"))
	for _, l := range [][2]string{{".ssh", "../../tree/home/u/.ssh"}, {".config", "../../tree/home/v/.config"}, {".aws", "../../tree/loop1"}, {".kube", "../../tree/tofileslash"}} {
		if err := os.Symlink(l[1], filepath.Join(f.alice, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	s := f.sources()
	s.Extra = []Entry{{Path: filepath.Join(tree, "k0", "b")}, {Path: filepath.Join(tree, "m0")}, {Path: ".config/gh", HomeRelative: true}}
	want, err := computeThrough(s, OSLinks{})
	if err != nil {
		t.Fatal(err)
	}
	got := compute(t, s)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Compute:\n%q\nwithout the Memo:\n%q", got, want)
	}
	if !strings.Contains(fmt.Sprint(got.Paths), filepath.Join(tree, "home/u/.config/gh")) {
		t.Fatalf("alice's .config link is not followed: %q", got.Paths)
	}
}

// realSources are the sources the command line gives Compute on this host
// (IronVise's own home and data directory, and every home the host has).
func realSources(tb testing.TB) Sources {
	home, err := os.UserHomeDir()
	if err != nil {
		tb.Skip("no home directory")
	}
	return Sources{DataDir: filepath.Join(home, ".local", "share", "ironvise"), Home: home,
		ConfigHome: os.Getenv("XDG_CONFIG_HOME"), DataHome: os.Getenv("XDG_DATA_HOME")}
}

// BenchmarkCompute: the list of this host, with and without the Memo.
func BenchmarkCompute(b *testing.B) {
	src := realSources(b)
	for _, mode := range []string{"old", "new"} {
		b.Run(mode, func(b *testing.B) {
			through := func(c *countingLinks) LinkReader {
				if mode == "old" {
					return c
				}
				return Memo(c)
			}
			c := &countingLinks{r: OSLinks{}}
			if _, err := computeThrough(src, through(c)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := computeThrough(src, through(&countingLinks{r: OSLinks{}})); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(c.lstats), "lstat/op")
			b.ReportMetric(float64(c.readlns), "readlink/op")
		})
	}
}

// BenchmarkRealPaths: what sandbox.HiddenPaths does when a command starts
// (the real location of every listed path, the real locations included),
// on this host's list and on a synthetic host of 40 homes, old
// (filepath.EvalSymlinks on each path) against new (RealPath through one
// Memo).
func BenchmarkRealPaths(b *testing.B) {
	l, err := Compute(realSources(b))
	if err != nil {
		b.Fatal(err)
	}
	lists := map[string][]string{"host": l.Paths, "synthetic": syntheticList(b)}
	for _, name := range []string{"host", "synthetic"} {
		list := lists[name]
		b.Run(name+"/old", func(b *testing.B) {
			c := &countingLinks{r: OSLinks{}}
			for _, p := range list {
				_, _ = RealPath(c, p) // the same walk, counted
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range list {
					_, _ = filepath.EvalSymlinks(p)
				}
			}
			b.ReportMetric(float64(len(list)), "paths")
			b.ReportMetric(float64(c.lstats), "lstat/op")
			b.ReportMetric(float64(c.readlns), "readlink/op")
		})
		b.Run(name+"/new", func(b *testing.B) {
			c := &countingLinks{r: OSLinks{}}
			m := Memo(c)
			for _, p := range list {
				_, _ = RealPath(m, p)
			}
			b.ReportAllocs()
			for b.Loop() {
				m := Memo(OSLinks{})
				for _, p := range list {
					_, _ = RealPath(m, p)
				}
			}
			b.ReportMetric(float64(len(list)), "paths")
			b.ReportMetric(float64(c.lstats), "lstat/op")
			b.ReportMetric(float64(c.readlns), "readlink/op")
		})
	}
}

// syntheticList is the deny list under 40 homes of a synthetic host, some
// holding stores (one behind a link, one with a .config), and their real
// locations, as HiddenPaths receives it from a tier.
func syntheticList(tb testing.TB) []string {
	tb.Helper()
	root, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	var homes []string
	for i := range 40 {
		h := filepath.Join(root, "home", fmt.Sprintf("user%02d", i))
		homes = append(homes, h)
		dirs := []string{h}
		if i%2 == 0 {
			dirs = append(dirs, filepath.Join(h, ".ssh"), filepath.Join(h, ".config", "gh"), filepath.Join(h, ".config", "chromium"))
		}
		for _, d := range dirs {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if i%4 == 0 {
			if err := os.Symlink("../../vault/"+filepath.Base(h), filepath.Join(h, ".aws")); err != nil {
				tb.Fatal(err)
			}
		}
	}
	l, err := computeThrough(Sources{DataDir: filepath.Join(root, "data"), fixedHomes: homes}, Memo(OSLinks{}))
	if err != nil {
		tb.Fatal(err)
	}
	return l.Paths
}
