package secretpaths

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
)

// homeSources says where the home directories of a host are found.
type homeSources struct {
	passwd  string   // a passwd(5) file; "" = none
	parents []string // directories whose subdirectories are homes
	fixed   []string // homes that exist without a passwd line (root's)
}

// homeSources returns the host's sources, or the test fixtures.
func (s Sources) homeSources() homeSources {
	if s.passwdFile != "" || s.homeParents != nil || s.fixedHomes != nil {
		return homeSources{passwd: s.passwdFile, parents: s.homeParents, fixed: s.fixedHomes}
	}
	switch runtime.GOOS {
	case "windows":
		// Profiles live beside the current user's: C:\Users\*.
		var parents []string
		if s.Home != "" && filepath.IsAbs(s.Home) {
			parents = append(parents, filepath.Dir(filepath.Clean(s.Home)))
		}
		return homeSources{parents: parents}
	case "darwin":
		// /etc/passwd lists only system accounts on macOS (users live in
		// Directory Services); their homes are under /Users.
		return homeSources{passwd: "/etc/passwd", parents: []string{"/Users"}, fixed: []string{"/var/root"}}
	default:
		return homeSources{passwd: "/etc/passwd", parents: []string{"/home"}, fixed: []string{"/root"}}
	}
}

// discoverHomes returns every home that exists, sorted and deduplicated.
// A home that cannot be examined (permission denied on a parent) is kept:
// it cannot be proven absent.
func discoverHomes(links LinkReader, own string, hs homeSources) ([]string, error) {
	cands := append([]string(nil), hs.fixed...)
	if own != "" {
		cands = append(cands, own)
	}
	if hs.passwd != "" {
		ph, err := passwdHomes(hs.passwd)
		if err != nil {
			return nil, err
		}
		cands = append(cands, ph...)
	}
	for _, parent := range hs.parents {
		ents, err := os.ReadDir(parent)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			// Security: a user's home that cannot be listed would leave
			// that user's ~/.ssh out of the list without a trace.
			return nil, fmt.Errorf("%w: list %s: %w; run IronVise as a user that can list %s", ErrHomes, parent, err, parent)
		}
		for _, e := range ents {
			p := filepath.Join(parent, e.Name())
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				continue // a file in /home is not a home
			}
			cands = append(cands, p)
		}
	}
	var out []string
	for _, h := range cands {
		if h == "" || !filepath.IsAbs(h) {
			continue
		}
		h = filepath.Clean(h)
		if _, err := links.Lstat(h); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue // /nonexistent and friends
		}
		out = append(out, h)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// maxPasswdBytes bounds what is read of a passwd file.
const maxPasswdBytes = 16 << 20

// passwdHomes returns the sixth field of every line of a passwd(5) file. A
// missing file means no homes (minimal containers have none); any other
// error fails.
func passwdHomes(path string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w; make it readable to IronVise", ErrHomes, path, err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(&limitedReader{f: f, left: maxPasswdBytes})
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, ":")
		if len(fields) < 7 {
			continue // NIS "+" lines and malformed lines name no home
		}
		out = append(out, fields[5])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrHomes, path, err)
	}
	return out, nil
}

// limitedReader fails once a byte budget is spent: a passwd file beyond it
// is an error, never an unbounded read.
type limitedReader struct {
	f    *os.File
	left int64
}

func (r *limitedReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, errors.New("passwd file too large")
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.f.Read(p)
	r.left -= int64(n)
	return n, err
}
