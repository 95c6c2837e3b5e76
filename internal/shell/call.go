package shell

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// call turns one simple command into a Command, then walks the
// substitutions in its words.
func (w *walker) call(ce *syntax.CallExpr, redirs []Redirect, c ctx) {
	cmd := Command{PipePos: c.pipePos, StdinRedirected: c.stdin, Redirs: redirs, Offset: c.offset(ce.Pos()),
		Derived: c.wrapper != "", Wrapper: c.wrapper}
	bare := len(ce.Args) == 0
	for _, as := range ce.Assigns {
		if as.Name == nil || as.Array != nil || as.Index != nil {
			w.unsupported(as)
			return
		}
		a := Assign{Name: as.Name.Value, Form: "prefix"}
		if bare {
			a.Form = "bare"
		}
		if as.Value != nil {
			a.Value = makeWord(as.Value, c.src)
		}
		cmd.Assigns = append(cmd.Assigns, a)
		w.noteAssign(a.Name)
	}
	words := make([]Word, len(ce.Args))
	for i, wd := range ce.Args {
		words[i] = makeWord(wd, c.src)
	}
	if bare {
		cmd.AssignOnly = true
		w.add(cmd)
	} else {
		cmd.ProgramWord, cmd.Args = words[0], words[1:]
		w.emit(cmd, c)
	}
	for _, as := range ce.Assigns {
		w.substs(as.Value, c.deeper())
	}
	for _, wd := range ce.Args {
		w.substs(wd, c.deeper())
	}
}

// add appends a finished command and records the script-level facts it
// implies.
func (w *walker) add(cmd Command) {
	w.ncmd++
	if w.ncmd > MaxCommands {
		w.tooComplex(fmt.Sprintf("script exceeds %d commands or depth %d", MaxCommands, MaxDepth))
		return
	}
	switch cmd.Program {
	case "cd", "pushd", "popd":
		w.a.ChangesDir = true
	}
	if cmd.Program != "" && slices.Contains(w.funcs, cmd.Program) && w.a.RecursiveFunction == "" {
		w.a.RecursiveFunction = cmd.Program
	}
	w.a.Commands = append(w.a.Commands, cmd)
}

func (w *walker) noteAssign(name string) {
	if name == "TMPDIR" {
		w.a.AssignsTmpDir = true
	}
}

// emit resolves the program of cmd, appends it, then appends the commands it
// runs: a wrapper's derived program, find -exec sequences, or the commands
// of a static sh -c script.
func (w *walker) emit(cmd Command, c ctx) {
	if w.stopped() {
		return
	}
	pw := cmd.ProgramWord
	if !pw.Static {
		cmd.Dynamic, cmd.DynamicReason = true, "program word "+quoteMatch(pw.Match)+" is computed at run time"
		w.add(cmd)
		return
	}
	cmd.Name = pw.Value
	cmd.Program = base(pw.Value, w.opt.FoldCase)
	prog, fold := cmd.Program, w.opt.FoldCase
	if DynamicBuiltins.Match(prog, fold) {
		cmd.Dynamic, cmd.DynamicReason = true, prog
		w.noteDownloadExec(cmd.Args, prog)
	}
	switch prog {
	case "export", "readonly":
		for _, a := range cmd.Args {
			if name, val, ok := splitAssign(a); ok {
				cmd.Assigns = append(cmd.Assigns, Assign{Name: name, Value: val, Form: prog})
				w.noteAssign(name)
			}
		}
	case "read":
		for _, a := range cmd.Args {
			if a.Static && !strings.HasPrefix(a.Value, "-") {
				cmd.Assigns = append(cmd.Assigns, Assign{Name: a.Value, Form: "read"})
				w.noteAssign(a.Value)
			}
		}
	}

	var derived [][]Word // word lists of derived commands
	var viaXargs bool
	var script *Word
	switch {
	case cmd.Dynamic:
	case hasWrapper(prog):
		spec := wrappers[prog]
		i := skipOptions(cmd.Args, spec.optArgs)
		if spec.skipOperand {
			i++
		}
		if i < len(cmd.Args) {
			derived = append(derived, cmd.Args[i:])
		}
	case prog == "env":
		i, dyn := w.envArgs(&cmd)
		if dyn {
			cmd.Dynamic, cmd.DynamicReason = true, "env -S splits a string into a command"
		} else if i < len(cmd.Args) {
			derived = append(derived, cmd.Args[i:])
		}
	case prog == "xargs":
		i := skipOptions(cmd.Args, xargsOptArgs)
		if i < len(cmd.Args) {
			derived = append(derived, cmd.Args[i:])
		} else {
			derived = append(derived, []Word{{Static: true, Value: "echo", Match: "echo"}})
		}
		viaXargs = true
	case prog == "busybox":
		if i := skipOptions(cmd.Args, nil); i < len(cmd.Args) {
			derived = append(derived, cmd.Args[i:])
		}
	case prog == "find":
		derived = findExecs(cmd.Args)
	case IsShell(prog, fold):
		script = w.shellArgs(&cmd)
	case IsInterpreter(prog, fold):
		w.interpArgs(&cmd)
	}
	w.add(cmd)
	for _, ws := range derived {
		d := Command{
			ProgramWord: ws[0], Args: ws[1:], Derived: true, Wrapper: prog,
			PipePos: cmd.PipePos, StdinRedirected: cmd.StdinRedirected, Offset: cmd.Offset,
		}
		if viaXargs {
			// xargs appends words read from stdin: an interpreter it runs
			// gets code (or -c) that no static check can see.
			if d.ProgramWord.Static && IsInterpreter(base(d.ProgramWord.Value, fold), fold) {
				d.Dynamic, d.DynamicReason = true, "xargs passes run-time arguments to an interpreter"
				d.Name, d.Program = d.ProgramWord.Value, base(d.ProgramWord.Value, fold)
				w.add(d)
				continue
			}
		}
		if !d.ProgramWord.Static {
			d.Dynamic, d.DynamicReason = true, prog+" runs "+quoteMatch(d.ProgramWord.Match)+", computed at run time"
			w.add(d)
			continue
		}
		w.emit(d, c)
	}
	if script != nil {
		if c.nest+1 > MaxScriptNest {
			w.tooComplex(fmt.Sprintf("sh -c scripts nested deeper than %d", MaxScriptNest))
			return
		}
		// A nested shell is a new process: the caller's functions are not
		// visible in it, so recursion is tracked per script.
		saved := w.funcs
		w.funcs = nil
		w.script(script.Value, c.nest+1, c.depth+1, cmd.PipePos, cmd.StdinRedirected, cmd.Offset, prog+" -c")
		w.funcs = saved
	}
}

func hasWrapper(prog string) bool { _, ok := wrappers[prog]; return ok }

// skipOptions returns the index of the first operand: words starting with
// "-" are options, an option in optArgs also takes the next word, and "--"
// ends the options.
func skipOptions(args []Word, optArgs []string) int {
	i := 0
	for i < len(args) {
		m := args[i].Match
		if m == "--" {
			return i + 1
		}
		if !strings.HasPrefix(m, "-") || m == "-" {
			return i
		}
		if slices.Contains(optArgs, m) {
			i++
		}
		i++
	}
	return i
}

// envArgs skips env's options and NAME=value words, recording the latter as
// assignments, and returns the index of the program. dyn is true for -S /
// --split-string, which builds the command from one string at run time.
func (w *walker) envArgs(cmd *Command) (i int, dyn bool) {
	for i < len(cmd.Args) {
		m := cmd.Args[i].Match
		switch {
		case m == "-S" || m == "--split-string" || strings.HasPrefix(m, "--split-string=") ||
			(strings.HasPrefix(m, "-") && !strings.HasPrefix(m, "--") && strings.Contains(m, "S")):
			return i, true
		case m == "--":
			i++
			continue
		case slices.Contains(envOptArgs, m):
			i += 2
			continue
		case strings.HasPrefix(m, "-"):
			i++
			continue
		}
		name, val, ok := splitAssign(cmd.Args[i])
		if !ok {
			return i, false
		}
		cmd.Assigns = append(cmd.Assigns, Assign{Name: name, Value: val, Form: "env"})
		w.noteAssign(name)
		i++
	}
	return i, false
}

// shellArgs reads a shell interpreter's options. It returns the -c script
// word when it is static, marks the command dynamic when it is not, and sets
// InlineCode, ScriptFile or StdinProgram.
func (w *walker) shellArgs(cmd *Command) *Word {
	hasC, hasS := false, false
	i := 0
	for i < len(cmd.Args) {
		m := cmd.Args[i].Match
		if m == "--" {
			i++
			break
		}
		if m == "-" || !(strings.HasPrefix(m, "-") || strings.HasPrefix(m, "+")) {
			break
		}
		if slices.Contains(interpOptArgs["shell"], m) {
			i += 2
			continue
		}
		if !strings.HasPrefix(m, "--") {
			hasC = hasC || strings.Contains(m[1:], "c")
			hasS = hasS || strings.Contains(m[1:], "s")
		}
		i++
	}
	if hasC {
		cmd.InlineCode = true
		if i >= len(cmd.Args) {
			cmd.Dynamic, cmd.DynamicReason = true, cmd.Program+" -c without a script"
			return nil
		}
		sw := cmd.Args[i]
		if !sw.Static {
			cmd.Dynamic, cmd.DynamicReason = true, cmd.Program+" -c with a script computed at run time"
			w.noteDownloadExec(cmd.Args[i:i+1], cmd.Program+" -c")
			return nil
		}
		return &sw
	}
	if i < len(cmd.Args) && cmd.Args[i].Match != "-" && !hasS {
		cmd.ScriptFile = true
		return nil
	}
	cmd.StdinProgram = true
	return nil
}

// interpArgs sets InlineCode or StdinProgram for a non-shell interpreter.
func (w *walker) interpArgs(cmd *Command) {
	optArgs := interpOptArgs[family(cmd.Program, w.opt.FoldCase)]
	i := 0
	for i < len(cmd.Args) {
		m := cmd.Args[i].Match
		if isInlineFlag(cmd.Program, m, w.opt.FoldCase) {
			cmd.InlineCode = true
			return
		}
		if m == "--" {
			i++
			break
		}
		if m == "-" || !strings.HasPrefix(m, "-") {
			break
		}
		if slices.Contains(optArgs, m) {
			if m == "-m" { // python -m runs a module, not stdin
				return
			}
			i++
		}
		i++
	}
	if i >= len(cmd.Args) || cmd.Args[i].Match == "-" {
		cmd.StdinProgram = true
	}
}

// findExecs returns the command word lists of find's -exec, -execdir, -ok
// and -okdir primaries, each ending at ";" or at "+" after "{}".
func findExecs(args []Word) [][]Word {
	var out [][]Word
	for i := 0; i < len(args); i++ {
		switch args[i].Match {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) {
			v := args[j].Match
			if v == ";" || (v == "+" && j > i+1 && args[j-1].Match == "{}") {
				break
			}
			j++
		}
		if j > i+1 {
			out = append(out, args[i+1:j])
		}
		i = j
	}
	return out
}

// noteDownloadExec records a downloader inside a command substitution that
// is passed to a construct executing its argument as code.
func (w *walker) noteDownloadExec(args []Word, construct string) {
	if w.a.DownloadExec != "" {
		return
	}
	for _, a := range args {
		if a.word == nil {
			continue
		}
		syntax.Walk(a.word, func(n syntax.Node) bool {
			ce, ok := n.(*syntax.CallExpr)
			if !ok || w.a.DownloadExec != "" {
				return w.a.DownloadExec == ""
			}
			for _, wd := range ce.Args {
				if v, static := staticValue(wd); static && IsDownloader(base(v, w.opt.FoldCase), w.opt.FoldCase) {
					w.a.DownloadExec = construct
					return false
				}
			}
			return true
		})
	}
}

// splitAssign splits a NAME=value word with a valid shell name.
func splitAssign(a Word) (name string, val Word, ok bool) {
	n, v, found := strings.Cut(a.Match, "=")
	if !found || !validName(n) {
		return "", Word{}, false
	}
	return n, Word{Static: a.Static, Value: v, Match: v}, true
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func quoteMatch(m string) string {
	if len(m) > 60 {
		m = m[:60] + "…"
	}
	return fmt.Sprintf("%q", m)
}
