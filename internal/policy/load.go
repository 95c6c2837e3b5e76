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
// "name.toml"). A reference containing a path separator is a path; a bare
// reference is a pack, a data-dir policy or a file in the working
// directory, and one that names more than one of these is ambiguous and
// does not load (ErrAmbiguous): pass a path instead.
func Load(ref string, opt Options) (*Policy, error) {
	file, data, err := resolve(ref, opt.DataDir)
	if err != nil {
		return nil, err
	}
	return Parse(file, data, opt)
}

func resolve(ref, dataDir string) (file string, data []byte, err error) {
	if ref == "" {
		return "", nil, errors.New("policy: empty policy reference (pass a file path or a name from `ironvise policy list`)")
	}
	if strings.ContainsAny(ref, `/`+string(filepath.Separator)) {
		return readFile(ref)
	}
	name := strings.TrimSuffix(ref, ".toml")
	pack, isPack := PackBytes(name)
	var found []string
	if isPack {
		found = append(found, "a shipped pack")
	}
	var local string
	if dataDir != "" && validName(name) {
		local = filepath.Join(dataDir, "policies", name+".toml")
		if _, err := os.Stat(local); err == nil {
			found = append(found, local)
		} else {
			local = ""
		}
	}
	cwd := false
	if st, err := os.Stat(ref); err == nil && st.Mode().IsRegular() {
		cwd = true
		found = append(found, "./"+ref)
	}
	// A bare name that means two things is refused: otherwise a file that
	// an agent wrote into the working directory (its workspace, often)
	// could stand in for the pack the operator named.
	if len(found) > 1 {
		return "", nil, fmt.Errorf("policy %s: %w: it names %s; pass a path (./%s or the data-dir path) to choose a file", ref, ErrAmbiguous, strings.Join(found, " and "), ref)
	}
	switch {
	case isPack:
		return name + ".toml", pack, nil
	case local != "":
		return readFile(local)
	case cwd:
		return readFile(ref)
	}
	where := "a shipped pack (" + strings.Join(Packs(), ", ") + ")"
	if dataDir != "" {
		where += " or a file in " + filepath.Join(dataDir, "policies")
	}
	return "", nil, fmt.Errorf("policy %s: %w: it is not a file, nor %s; see `ironvise policy list`", ref, ErrNotFound, where)
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
