package overlay

import (
	"fmt"
	"path"
	"strings"
)

// Glob is a compiled forbidden-path glob. The syntax: globs are
// slash-separated and anchored at the workspace root; within a component
// `*` is any run of characters, `?` one character and `[...]` a class
// (path.Match syntax, `\` escapes); a component `**` is zero or more
// whole components. So `.env` is only the root's, `**/.env` is any
// depth's, and `.git/hooks/**` is the hooks directory and everything
// under it.
type Glob struct {
	src   string
	comps []string
}

// CompileGlob validates and compiles a glob.
func CompileGlob(src string) (Glob, error) {
	g := strings.TrimPrefix(src, "/")
	if g == "" {
		return Glob{}, fmt.Errorf("overlay: glob %q is empty", src)
	}
	comps := strings.Split(g, "/")
	for _, c := range comps {
		switch {
		case c == "":
			return Glob{}, fmt.Errorf("overlay: glob %q has an empty component", src)
		case c == "**":
		case strings.Contains(c, "**"):
			return Glob{}, fmt.Errorf("overlay: glob %q: ** must be a whole component", src)
		default:
			if _, err := path.Match(c, ""); err != nil {
				return Glob{}, fmt.Errorf("overlay: glob %q: %w", src, err)
			}
		}
	}
	return Glob{src: src, comps: comps}, nil
}

// String returns the glob as written.
func (g Glob) String() string { return g.src }

// Match reports whether the slash-separated relative path p matches.
func (g Glob) Match(p string) bool {
	return matchComps(g.comps, strings.Split(p, "/"))
}

func matchComps(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			// Collapse runs of ** and try every split point.
			for len(g) > 0 && g[0] == "**" {
				g = g[1:]
			}
			if len(g) == 0 {
				return true
			}
			for i := 0; i <= len(p); i++ {
				if matchComps(g, p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], p[0]); !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}

// Forbidden is a change that touches a forbidden glob.
type Forbidden struct {
	Change Change `json:"change"`
	Glob   string `json:"glob"`
}

// Match returns the changes of cs whose path (or, for a rename, the old
// path) matches one of globs, in change set order. A malformed glob is
// an error, never a silent non-match: a typo must not open a hole.
func Match(cs *ChangeSet, globs []string) ([]Forbidden, error) {
	compiled := make([]Glob, 0, len(globs))
	for _, s := range globs {
		g, err := CompileGlob(s)
		if err != nil {
			return nil, err
		}
		compiled = append(compiled, g)
	}
	var out []Forbidden
	if cs == nil {
		return nil, nil
	}
	for _, c := range cs.Changes {
		for _, g := range compiled {
			if g.Match(c.Path) || (c.From != "" && g.Match(c.From)) {
				out = append(out, Forbidden{Change: c, Glob: g.src})
				break
			}
		}
	}
	return out, nil
}
