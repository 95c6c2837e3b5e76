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
	}
	words := make([]Word, len(ce.Args))
	for i, wd := range ce.Args {
		words[i] = makeWord(wd, c.src)
	}
	if bare {
		cmd.AssignOnly = true
		w.add(cmd, c)
		w.assignEffects(cmd, c)
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
func (w *walker) add(cmd Command, c ctx) {
	w.ncmd++
	if w.ncmd > MaxCommands {
		w.tooComplex(fmt.Sprintf("script exceeds %d commands or depth %d", MaxCommands, MaxDepth))
		return
	}
	switch cmd.Program {
	case "cd", "pushd", "popd":
		w.a.ChangesDir = true
	}
	for _, as := range cmd.Assigns {
		w.noteAssign(as.Name)
	}
	if cmd.Program != "" && !cmd.Derived && len(w.funcs) > 0 {
		// An edge of the call graph; it is resolved against the functions
		// the script defines once the whole script has been walked.
		w.calls = append(w.calls, call{from: w.funcs[len(w.funcs)-1], to: cmd.Program, fork: c.fork})
	}
	w.a.Commands = append(w.a.Commands, cmd)
}

func (w *walker) noteAssign(name string) {
	if name == "TMPDIR" {
		w.a.AssignsTmpDir = true
	}
}

// derivation is a command that another command runs: a wrapper's program,
// find -exec, xargs, a program named by an option.
type derivation struct {
	words []Word
	// stdin reports that the deriving program feeds the command's stdin
	// with data (sort's compress program, tar --to-command).
	stdin bool
	// holes are strings the deriving program replaces at run time
	// (xargs -I R, find's {}); appended reports that it appends words
	// read at run time (xargs).
	holes    []string
	appended bool
	// unknown, when set, says why the program cannot be determined (an
	// option of a wrapper the analysis does not know).
	unknown string
}

// subscript is a shell script that a command runs from one of its words
// (sh -c, flock -c, git -c core.pager=…, ssh -o ProxyCommand=…).
type subscript struct {
	word  Word
	label string
	stdin bool
}

// effects collects what one command derives.
type effects struct {
	derived []derivation
	scripts []subscript
}

func (e *effects) derive(d derivation) { e.derived = append(e.derived, d) }
func (e *effects) script(wd Word, label string, stdin bool) {
	e.scripts = append(e.scripts, subscript{wd, label, stdin})
}

// emit resolves the program of cmd, appends it, then appends the commands it
// runs: a wrapper's derived program, find -exec sequences, or the commands
// of a static script it is given.
func (w *walker) emit(cmd Command, c ctx) {
	if w.stopped() {
		return
	}
	pw := cmd.ProgramWord
	if !pw.Static {
		cmd.Dynamic, cmd.DynamicReason = true, "program word "+quoteMatch(pw.Match)+" is computed at run time"
		w.add(cmd, c)
		return
	}
	cmd.Name = pw.Value
	cmd.Program = base(pw.Value, w.opt.FoldCase)
	prog := cmd.Program
	if h := holeIn(pw.Value, c.holes); h != "" {
		// xargs -I{} {} id, find … -exec {} \;: the program is whatever
		// the wrapper substitutes at run time.
		cmd.Program = ""
		cmd.Dynamic, cmd.DynamicReason = true, fmt.Sprintf("program word %s is filled in at run time by %s", quoteMatch(pw.Value), c.wrapper)
		w.add(cmd, c)
		return
	}
	cmd.Parsed = ParseCommand(prog, cmd.Args)
	if DynamicBuiltins.Match(prog, w.opt.FoldCase) {
		cmd.Dynamic, cmd.DynamicReason = true, prog
		w.noteDownloadExec(cmd.Args, prog)
	}
	w.declarations(&cmd)
	var e effects
	if !cmd.Dynamic {
		w.programEffects(&cmd, c, &e)
	}
	w.produced(&cmd)
	w.add(cmd, c)
	w.assignEffects(cmd, c)
	for _, d := range e.derived {
		w.emitDerived(cmd, d, c)
	}
	for _, s := range e.scripts {
		w.subScript(cmd, s, c)
	}
}

// declarations records the assignments of export, readonly, local,
// typeset, declare, read and getopts.
func (w *walker) declarations(cmd *Command) {
	prog := cmd.Program
	switch prog {
	case "export", "readonly", "local", "typeset", "declare":
		for _, a := range cmd.Args {
			if name, val, ok := splitAssign(a); ok {
				cmd.Assigns = append(cmd.Assigns, Assign{Name: name, Value: val, Form: prog})
			}
		}
	case "read":
		for _, a := range cmd.Args {
			if a.Static && !strings.HasPrefix(a.Value, "-") {
				cmd.Assigns = append(cmd.Assigns, Assign{Name: a.Value, Form: "read"})
			}
		}
	case "getopts":
		// getopts optstring NAME assigns NAME on every call.
		if len(cmd.Args) >= 2 && cmd.Args[1].Static {
			cmd.Assigns = append(cmd.Assigns, Assign{Name: cmd.Args[1].Value, Form: "getopts"})
		}
	case "printf":
		// bash's printf -v NAME assigns NAME.
		p := ParseArgs(cmd.Args, &OptSpec{ShortValue: "v", InOrder: true})
		for _, v := range p.Values("-v") {
			if v.Static {
				cmd.Assigns = append(cmd.Assigns, Assign{Name: v.Value, Form: "printf -v"})
			}
		}
	}
}

// emitDerived appends a command that cmd runs.
func (w *walker) emitDerived(cmd Command, d derivation, c ctx) {
	dc := c
	dc.wrapper = cmd.Program
	dc.holes = append(slices.Clone(c.holes), d.holes...)
	dc.appended = d.appended
	dc.stdin = c.stdin || d.stdin
	n := Command{Derived: true, Wrapper: cmd.Program, PipePos: cmd.PipePos, StdinRedirected: dc.stdin, Offset: cmd.Offset}
	if d.unknown != "" || len(d.words) == 0 {
		why := d.unknown
		if why == "" {
			why = cmd.Program + " runs a program named at run time"
		}
		n.ProgramWord = Word{Match: cmd.Program}
		n.Dynamic, n.DynamicReason = true, why
		w.add(n, dc)
		return
	}
	n.ProgramWord, n.Args = d.words[0], d.words[1:]
	if d.appended && n.ProgramWord.Static && IsInterpreter(base(n.ProgramWord.Value, w.opt.FoldCase), w.opt.FoldCase) {
		// xargs appends words read from stdin: an interpreter it runs gets
		// code (or -c) that no static check can see.
		n.Name, n.Program = n.ProgramWord.Value, base(n.ProgramWord.Value, w.opt.FoldCase)
		n.Dynamic, n.DynamicReason = true, "xargs passes run-time arguments to an interpreter"
		w.add(n, dc)
		return
	}
	if !n.ProgramWord.Static {
		n.Dynamic, n.DynamicReason = true, cmd.Program+" runs "+quoteMatch(n.ProgramWord.Match)+", computed at run time"
		w.add(n, dc)
		return
	}
	w.emit(n, dc)
}

// subScript analyses a script that cmd runs, or records a dynamic command
// when the script is computed at run time or completed by a wrapper.
func (w *walker) subScript(cmd Command, s subscript, c ctx) {
	dyn := func(why string) {
		n := Command{Derived: true, Wrapper: cmd.Program, PipePos: cmd.PipePos, StdinRedirected: cmd.StdinRedirected || s.stdin,
			Offset: cmd.Offset, ProgramWord: s.word, Dynamic: true, DynamicReason: why}
		w.add(n, c)
	}
	if !s.word.Static {
		dyn(s.label + " runs a script computed at run time")
		w.noteDownloadExec([]Word{s.word}, s.label)
		return
	}
	if h := holeIn(s.word.Value, c.holes); h != "" {
		// find -exec sh -c 'echo {}': file names are pasted into the
		// script text, so a crafted name is code.
		dyn(fmt.Sprintf("%s runs a script that %s completes at run time with %q", s.label, c.wrapper, h))
		return
	}
	if c.nest+1 > MaxScriptNest {
		w.tooComplex(fmt.Sprintf("sh -c scripts nested deeper than %d", MaxScriptNest))
		return
	}
	sc := c
	sc.nest, sc.depth = c.nest+1, c.depth+1
	sc.pipePos, sc.stdin = cmd.PipePos, cmd.StdinRedirected || s.stdin
	sc.fixed, sc.wrapper = cmd.Offset, s.label
	sc.fork, sc.appended = false, false
	w.script(s.word.Value, sc)
}

// holeIn returns the first hole that s contains.
func holeIn(s string, holes []string) string {
	for _, h := range holes {
		if h != "" && strings.Contains(s, h) {
			return h
		}
	}
	return ""
}

// ParseCommand splits a command's arguments with its program's option
// model (see OptSpec); find has its own grammar.
func ParseCommand(program string, args []Word) Parsed {
	if strings.EqualFold(program, "find") {
		return parseFind(args)
	}
	return ParseArgs(args, SpecFor(program))
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
