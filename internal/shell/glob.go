package shell

import (
	"fmt"
	"path"
	"strings"
)

// Glob is a basename glob compiled once: path.Match syntax plus {a,b}
// alternatives. Checks run on every step, so expansion and case folding
// happen here, at load, not per match.
type Glob struct {
	src   string
	alts  []string // brace-expanded alternatives
	lower []string // the same, ASCII-lowercased, for folded matching
	kinds []altKind
	plain bool // no metacharacters: compare as a string
}

// altKind is how one alternative is matched.
type altKind uint8

const (
	altLiteral altKind = iota // compare as a string
	altPrefix                 // "python*": the name starts with the literal part
	altPattern                // path.Match
)

// CompileGlob validates and compiles a glob.
func CompileGlob(src string) (Glob, error) {
	if err := ValidGlob(src); err != nil {
		return Glob{}, err
	}
	g := Glob{src: src, alts: ExpandBraces(src)}
	g.plain = !strings.ContainsAny(src, `*?[\`)
	for _, a := range g.alts {
		g.lower = append(g.lower, strings.ToLower(a))
		k := altPattern
		switch p, star := strings.CutSuffix(a, "*"); {
		case !strings.ContainsAny(a, `*?[\`):
			k = altLiteral
		case star && !strings.ContainsAny(p, `*?[\`):
			// A name holds no "/", so "p*" matches exactly the names
			// that start with p, as path.Match decides.
			k = altPrefix
		}
		g.kinds = append(g.kinds, k)
	}
	return g, nil
}

// MustGlobs compiles a fixed list; it panics on a malformed entry, so use
// it only for lists written in the source code.
func MustGlobs(list ...string) GlobSet {
	set, err := CompileGlobs(list)
	if err != nil {
		panic(err)
	}
	return set
}

// Literals returns the names a glob without metacharacters matches
// ({a,b} alternatives expanded; lowercased for folded matching), so that
// callers can index rules by name. ok is false for a glob with *, ? or [.
func (g Glob) Literals(fold bool) (names []string, ok bool) {
	if !g.plain {
		return nil, false
	}
	if fold {
		return g.lower, true
	}
	return g.alts, true
}

// String returns the glob as written.
func (g Glob) String() string { return g.src }

// Match reports whether name matches; fold compares ASCII case-insensitively.
func (g Glob) Match(name string, fold bool) bool {
	alts := g.alts
	if fold {
		alts, name = g.lower, strings.ToLower(name)
	}
	for i, a := range alts {
		switch g.kinds[i] {
		case altLiteral:
			if a == name {
				return true
			}
		case altPrefix:
			if strings.HasPrefix(name, a[:len(a)-1]) {
				return true
			}
		default:
			if ok, err := path.Match(a, name); err == nil && ok {
				return true
			}
		}
	}
	return false
}

// GlobSet is a list of compiled globs.
type GlobSet []Glob

// CompileGlobs compiles every glob of a list.
func CompileGlobs(list []string) (GlobSet, error) {
	out := make(GlobSet, 0, len(list))
	for _, s := range list {
		g, err := CompileGlob(s)
		if err != nil {
			return nil, fmt.Errorf("glob %q: %w", s, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// Match reports whether any glob of the set matches name.
func (s GlobSet) Match(name string, fold bool) bool {
	for _, g := range s {
		if g.Match(name, fold) {
			return true
		}
	}
	return false
}

// First returns the first glob matching name.
func (s GlobSet) First(name string, fold bool) (Glob, bool) {
	for _, g := range s {
		if g.Match(name, fold) {
			return g, true
		}
	}
	return Glob{}, false
}
