package shell

import (
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// walker carries the state of one Analyze call.
type walker struct {
	a   *Analysis
	opt Options
	// ncmd counts simple commands, derived ones included.
	ncmd int
	// funcs is the stack of function names whose bodies are being walked;
	// defined and calls are the functions and call edges of the script
	// being walked (a nested sh -c script has its own).
	funcs   []string
	defined []string
	calls   []call
	// gitEnv pairs GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n by n.
	gitEnv map[string][2]*Word
}

// call is an edge of a script's call graph: a command named to inside the
// body of function from. fork reports that it runs in a new process (in
// the background, in a pipeline, a subshell or a command substitution).
type call struct {
	from, to string
	fork     bool
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
	// fork reports a command that runs in a process of its own: in the
	// background, a pipeline, a subshell or a command substitution.
	fork bool
	// holes are strings a wrapper replaces at run time in the words of
	// the command it runs (xargs -I R, find's {}); appended reports that
	// a wrapper appends words it reads at run time (xargs).
	holes    []string
	appended bool
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

// script parses and walks one script: the top-level one (c.fixed = -1) or
// a static script that a command runs, at offset c.fixed. A nested script
// runs in a new shell: the caller's functions are not visible in it, so
// its call graph is its own.
func (w *walker) script(src string, c ctx) {
	f, err := parse(src)
	if err != nil {
		if w.a.ParseError == nil {
			w.a.ParseError = err
		}
		return
	}
	c.src = src
	savedFuncs, savedDefined, savedCalls := w.funcs, w.defined, w.calls
	w.funcs, w.defined, w.calls = nil, nil, nil
	w.stmts(f.Stmts, c)
	if w.a.RecursiveFunction == "" {
		w.a.RecursiveFunction = forkCycle(w.defined, w.calls)
	}
	w.funcs, w.defined, w.calls = savedFuncs, savedDefined, savedCalls
	if c.nest == 0 {
		sortCommands(w.a.Commands)
		sortRedirects(w.a.Redirects)
	}
}

// forkCycle returns a description of a cycle of function calls that forks
// (a fork bomb: `f(){ f|f& }`, `a(){ b|b& }; b(){ a|a& }`), or "". A cycle
// whose calls all stay in the calling process is ordinary recursion, which
// the shell bounds by its own stack.
func forkCycle(defined []string, calls []call) string {
	if len(calls) == 0 {
		return ""
	}
	succ := map[string][]string{}
	for _, e := range calls {
		if slices.Contains(defined, e.to) {
			succ[e.from] = append(succ[e.from], e.to)
		}
	}
	for _, e := range calls {
		if !e.fork || !slices.Contains(defined, e.to) {
			continue
		}
		// A forking edge from → to lies on a cycle when to reaches from.
		if path := reach(succ, e.to, e.from); path != nil {
			if len(path) == 1 {
				return fmt.Sprintf("function %s calls itself in a new process (a fork bomb)", e.from)
			}
			cycle := append([]string{e.from}, path[:len(path)-1]...)
			return fmt.Sprintf("functions %s call each other in new processes (a fork bomb)", strings.Join(cycle, ", "))
		}
	}
	return ""
}

// reach returns the functions on a call path from → … → to, or nil.
func reach(succ map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			var path []string
			for p := n; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
				if p == from {
					break
				}
			}
			return path
		}
		for _, m := range succ[n] {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil
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
	if s.Background || s.Coprocess {
		c.fork = true
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
		d := c.deeper()
		d.fork = true
		w.stmts(cmd.Stmts, d)
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
			// One assignment per item: the loop gives the variable each
			// value in turn. Without items it iterates "$@", unknown here.
			vars := []Assign{{Name: it.Name.Value, Form: "for"}}
			if len(it.Items) > 0 {
				vars = vars[:0]
				for _, wd := range it.Items {
					vars = append(vars, Assign{Name: it.Name.Value, Value: makeWord(wd, c.src), Form: "for"})
				}
			}
			w.a.LoopVars = append(w.a.LoopVars, vars...)
			w.assignEffects(Command{Assigns: vars, AssignOnly: true, Offset: c.offset(cmd.Pos())}, d)
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
		w.defined = append(w.defined, cmd.Name.Value)
		w.funcs = append(w.funcs, cmd.Name.Value)
		// The body runs where the function is called, not where it is
		// defined: whether its calls fork is decided inside the body.
		body := c.deeper()
		body.fork = false
		w.stmt(cmd.Body, body)
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
		sc.fork = true
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
			if rd.Kind == RedirWrite && !streamTarget(rd.Target) {
				w.a.Written = append(w.a.Written, rd.Target)
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
			sc.pipePos, sc.stdin, sc.fork = 0, false, true
			w.stmts(n.Stmts, sc)
			return false
		case *syntax.ParamExp:
			// ${NAME:=value} and ${NAME=value} assign NAME: `: ${LD_PRELOAD:=x}`.
			if n.Exp != nil && (n.Exp.Op == syntax.AssignUnset || n.Exp.Op == syntax.AssignUnsetOrNull) && n.Param != nil {
				var val Word
				if n.Exp.Word != nil {
					val = makeWord(n.Exp.Word, c.src)
				}
				w.expansionAssign(Assign{Name: n.Param.Value, Value: val, Form: "${" + n.Param.Value + n.Exp.Op.String() + "…}"}, c, n.Pos())
			}
		case *syntax.BinaryArithm:
			// $((NAME=…)) and $((NAME+=…)) assign NAME.
			if isArithAssign(n.Op) {
				if name := arithName(n.X); name != "" {
					w.expansionAssign(Assign{Name: name, Form: "$((" + name + n.Op.String() + "…))"}, c, n.Pos())
				}
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				if name := arithName(n.X); name != "" {
					w.expansionAssign(Assign{Name: name, Form: "$((" + name + n.Op.String() + "))"}, c, n.Pos())
				}
			}
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

// expansionAssign records an assignment made by an expansion.
func (w *walker) expansionAssign(a Assign, c ctx, pos syntax.Pos) {
	w.noteAssign(a.Name)
	w.a.ExpansionAssigns = append(w.a.ExpansionAssigns, a)
	w.assignEffects(Command{Assigns: []Assign{a}, AssignOnly: true, Offset: c.offset(pos)}, c)
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
		syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

// arithName returns the variable an arithmetic operand names, or "".
func arithName(x syntax.ArithmExpr) string {
	wd, ok := x.(*syntax.Word)
	if !ok || len(wd.Parts) != 1 {
		return ""
	}
	if lit, ok := wd.Parts[0].(*syntax.Lit); ok && validName(lit.Value) {
		return lit.Value
	}
	return ""
}

// streamTarget reports a redirection to the null device or a stream
// (2>/dev/null), which writes no file a script could later run.
func streamTarget(t Word) bool {
	if !t.Static {
		return false
	}
	switch t.Value {
	case "/dev/null", "/dev/stdout", "/dev/stderr":
		return true
	}
	return strings.HasPrefix(t.Value, "/dev/fd/")
}
