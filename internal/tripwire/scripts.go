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
	a := v.Command
	if w.Match == "-" || shell.IsFDPath(w.Match) {
		return &unreviewed{verdict.CmdInterpreterStdin, "it is a file descriptor, so the code is data read at run time"}
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
	if relative && a.WritesUnknown != "" {
		return &unreviewed{verdict.CmdDynamicProgram, fmt.Sprintf("%s in the same command writes files whose names the check cannot know", a.WritesUnknown)}
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
