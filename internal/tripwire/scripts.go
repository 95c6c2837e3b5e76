package tripwire

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/verdict"
)

// This file decides whether the code a command runs from a file has been
// reviewed. The workspace is read-only to commands and was reviewed with
// the task; a script the same command writes first (`curl -o x URL; sh x`,
// `printf … > $TMPDIR/s; sh $TMPDIR/s`), or that lives where commands
// write (the scratch directory, $HOME and $TMPDIR of the sandbox, a
// writable root), is code no check has seen: the program that runs it is
// as unknown as one computed at run time.

// scratchPrefixes are the directories commands write to in every tier:
// the scratch tmpfs is $HOME and $TMPDIR (native tier), /tmp (container
// tier), and /dev/shm is a second view of it.
var scratchPrefixes = []string{"/tmp", "/var/tmp", "/dev/shm"}

// unreviewed is the finding on one script file.
type unreviewed struct {
	code verdict.Code
	why  string
}

// scriptFinding checks the files a command runs as code, and its program
// when it names a file. It returns nil when all were reviewed.
func (t *Tripwire) scriptFinding(v *View, c *shell.Command) *unreviewed {
	for _, w := range c.Scripts {
		if u := t.fileOrigin(v, w); u != nil {
			u.why = fmt.Sprintf("%s runs %s: %s", quote(c.Name), quote(w.Match), u.why)
			return u
		}
	}
	if pw := c.ProgramWord; !c.Dynamic && pw.Static && strings.Contains(pw.Value, "/") {
		if u := t.fileOrigin(v, pw); u != nil {
			u.why = fmt.Sprintf("program %s: %s", quote(pw.Value), u.why)
			return u
		}
	}
	return nil
}

// fileOrigin reports why a file named by w holds unreviewed code.
func (t *Tripwire) fileOrigin(v *View, w shell.Word) *unreviewed {
	return t.fileOriginDepth(v, w, 0)
}

// maxVarDepth bounds how far a script name is followed through variables
// (x=$y; y=/dev/stdin).
const maxVarDepth = 3

func (t *Tripwire) fileOriginDepth(v *View, w shell.Word, depth int) *unreviewed {
	a := v.Command
	if w.Match == "-" || shell.IsFDPath(w.Match) {
		return &unreviewed{verdict.CmdInterpreterStdin, "it is a file descriptor, so the code is data read at run time"}
	}
	if !w.Static {
		if strings.Contains(w.Match, "$(") || strings.Contains(w.Match, "`") {
			return &unreviewed{verdict.CmdDynamicProgram, "its name is computed by a command substitution"}
		}
		// A name held in a variable the script sets (x=/dev/stdin; sh
		// "$x", for s in $TMPDIR/*; do sh "$s"; done) is each value the
		// variable can take.
		if name, rest, ok := varRef(w.Match); ok && depth < maxVarDepth {
			for _, val := range assignedValues(a, name) {
				if val == nil {
					return &unreviewed{verdict.CmdDynamicProgram, fmt.Sprintf("its name comes from $%s, which the script sets at run time", name)}
				}
				nw := shell.Word{Static: val.Static && val.Value+rest != "", Value: val.Value + rest, Match: val.Match + rest}
				if !nw.Static {
					nw.Value = ""
				}
				if u := t.fileOriginDepth(v, nw, depth+1); u != nil {
					return u
				}
			}
		}
	}
	form, formOK := w.PathForm()
	for _, p := range a.Written {
		if pf, ok := p.PathForm(); formOK && ok && pf == form || p.Match == w.Match {
			return &unreviewed{verdict.CmdDynamicProgram, "the same command writes it first, so its content is decided at run time"}
		}
	}
	if scratchWord(w) && !t.inWorkspace(form) {
		return &unreviewed{verdict.CmdDynamicProgram, "it lies in the scratch directory ($HOME, $TMPDIR, /tmp), where commands write files no check has read"}
	}
	if !formOK {
		return nil
	}
	relative := form != "" && form[0] != '/' && form[0] != '~'
	if a.WritesUnknown != "" && t.inUnknownWrite(v, form, relative) {
		return &unreviewed{verdict.CmdDynamicProgram, fmt.Sprintf("%s in the same command writes files whose names the check cannot know where it lies", a.WritesUnknown)}
	}
	if relative && !v.cwdKnown {
		return &unreviewed{verdict.CmdDynamicProgram, "the directory it is in is computed at run time"}
	}
	if !w.Static || strings.ContainsAny(form, "*?[") {
		return nil
	}
	dirs := []string{t.workspace}
	if relative && v.cwdKnown {
		dirs = v.cwds
	}
	for _, d := range dirs {
		p := filepath.FromSlash(form)
		if relative {
			p = filepath.Join(d, p)
		}
		res, err := t.resolveName(p)
		if errors.Is(err, errMagicLink) {
			return &unreviewed{verdict.CmdInterpreterStdin, "it leads through /proc to a file descriptor"}
		}
		if err != nil {
			continue
		}
		if shell.IsFDPath(filepath.ToSlash(res)) {
			return &unreviewed{verdict.CmdInterpreterStdin, "it leads to a file descriptor, so the code is data read at run time"}
		}
		if t.underAny(res, t.cfg.WritableRoots) {
			return &unreviewed{verdict.CmdDynamicProgram, "it lies in a writable root, where commands write files no check has read"}
		}
		if t.overlayChanged(p, res) {
			return &unreviewed{verdict.CmdDynamicProgram, "an earlier command of the session changed it in the workspace overlay, so its content is not the file the check can read"}
		}
		if t.inWorkspace(filepath.ToSlash(res)) {
			continue
		}
		if relative && scratchPath(filepath.ToSlash(res)) {
			return &unreviewed{verdict.CmdDynamicProgram, "the command changes to the scratch directory, where commands write files no check has read"}
		}
	}
	return nil
}

// inWorkspace reports a cleaned absolute path inside the workspace (which
// may itself lie under /tmp).
func (t *Tripwire) inWorkspace(p string) bool {
	return t.workspace != "" && p != "" && p[0] == '/' && t.within(filepath.FromSlash(p), t.workspace)
}

// scratchWord reports a word naming a file in the scratch directory:
// $TMPDIR/…, $HOME/…, ~/…, or a path under /tmp, /var/tmp or /dev/shm.
func scratchWord(w shell.Word) bool {
	m := w.Match
	for _, v := range []string{"$TMPDIR", "${TMPDIR", "$HOME", "${HOME"} {
		if strings.HasPrefix(m, v) {
			return true
		}
	}
	f, ok := w.PathForm()
	if !ok {
		return false
	}
	return strings.HasPrefix(f, "~") || scratchPath(f)
}

func scratchPath(p string) bool {
	p = path.Clean(p)
	for _, s := range scratchPrefixes {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

// varRef splits a word's match text that starts with $NAME or ${NAME}
// into the name and the rest.
func varRef(m string) (name, rest string, ok bool) {
	switch {
	case strings.HasPrefix(m, "${"):
		end := strings.IndexByte(m, '}')
		if end < 0 {
			return "", "", false
		}
		name, rest = m[2:end], m[end+1:]
	case strings.HasPrefix(m, "$"):
		i := 1
		for i < len(m) && (m[i] == '_' || m[i] >= 'a' && m[i] <= 'z' || m[i] >= 'A' && m[i] <= 'Z' || i > 1 && m[i] >= '0' && m[i] <= '9') {
			i++
		}
		name, rest = m[1:i], m[i:]
	default:
		return "", "", false
	}
	if name == "" || strings.ContainsAny(name, ":-=?+#%/") {
		return "", "", false
	}
	return name, rest, true
}

// assignedValues returns every value the script gives the variable name;
// nil stands for a value read at run time (read, getopts, a loop over
// "$@").
func assignedValues(a *shell.Analysis, name string) []*shell.Word {
	var out []*shell.Word
	add := func(as shell.Assign) {
		if as.Name != name {
			return
		}
		switch as.Form {
		case "read", "getopts", "printf -v":
			out = append(out, nil)
			return
		}
		if as.Value.Match == "" && !as.Value.Static && as.Form == "for" {
			out = append(out, nil)
			return
		}
		w := as.Value
		out = append(out, &w)
	}
	for i := range a.Commands {
		for _, as := range a.Commands[i].Assigns {
			add(as)
		}
	}
	for _, as := range a.ExpansionAssigns {
		add(as)
	}
	for _, as := range a.LoopVars {
		add(as)
	}
	return out
}

// inUnknownWrite reports whether a script's path form may lie in a
// directory that a program of the script fills with files the analysis
// cannot name (tar -x -C DIR, git clone URL DIR). Directories in scratch
// are left out: everything there is unreviewed anyway.
func (t *Tripwire) inUnknownWrite(v *View, form string, relative bool) bool {
	a := v.Command
	if form == "" || (relative && !v.cwdKnown) {
		return relative || form == ""
	}
	var scripts []string
	switch {
	case relative:
		for _, c := range v.cwds {
			scripts = append(scripts, path.Join(filepath.ToSlash(c), form))
		}
	case form[0] == '/':
		scripts = []string{form}
	default:
		return false // under a home: scratch
	}
	for _, d := range a.UnknownDirs {
		if scratchWord(d) {
			continue
		}
		df, ok := d.PathForm()
		if !ok || df == "" {
			return true // a directory computed at run time
		}
		var dirs []string
		switch {
		case df[0] == '/':
			dirs = []string{df}
		case df[0] == '~':
			continue
		case !v.cwdKnown:
			return true
		default:
			for _, c := range v.cwds {
				dirs = append(dirs, path.Join(filepath.ToSlash(c), df))
			}
		}
		for _, s := range scripts {
			for _, dir := range dirs {
				if s == dir || strings.HasPrefix(s, strings.TrimSuffix(dir, "/")+"/") {
					return true
				}
			}
		}
	}
	return false
}
