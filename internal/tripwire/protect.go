package tripwire

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/verdict"
)

// This file refuses the protected paths (Options.Protected) wherever an
// intent can name them: read_file and redirections (through checkPath), and
// every word of a command that may name a file. Words are not known to be
// paths, so each one is treated as a possible path: `grep -r key .ssh` is
// refused in a workspace that holds .ssh, which is the point.

// Limits of the word analysis. Each intent gets its own budget, so that no
// script (64 brace words in 64 directories, globs over /) can make the
// check itself slow.
const (
	// maxCwds bounds the directories a script's cd commands are followed
	// to; beyond it the working directory counts as unknown.
	maxCwds = 64
	// maxBraceWords bounds the words one brace expansion yields.
	maxBraceWords = 64
	// maxNames bounds the path names examined for one intent; a script
	// that names more is too complex to clear (cmd_too_complex).
	maxNames = 8192
	// maxGlobEntries bounds the directory entries read to expand the
	// globs of one intent; beyond it a glob is matched against the list by
	// name only.
	maxGlobEntries = 16384
)

// wordScan checks the words of one intent against the list: it carries the
// directories the script may run in and the work left.
type wordScan struct {
	t        *Tripwire
	cwds     []string
	cwdKnown bool
	names    int  // path names left to examine
	entries  int  // directory entries left to read for globs
	over     bool // maxNames was reached: the words were not all checked
}

func (t *Tripwire) newScan(v *View) *wordScan {
	return &wordScan{t: t, cwds: v.cwds, cwdKnown: v.cwdKnown, names: maxNames, entries: maxGlobEntries}
}

// spend takes one name from the budget; false once it is spent.
func (s *wordScan) spend() bool {
	if s.names <= 0 {
		s.over = true
		return false
	}
	s.names--
	return true
}

// tooComplex is the denial of a script whose words exceed the budget.
func tooComplex() *Problem {
	return &Problem{verdict.CmdTooComplex, fmt.Sprintf("the script names more than %d possible paths to check against the protected paths", maxNames)}
}

// protHit is a protected path that a name reaches.
type protHit struct {
	// name is the path as the check resolved it; entry is the listed path
	// that is it or contains it.
	name, entry string
}

// at is the denial for raw, the text the intent wrote.
func (h *protHit) at(raw string) *Problem {
	what := "names " + h.name + ", inside the protected path " + h.entry
	if h.name == h.entry {
		what = "names the protected path " + h.entry
	}
	return &Problem{verdict.PathProtected, fmt.Sprintf("%s %s: IronVise hides its own data and every credential store from commands", quote(raw), what)}
}

// key is how a path is compared: lowercased where names fold.
func (t *Tripwire) key(p string) string { return pathKey(p, t.foldCase) }

// pathKey is p as the lookup maps hold it: lowercased where names fold.
func pathKey(p string, fold bool) string {
	if fold {
		return strings.ToLower(p)
	}
	return p
}

// protectedPath reports the listed path that is p or contains it, walking
// p's ancestors through the lookup map.
func (t *Tripwire) protectedPath(p string) *protHit {
	if len(t.protected) == 0 || p == "" || !filepath.IsAbs(p) {
		return nil
	}
	for d := filepath.Clean(p); ; d = filepath.Dir(d) {
		if e, ok := t.protected[t.key(d)]; ok {
			return &protHit{name: filepath.Clean(p), entry: e}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// protectedName checks one literal absolute path: as written, through the
// /proc/<pid>/root and /proc/<pid>/cwd magic links (which lead to the
// command's own root and working directory), and with its symlinks
// resolved.
func (s *wordScan) protectedName(p string) *protHit {
	t := s.t
	if !s.spend() {
		return nil
	}
	p = filepath.Clean(p)
	if h := t.protectedPath(p); h != nil {
		return h
	}
	if !t.windows {
		if rest, ok := strings.CutPrefix(p, "/proc/"); ok {
			parts := strings.SplitN(rest, "/", 3)
			if len(parts) == 3 {
				switch parts[1] {
				case "root":
					return s.protectedName("/" + parts[2])
				case "cwd":
					for _, c := range s.cwds {
						if h := s.protectedName(filepath.Join(c, parts[2])); h != nil {
							return h
						}
					}
				}
			}
		}
	}
	// A name the resolver cannot follow (a loop, a magic link) is judged
	// by its written form above; the sandbox hides the real files anyway.
	if res, err := t.resolveName(p); err == nil && res != p {
		if h := t.protectedPath(res); h != nil {
			return h
		}
	}
	return nil
}

// resolveName resolves p like resolve, starting below the workspace when p
// lies there: the workspace was resolved once, when the session started,
// and every word of every command is resolved, so its components are not
// examined again each time.
func (t *Tripwire) resolveName(p string) (string, error) {
	if p == t.workspace && p != "" {
		return p, nil
	}
	if rest, ok := strings.CutPrefix(p, t.workspace+string(filepath.Separator)); ok && t.workspace != "" {
		return t.resolveFrom(t.workspace, secretpaths.SplitPath(rest))
	}
	return t.resolve(p)
}

// cand is one string of a word that may name a path.
type cand struct {
	s string
	// pattern marks text taken from a non-static word: it may hold glob
	// characters and backslash escapes.
	pattern bool
}

// wordCands returns the strings a word may name a path by: the word itself
// and the path embedded after "=" (--key=PATH, if=PATH), after a one-letter
// option (-iPATH), after file:// and after @ (curl's @file), each brace-
// expanded as bash does when it runs as sh, with a leading ~, ~user, $HOME
// or ${HOME} replaced by every home. Words whose path depends on other
// variables or on command substitutions yield nothing: the sandbox confines
// those.
func (t *Tripwire) wordCands(w shell.Word) []cand {
	var base cand
	switch {
	case w.Static:
		base = cand{s: w.Value}
	case w.Match != "" && !strings.Contains(w.Match, "`") && !strings.Contains(w.Match, "$("):
		base = cand{s: w.Match, pattern: true}
	default:
		return nil
	}
	var out []cand
	for _, s := range embedded(base.s) {
		out = append(out, t.pathForms(cand{s: s, pattern: base.pattern})...)
	}
	return out
}

// pathForms brace-expands c and replaces a leading home reference.
func (t *Tripwire) pathForms(c cand) []cand {
	var out []cand
	for _, b := range braceExpand(c.s) {
		for _, h := range t.homeExpand(b) {
			if c.pattern && strings.ContainsAny(h, "$`") {
				continue // another variable: not knowable here
			}
			out = append(out, cand{s: h, pattern: c.pattern && !t.windows})
		}
	}
	return out
}

// embedded returns s and the paths an argument commonly carries inside it.
func embedded(s string) []string {
	out := []string{s}
	if _, v, ok := strings.Cut(s, "="); ok && v != "" {
		out = append(out, v)
	}
	if len(s) > 2 && s[0] == '-' && s[1] != '-' && pathLike(s[2:]) {
		out = append(out, s[2:])
	}
	if v, ok := strings.CutPrefix(s, "file://"); ok {
		if i := strings.IndexByte(v, '/'); i >= 0 {
			out = append(out, v[i:]) // file:///p and file://host/p
		}
	}
	if v, ok := strings.CutPrefix(s, "@"); ok && v != "" {
		out = append(out, v)
	}
	return out
}

// pathLike reports text that reads as a path rather than as more option
// letters (-rn) or a number (-20): it has a slash, or starts with a dot, a
// ~ or $HOME.
func pathLike(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "$HOME") || strings.HasPrefix(s, "${HOME}")
}

// homeExpand replaces a leading ~, ~user, $HOME or ${HOME} by every home
// the list knows (the sandbox gives commands a HOME of their own, but
// ~user is looked up in the host's passwd, and the same script may run
// elsewhere); any other string is returned as is.
func (t *Tripwire) homeExpand(s string) []string {
	var rest string
	switch {
	case strings.HasPrefix(s, "~"):
		_, r, found := strings.Cut(s, "/")
		if found {
			rest = "/" + r
		}
	case s == "$HOME" || strings.HasPrefix(s, "$HOME/"):
		rest = s[len("$HOME"):]
	case s == "${HOME}" || strings.HasPrefix(s, "${HOME}/"):
		rest = s[len("${HOME}"):]
	default:
		return []string{s}
	}
	out := make([]string, 0, len(t.list.Homes))
	for _, h := range t.list.Homes {
		out = append(out, h+rest)
	}
	return out
}

// braceExpand expands {a,b} alternatives and single-character {a..z}
// ranges, as bash does even when it runs as sh (dash does not: then the
// word names itself, which is also returned). At most maxBraceWords words.
func braceExpand(s string) []string {
	out := []string{s}
	todo := []string{s}
	for len(todo) > 0 && len(out) < maxBraceWords {
		w := todo[0]
		todo = todo[1:]
		pre, alts, post, ok := firstBrace(w)
		if !ok {
			continue
		}
		for _, a := range alts {
			n := pre + a + post
			if !slices.Contains(out, n) && len(out) < maxBraceWords {
				out = append(out, n)
				todo = append(todo, n)
			}
		}
	}
	return out
}

// firstBrace finds the first brace group with alternatives.
func firstBrace(s string) (pre string, alts []string, post string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
			continue
		case '{':
		default:
			continue
		}
		depth, parts, start := 0, []string(nil), i+1
		for j := i + 1; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '{':
				depth++
			case '}':
				if depth > 0 {
					depth--
					continue
				}
				parts = append(parts, s[start:j])
				if len(parts) > 1 {
					return s[:i], parts, s[j+1:], true
				}
				if r, isRange := charRange(parts[0]); isRange {
					return s[:i], r, s[j+1:], true
				}
				j = len(s) // not a brace expansion: look further on
			case ',':
				if depth == 0 {
					parts = append(parts, s[start:j])
					start = j + 1
				}
			}
		}
	}
	return "", nil, "", false
}

// charRange expands "a..e" to a b c d e.
func charRange(s string) ([]string, bool) {
	if len(s) != 4 || s[1:3] != ".." {
		return nil, false
	}
	lo, hi := s[0], s[3]
	step := 1
	if lo > hi {
		step = -1
	}
	var out []string
	for c := int(lo); ; c += step {
		out = append(out, string(rune(c)))
		if c == int(hi) {
			return out, true
		}
	}
}

// hasMeta reports an unescaped glob character.
func hasMeta(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// unescape removes the backslash escapes of a pattern.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// compMatch matches one path component against a pattern component with
// the shell's rules: a leading dot must be matched explicitly (`*` does not
// match .ssh, `.*` does).
func (t *Tripwire) compMatch(pat, name string, pattern bool) bool {
	if t.foldCase {
		pat, name = strings.ToLower(pat), strings.ToLower(name)
	}
	if !pattern || !hasMeta(pat) {
		if pattern {
			pat = unescape(pat)
		}
		return pat == name
	}
	if strings.HasPrefix(name, ".") && !strings.HasPrefix(pat, ".") && !strings.HasPrefix(pat, `\.`) {
		return false
	}
	ok, err := path.Match(pat, name)
	if err != nil {
		return unescape(pat) == name
	}
	return ok
}

// globHit checks an absolute glob pattern by expanding it on the file
// system as the shell would (a glob only ever names files that exist), so
// a symlink among the matches is followed to where it leads. When the
// entry budget runs out, the pattern is matched against the list by name
// instead: every component of a listed path must match.
func (s *wordScan) globHit(pat string) *protHit {
	t := s.t
	comps := secretpaths.SplitPath(pat)
	matches, complete := s.expandGlob(comps)
	for _, p := range matches {
		if h := s.protectedName(p); h != nil {
			return h
		}
	}
	if complete {
		return nil
	}
	for _, e := range t.list.Paths {
		ec := secretpaths.SplitPath(e)
		if len(comps) < len(ec) {
			continue
		}
		match := true
		for j := range ec {
			if !t.compMatch(comps[j], ec[j], true) {
				match = false
				break
			}
		}
		if match {
			return &protHit{name: pat, entry: e}
		}
	}
	return nil
}

// expandGlob expands pattern components from the root on the file system
// within the entry budget; complete is false when the budget ran out.
func (s *wordScan) expandGlob(comps []string) (matches []string, complete bool) {
	t := s.t
	dirs := []string{string(filepath.Separator)}
	for _, c := range comps {
		var next []string
		if !hasMeta(c) {
			for _, d := range dirs {
				next = append(next, filepath.Join(d, unescape(c)))
			}
			dirs = next
			continue
		}
		for _, d := range dirs {
			ents, err := t.fs.ReadDir(d)
			if err != nil {
				continue // the shell leaves the pattern as is: no such file
			}
			if s.entries -= len(ents); s.entries < 0 {
				return next, false
			}
			for _, e := range ents {
				if t.compMatch(c, e.Name(), true) {
					next = append(next, filepath.Join(d, e.Name()))
				}
			}
		}
		dirs = next
	}
	return dirs, true
}

// suffixHit is the check of a relative name when the working directory is
// unknown (a cd to a computed directory): the name is refused when its
// leading components are the trailing components of a listed path, so
// `cd "$D" && cat .ssh/id_ed25519` is refused wherever $D leads.
func (s *wordScan) suffixHit(c cand) *protHit {
	t := s.t
	if !s.spend() {
		return nil
	}
	var comps []string
	for _, x := range secretpaths.SplitPath(c.s) {
		if x == "." || (x == ".." && len(comps) == 0) {
			continue
		}
		comps = append(comps, x)
	}
	if len(comps) == 0 {
		return nil
	}
	for _, e := range t.list.Paths {
		ec := secretpaths.SplitPath(e)
		for k := 1; k <= len(ec) && k <= len(comps); k++ {
			match := true
			for j := 0; j < k; j++ {
				if !t.compMatch(comps[j], ec[len(ec)-k+j], c.pattern) {
					match = false
					break
				}
			}
			if match {
				return &protHit{name: c.s + " (in a directory a cd computes)", entry: e}
			}
		}
	}
	return nil
}

// candHit checks one candidate against the list, relative names against
// every directory the script may be in.
func (s *wordScan) candHit(c cand) *protHit {
	if c.s == "" {
		return nil
	}
	var paths []string
	switch {
	case filepath.IsAbs(c.s):
		paths = []string{c.s}
	case !s.cwdKnown:
		return s.suffixHit(c)
	default:
		for _, d := range s.cwds {
			paths = append(paths, filepath.Join(d, c.s))
		}
	}
	for _, p := range paths {
		var h *protHit
		if c.pattern && hasMeta(p) {
			h = s.globHit(filepath.Clean(p))
		} else {
			if c.pattern {
				p = unescape(p)
			}
			h = s.protectedName(p)
		}
		if h != nil {
			return h
		}
	}
	return nil
}

// wordHit checks every candidate of a word.
func (s *wordScan) wordHit(w shell.Word) *protHit {
	for _, c := range s.t.wordCands(w) {
		if h := s.candHit(c); h != nil {
			return h
		}
	}
	return nil
}

// cwds returns the directories a script's commands may run in: the
// workspace, and every directory its cd and pushd commands can reach,
// applied in source order (so `cd a; cd b` reaches a/b); a ".." target
// adds every ancestor, since a loop may repeat it. It reports false when a
// target is computed at run time, CDPATH is assigned, or there are more
// than maxCwds directories.
func (t *Tripwire) cwds(a *shell.Analysis) ([]string, bool) {
	set := []string{t.workspace}
	if !a.ChangesDir {
		return set, true
	}
	for _, lv := range a.LoopVars {
		if lv.Name == "CDPATH" {
			return nil, false
		}
	}
	climbs := false
	for _, c := range a.Commands {
		for _, as := range c.Assigns {
			if as.Name == "CDPATH" {
				return nil, false // cd would search it
			}
		}
		if c.Program != "cd" && c.Program != "pushd" {
			continue
		}
		targets, ok := t.cdTargets(c)
		if !ok {
			return nil, false
		}
		for _, tg := range targets {
			if slices.Contains(secretpaths.SplitPath(tg), "..") {
				climbs = true
			}
		}
		var next []string
		for _, d := range set {
			for _, tg := range targets {
				if !filepath.IsAbs(tg) {
					tg = filepath.Join(d, tg)
				}
				next = append(next, filepath.Clean(tg))
			}
		}
		set = append(set, next...)
		slices.Sort(set)
		set = slices.Compact(set)
		if len(set) > maxCwds {
			return nil, false
		}
	}
	if climbs {
		for _, d := range slices.Clone(set) {
			for p := filepath.Dir(d); !slices.Contains(set, p); p = filepath.Dir(p) {
				set = append(set, p)
			}
		}
	}
	return set, true
}

// cdTargets returns the directories one cd or pushd may change to; false
// when one cannot be known statically.
func (t *Tripwire) cdTargets(c shell.Command) ([]string, bool) {
	args := c.Args
	for len(args) > 0 && args[0].Static && len(args[0].Value) > 1 && strings.HasPrefix(args[0].Value, "-") {
		if args[0].Value == "--" {
			args = args[1:]
			break
		}
		if c.Program == "pushd" && strings.Trim(args[0].Value[1:], "0123456789") == "" {
			return nil, true // pushd -N rotates the stack: no new directory
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return t.list.Homes, true // cd alone goes home
	}
	w := args[0]
	if w.Static {
		switch {
		case w.Value == "-":
			return nil, true // back to a directory already counted
		case c.Program == "pushd" && strings.HasPrefix(w.Value, "+"):
			return nil, true
		}
	}
	base := cand{s: w.Value}
	if !w.Static {
		if w.Match == "" || strings.ContainsAny(w.Match, "`") || strings.Contains(w.Match, "$(") {
			return nil, false
		}
		base = cand{s: w.Match, pattern: true}
	}
	var out []string
	for _, cd := range t.pathForms(base) {
		if cd.pattern && hasMeta(cd.s) {
			return nil, false // a cd into a glob: the shell picks a match
		}
		s := cd.s
		if cd.pattern {
			s = unescape(s)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, false // a variable other than HOME
	}
	return out, true
}

// protectedWords checks the words of every command (its program, its
// arguments, its assignments) and returns the first protected path named.
func (t *Tripwire) protectedWords(v *View) *Problem {
	if len(t.list.Paths) == 0 {
		return nil
	}
	a := v.Command
	s := t.newScan(v)
	seen := map[string]bool{}
	check := func(w shell.Word) *Problem {
		if !w.Static && w.Match == "" {
			return nil
		}
		k := fmt.Sprint(w.Static, "\x00", w.Value, "\x00", w.Match)
		if seen[k] {
			return nil
		}
		seen[k] = true
		if h := s.wordHit(w); h != nil {
			raw := w.Match
			if w.Static {
				raw = w.Value
			}
			return h.at(raw)
		}
		return nil
	}
	for _, c := range a.Commands {
		for _, as := range c.Assigns {
			if p := check(as.Value); p != nil {
				return p
			}
		}
		if c.AssignOnly {
			continue
		}
		// A program name without a slash is looked up in PATH, never
		// in the working directory.
		if pw := c.ProgramWord; !pw.Static || pathLike(pw.Value) {
			if p := check(pw); p != nil {
				return p
			}
		}
		operands := false // after "--"
		for _, w := range c.Args {
			if w.Static && w.Value == "--" {
				operands = true
				continue
			}
			// An option word (-rn, --color=auto) is no file name, though
			// it may carry one (-i~/.ssh/id, --key=~/.netrc): only what it
			// carries is checked.
			if w.Static && len(w.Value) > 1 && w.Value[0] == '-' && !operands {
				for _, e := range embedded(w.Value)[1:] {
					if p := check(shell.Word{Static: true, Value: e, Match: e}); p != nil {
						return p
					}
				}
				continue
			}
			if p := check(w); p != nil {
				return p
			}
		}
	}
	if s.over {
		return tooComplex()
	}
	return nil
}
