package shell

import (
	"fmt"

	"mvdan.cc/sh/v3/syntax"
)

// walker carries the state of one Analyze call.
type walker struct {
	a   *Analysis
	opt Options
	// ncmd counts simple commands, derived ones included.
	ncmd int
	// funcs is the stack of function names whose bodies are being walked.
	funcs []string
}

// ctx is the position of the walk in the script.
type ctx struct {
	src     string // the script being walked (differs for sh -c scripts)
	nest    int    // sh -c recursion level
	depth   int    // compound nesting
	pipePos int
	stdin   bool // stdin redirected on an enclosing command
	// fixed, when >= 0, is the offset every command and redirection of a
	// nested script takes: that of the wrapper that runs it, so derived
	// commands sort right after their wrapper.
	fixed int
	// wrapper names the interpreter running a nested sh -c script; its
	// commands are derived commands of that interpreter.
	wrapper string
}

func (c ctx) deeper() ctx { c.depth++; return c }

func (c ctx) offset(p syntax.Pos) int {
	if c.fixed >= 0 {
		return c.fixed
	}
	return int(p.Offset())
}

func (w *walker) stopped() bool { return w.a.ParseError != nil || w.a.TooComplex != "" }

func (w *walker) tooComplex(why string) {
	if w.a.TooComplex == "" {
		w.a.TooComplex = why
	}
}

// script parses and walks one script: the top-level one (fixed = -1) or a
// static sh -c script of a wrapper at offset fixed.
func (w *walker) script(src string, nest, depth, pipePos int, stdin bool, fixed int, wrapper string) {
	f, err := parse(src)
	if err != nil {
		if w.a.ParseError == nil {
			w.a.ParseError = err
		}
		return
	}
	c := ctx{src: src, nest: nest, depth: depth, pipePos: pipePos, stdin: stdin, fixed: fixed, wrapper: wrapper}
	w.stmts(f.Stmts, c)
	if nest == 0 {
		sortCommands(w.a.Commands)
		sortRedirects(w.a.Redirects)
	}
}

func (w *walker) stmts(ss []*syntax.Stmt, c ctx) {
	for _, s := range ss {
		w.stmt(s, c)
	}
}

func (w *walker) stmt(s *syntax.Stmt, c ctx) {
	if w.stopped() {
		return
	}
	if c.depth > MaxDepth {
		w.tooComplex(fmt.Sprintf("script exceeds %d commands or depth %d", MaxCommands, MaxDepth))
		return
	}
	redirs := w.redirects(s.Redirs, c)
	for _, r := range redirs {
		if r.Kind == RedirRead || r.Kind == RedirHere {
			c.stdin = true
		}
	}
	switch cmd := s.Cmd.(type) {
	case nil:
		// A statement of redirections only, e.g. `> file`.
	case *syntax.CallExpr:
		w.call(cmd, redirs, c)
	case *syntax.BinaryCmd:
		if cmd.Op == syntax.Pipe || cmd.Op == syntax.PipeAll {
			w.pipeline(cmd, c)
			return
		}
		w.stmt(cmd.X, c)
		w.stmt(cmd.Y, c)
	case *syntax.Block:
		w.stmts(cmd.Stmts, c.deeper())
	case *syntax.Subshell:
		w.stmts(cmd.Stmts, c.deeper())
	case *syntax.IfClause:
		d := c.deeper()
		for ic := cmd; ic != nil; ic = ic.Else {
			w.stmts(ic.Cond, d)
			w.stmts(ic.Then, d)
		}
	case *syntax.WhileClause:
		d := c.deeper()
		w.stmts(cmd.Cond, d)
		w.stmts(cmd.Do, d)
	case *syntax.ForClause:
		d := c.deeper()
		if it, ok := cmd.Loop.(*syntax.WordIter); ok {
			w.noteAssign(it.Name.Value)
			w.a.LoopVars = append(w.a.LoopVars, Assign{Name: it.Name.Value, Form: "for"})
			for _, wd := range it.Items {
				w.substs(wd, d)
			}
		} else {
			w.unsupported(cmd)
			return
		}
		w.stmts(cmd.Do, d)
	case *syntax.CaseClause:
		d := c.deeper()
		w.substs(cmd.Word, d)
		for _, it := range cmd.Items {
			for _, p := range it.Patterns {
				w.substs(p, d)
			}
			w.stmts(it.Stmts, d)
		}
	case *syntax.FuncDecl:
		if cmd.Name == nil {
			w.unsupported(cmd)
			return
		}
		w.a.Functions = append(w.a.Functions, cmd.Name.Value)
		w.funcs = append(w.funcs, cmd.Name.Value)
		w.stmt(cmd.Body, c.deeper())
		w.funcs = w.funcs[:len(w.funcs)-1]
	default:
		w.unsupported(cmd)
	}
}

// unsupported fails closed on a construct the POSIX parser should never
// produce, rather than skipping commands hidden inside it.
func (w *walker) unsupported(n syntax.Node) {
	if w.a.ParseError == nil {
		w.a.ParseError = &ParseError{msg: fmt.Sprintf("unsupported construct %T", n)}
	}
}

// pipeline walks the stages of a | b | c. The first stage keeps the
// enclosing position (a compound stage passes its position inward).
func (w *walker) pipeline(b *syntax.BinaryCmd, c ctx) {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if bc, ok := s.Cmd.(*syntax.BinaryCmd); ok && (bc.Op == syntax.Pipe || bc.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
			flatten(bc.X)
			flatten(bc.Y)
			return
		}
		stages = append(stages, s)
	}
	flatten(b.X)
	flatten(b.Y)
	for i, s := range stages {
		sc := c
		if i > 0 {
			sc.pipePos = i
		}
		w.stmt(s, sc)
	}
}

// redirects converts a statement's redirections, records them, and walks
// any command substitutions in their targets and here-document bodies.
func (w *walker) redirects(rs []*syntax.Redirect, c ctx) []Redirect {
	var out []Redirect
	for _, r := range rs {
		rd := Redirect{Op: r.Op.String(), Offset: c.offset(r.OpPos)}
		switch r.Op {
		case syntax.RdrIn:
			rd.Kind = RedirRead
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrInOut:
			rd.Kind = RedirWrite
		case syntax.DplOut, syntax.DplIn:
			// n>&m and n>&- duplicate or close a descriptor; ">&file" is a
			// write to a file (bash and some sh). A non-static word could
			// be either, so it is treated as a write target and checked.
			v, static := staticValue(r.Word)
			if static && (v == "-" || isDigits(v)) {
				rd.Kind = RedirNone
			} else if r.Op == syntax.DplOut {
				rd.Kind = RedirWrite
			} else {
				rd.Kind = RedirRead
			}
		case syntax.Hdoc, syntax.DashHdoc:
			rd.Kind = RedirHere
		default:
			// Bash-only operators fail to parse in POSIX mode; anything
			// else reaching here is refused.
			w.unsupported(r)
			continue
		}
		if r.Word != nil {
			w.substs(r.Word, c.deeper())
			if rd.Kind == RedirRead || rd.Kind == RedirWrite {
				rd.Target = makeWord(r.Word, c.src)
				rd.Rest, rd.TmpDir = tmpDirTarget(r.Word)
			}
		}
		if r.Hdoc != nil {
			w.substs(r.Hdoc, c.deeper())
		}
		out = append(out, rd)
		w.a.Redirects = append(w.a.Redirects, rd)
	}
	return out
}

// substs walks every command substitution in a word, at any depth of the
// word (inside double quotes, parameter defaults, arithmetic).
func (w *walker) substs(wd *syntax.Word, c ctx) {
	if wd == nil {
		return
	}
	syntax.Walk(wd, func(n syntax.Node) bool {
		if w.stopped() {
			return false
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			// A substitution runs in its own shell: not piped, own stdin.
			sc := c.deeper()
			sc.pipePos, sc.stdin = 0, false
			w.stmts(n.Stmts, sc)
			return false
		case *syntax.ProcSubst:
			w.unsupported(n)
			return false
		}
		return true
	})
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
