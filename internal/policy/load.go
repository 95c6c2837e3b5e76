package policy

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Options are the inputs of Load and Parse besides the policy itself.
type Options struct {
	// DataDir is the IronVise data dir: a name passed to Load is also looked
	// up as <DataDir>/policies/<name>.toml. "" disables that lookup.
	DataDir string
	// SHA256 pins the policy hash (--policy-sha256): when set, a policy
	// whose hash differs does not load.
	SHA256 string
	// NoWorkingDir leaves the working directory out of a bare name's
	// lookup. The exec daemon sets it: its client has looked in its own
	// working directory already (and runs in-process when a file there
	// matches), and the daemon's working directory has nothing to do with
	// the request.
	NoWorkingDir bool
	// GOOS selects the platform matching (ASCII case folding of programs
	// and paths on darwin and windows, "\" and drive letters on windows).
	// It defaults to runtime.GOOS and exists so the darwin and windows rules
	// are tested on Linux.
	GOOS string
}

//go:embed packs/*.toml
var packFS embed.FS

// Packs returns the names of the shipped packs, sorted. Each is loadable by
// name with Load.
func Packs() []string {
	// The embedded directory is fixed at build time; reading it cannot fail.
	ents, _ := fs.ReadDir(packFS, "packs")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".toml"))
	}
	return out
}

// PackBytes returns the exact bytes of a shipped pack.
func PackBytes(name string) ([]byte, bool) {
	if !validName(name) {
		return nil, false
	}
	b, err := packFS.ReadFile("packs/" + name + ".toml")
	return b, err == nil
}

// validName reports a policy name that cannot escape its directory.
func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, `/\`+string(filepath.Separator)) && !strings.ContainsRune(n, 0)
}

// Load loads a policy given as a file path or as the name of a policy that
// List shows: a shipped pack or <DataDir>/policies/<name>.toml ("name" or
// "name.toml"). The lookup order, and why a bare name that matches more
// than one place is refused (ErrAmbiguous), is resolve's; docs/policies.md
// states it for users.
func Load(ref string, opt Options) (*Policy, error) {
	file, data, err := resolve(ref, opt.DataDir, !opt.NoWorkingDir)
	if err != nil {
		return nil, err
	}
	return Parse(file, data, opt)
}

// resolve finds the file a --policy value names.
//
// A value with a path separator is a path (relative to the working
// directory, or absolute): that file, or, when it does not exist and has no
// .toml extension, the same path with .toml.
//
// A bare value is looked up in four places, in this order: the shipped
// packs, <dataDir>/policies/<name>.toml, ./<ref> and ./<name>.toml. Exactly
// one place may hold it. A bare name that matches two places does not load:
// otherwise a file that an agent wrote into the working directory (its
// workspace, often) could stand in for the pack or data-dir policy the
// operator named, and no order of precedence is safe for both readings.
// A path (./team.toml, or the data-dir path) chooses one.
//
// When nothing matches, the error lists every place looked at, in order,
// and how to fix the value.
func resolve(ref, dataDir string, workingDir bool) (file string, data []byte, err error) {
	if ref == "" {
		return "", nil, errors.New("policy: empty policy reference (pass a file path or a name from `ironvise policy list`)")
	}
	if strings.ContainsAny(ref, `/`+string(filepath.Separator)) {
		return resolvePath(ref)
	}
	name := strings.TrimSuffix(ref, ".toml")
	type place struct {
		desc, path string // path is "" for the packs
		found      bool
	}
	_, isPack := PackBytes(name)
	places := []place{{desc: "the shipped packs (" + strings.Join(Packs(), ", ") + ")", found: isPack}}
	if dataDir != "" && validName(name) {
		local := filepath.Join(dataDir, "policies", name+".toml")
		places = append(places, place{desc: local, path: local, found: isRegular(local)})
	}
	for _, f := range cwdCandidates(ref) {
		p := place{desc: "./" + f + " (working directory)", path: f}
		if workingDir {
			p.found = isRegular(f)
		} else {
			// Looked at by the caller, which found nothing there.
			p.desc = "./" + f + " (the caller's working directory)"
		}
		places = append(places, p)
	}
	var hits []place
	for _, p := range places {
		if p.found {
			hits = append(hits, p)
		}
	}
	switch len(hits) {
	case 0:
		var b strings.Builder
		fmt.Fprintf(&b, "policy %q not found; looked in, in order:", ref)
		for i, p := range places {
			fmt.Fprintf(&b, "\n  %d. %s", i+1, p.desc)
		}
		b.WriteString("\nfix: pass the policy file's path (for instance --policy ./" + name + ".toml or an absolute path)")
		if dataDir != "" {
			b.WriteString(", copy it to " + filepath.Join(dataDir, "policies", name+".toml"))
		}
		b.WriteString(", or use a name that `ironvise policy list` shows")
		return "", nil, &lookupError{msg: b.String(), is: ErrNotFound}
	case 1:
		if hits[0].path == "" {
			pack, _ := PackBytes(name)
			return name + ".toml", pack, nil
		}
		return readFile(hits[0].path)
	}
	var descs, paths []string
	pack := false
	for _, h := range hits {
		if h.path == "" {
			pack = true
			descs = append(descs, "the shipped pack "+name)
			continue
		}
		descs = append(descs, h.desc)
		if !filepath.IsAbs(h.path) {
			h.path = "./" + h.path
		}
		paths = append(paths, h.path)
	}
	msg := fmt.Sprintf("policy %q is ambiguous: it names %s\nfix: choose a file by its path (--policy %s)", ref, strings.Join(descs, " and "), strings.Join(paths, " or --policy "))
	if pack {
		msg += "; a shipped pack has no path, so to use the pack, rename or move the other file"
	}
	return "", nil, &lookupError{msg: msg, is: ErrAmbiguous}
}

// cwdCandidates are the working-directory files a bare reference may name:
// the reference itself and, without a .toml extension, the name with one.
func cwdCandidates(ref string) []string {
	if strings.HasSuffix(ref, ".toml") {
		return []string{ref}
	}
	return []string{ref, ref + ".toml"}
}

// resolvePath reads the policy file at path, or at path+".toml" when path
// does not exist and has no extension.
func resolvePath(path string) (string, []byte, error) {
	tried := []string{path}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && filepath.Ext(path) == "" {
		if _, err := os.Stat(path + ".toml"); err == nil {
			return readFile(path + ".toml")
		}
		tried = append(tried, path+".toml")
	} else {
		return readFile(path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "policy %q not found; looked in, in order:", path)
	for i, p := range tried {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, describePath(p))
	}
	b.WriteString("\nfix: check the path (a relative path is relative to the working directory), or use a name that `ironvise policy list` shows")
	return "", nil, &lookupError{msg: b.String(), is: ErrNotFound, path: true}
}

// describePath is p, with its absolute form when p is relative, so the
// error shows which working directory a relative path was taken from.
func describePath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return p + " (" + abs + ")"
	}
	return p
}

// isRegular reports whether path is an existing regular file.
func isRegular(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// lookupError is a policy reference that names nothing (is ErrNotFound)
// or more than one file (is ErrAmbiguous); its message lists the places and
// the fix. A path that names nothing also matches fs.ErrNotExist.
type lookupError struct {
	msg  string
	is   error
	path bool
}

func (e *lookupError) Error() string { return e.msg }

func (e *lookupError) Is(target error) bool {
	return target == e.is || (e.path && target == fs.ErrNotExist)
}

// readFile reads a regular file of at most MaxFileBytes.
func readFile(path string) (string, []byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, fmt.Errorf("policy open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("policy stat %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return "", nil, fmt.Errorf("policy %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return "", nil, fmt.Errorf("policy read %s: %w", path, err)
	}
	return path, data, nil
}

// Hash returns the policy hash of file bytes: lowercase hex SHA-256.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Parse validates and compiles policy bytes. file is the name used in
// error messages and returned by Policy.File. Every problem is reported
// in one *LoadError.
func Parse(file string, data []byte, opt Options) (*Policy, error) {
	fail := func(ps ...Problem) error { return &LoadError{File: file, Problems: ps} }
	if len(data) > MaxFileBytes {
		return nil, fail(Problem{Message: fmt.Sprintf("file is larger than %d bytes", MaxFileBytes)})
	}
	hash := Hash(data)
	if opt.SHA256 != "" {
		if p := checkPin(hash, opt.SHA256); p != nil {
			return nil, fail(*p)
		}
	}
	goos := opt.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	var raw rawPolicy
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	decErr := dec.Decode(&raw)
	ix, parseErr := indexDocument(data)
	if parseErr != nil {
		// Not TOML: the decoder reports the same syntax error with its
		// position. Nothing else can be checked.
		return nil, fail(decodeProblems(ix, decErr, parseErr)...)
	}
	problems := slices.Clone(ix.problems)
	var strict *toml.StrictMissingError
	switch {
	case decErr == nil:
	case errors.As(decErr, &strict):
		for i := range strict.Errors {
			problems = append(problems, unknownKey(ix, &strict.Errors[i]))
		}
	default:
		// A type the decoder cannot place (a rule list written as a string)
		// stops it. The index usually explains it better; otherwise report
		// the decoder's own error.
		if len(problems) == 0 {
			problems = decodeProblems(ix, decErr, nil)
		}
		sortProblems(problems)
		return nil, fail(problems...)
	}
	c := &compiler{ix: ix, fold: goos == "darwin" || goos == "windows", windows: goos == "windows"}
	p := c.compile(&raw)
	problems = append(problems, c.problems...)
	if len(problems) > 0 {
		sortProblems(problems)
		return nil, fail(problems...)
	}
	p.file, p.sha256 = file, hash
	return p, nil
}

// checkPin compares the policy hash with a --policy-sha256 pin in constant
// time, so the comparison leaks nothing about how much of a guess was right.
func checkPin(hash, pin string) *Problem {
	want, err := hex.DecodeString(pin)
	if err != nil || len(want) != sha256.Size {
		return &Problem{Key: "--policy-sha256", Message: fmt.Sprintf("%q is not a hex SHA-256 (64 hex digits)", pin)}
	}
	got, _ := hex.DecodeString(hash)
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return &Problem{Key: "--policy-sha256", Message: fmt.Sprintf("policy hash %s does not match the pinned %s: the file changed, or the pin is for another policy", hash, strings.ToLower(pin))}
	}
	return nil
}

// decodeProblems turns a decoder error into problems with its position.
func decodeProblems(ix *docIndex, err, fallback error) []Problem {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		line, col := de.Position()
		key := keyPath(de.Key())
		if p, ok := ix.keyAt[linecol{line, col}]; ok {
			key = p
		}
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if key == "" {
			key, msg = "syntax", fmt.Sprintf("%s (column %d)", msg, col)
		}
		return []Problem{{Line: line, Key: key, Message: msg}}
	}
	if err == nil {
		err = fallback
	}
	return []Problem{{Key: "syntax", Message: strings.TrimPrefix(err.Error(), "toml: ")}}
}

// unknownKey turns one strict-mode error into a problem naming the full
// key path (the decoder gives command_rules[1].foo only as foo).
func unknownKey(ix *docIndex, de *toml.DecodeError) Problem {
	line, col := de.Position()
	key, ok := ix.keyAt[linecol{line, col}]
	if !ok {
		key = keyPath(de.Key())
	}
	return Problem{Line: line, Key: key, Message: "unknown key"}
}

// keyPath renders a decoder's key with the quoting of joinKey.
func keyPath(k toml.Key) string {
	var p string
	for _, part := range k {
		p = joinKey(p, part)
	}
	return p
}

// Entry is one policy that List shows.
type Entry struct {
	// Name is what Load and --policy accept.
	Name string `json:"name"`
	// Title is the policy's name key ("" when it does not load).
	Title string `json:"title"`
	// Source is "embedded" for a shipped pack, else the file path.
	Source string `json:"source"`
	// SHA256 is the policy hash (for --policy-sha256).
	SHA256 string `json:"sha256"`
	// Err is why a data-dir policy does not load, or nil.
	Err error `json:"-"`
}

// SourceEmbedded is the Source of a shipped pack.
const SourceEmbedded = "embedded"

// List returns the shipped packs, then the policies in
// <dataDir>/policies/*.toml, each sorted by name. The packs are listed even
// when that folder is empty or missing. A data-dir policy that does not load
// is listed with its error.
func List(dataDir string) ([]Entry, error) {
	var out []Entry
	for _, n := range Packs() {
		b, _ := PackBytes(n)
		e := Entry{Name: n, Source: SourceEmbedded, SHA256: Hash(b)}
		p, err := Parse(n+".toml", b, Options{})
		if err != nil {
			e.Err = err
		} else {
			e.Title = p.Name()
		}
		out = append(out, e)
	}
	if dataDir == "" {
		return out, nil
	}
	dir := filepath.Join(dataDir, "policies")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("policy list %s: %w", dir, err)
	}
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".toml") || de.IsDir() {
			continue
		}
		name := strings.TrimSuffix(de.Name(), ".toml")
		path := filepath.Join(dir, de.Name())
		e := Entry{Name: name, Source: path}
		_, data, err := readFile(path)
		if err != nil {
			e.Err = err
			out = append(out, e)
			continue
		}
		e.SHA256 = Hash(data)
		p, err := Parse(path, data, Options{})
		switch {
		case err != nil:
			e.Err = err
		case slices.Contains(Packs(), name):
			e.Title = p.Name()
			e.Err = fmt.Errorf("%w: %q is also a shipped pack; load this file by its path", ErrAmbiguous, name)
		default:
			e.Title = p.Name()
		}
		out = append(out, e)
	}
	return out, nil
}
