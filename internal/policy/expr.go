package policy

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// The gate expression language of docs/design/checks.md#approval-gates:
//
//	expr    = conj { "||" conj } ;
//	conj    = primary { "&&" primary } ;
//	primary = "(" expr ")" | "action" "==" str | fname "(" str ")" ;
//	str     = '…' | "…"    (escapes \\ \' \" ; any other backslash is literal)
//
// The parser is hand-written so that every error names its column and
// nothing is evaluated that was not compiled at load.

// function is one of the five gate functions.
type function string

const (
	fnCommandContains function = "command_contains"
	fnCommandMatches  function = "command_matches"
	fnProgramIs       function = "program_is"
	fnPathMatches     function = "path_matches"
	fnURLHostInCIDR   function = "url_host_in_cidr"
)

var functions = []function{fnCommandContains, fnCommandMatches, fnProgramIs, fnPathMatches, fnURLHostInCIDR}

type exprOp int

const (
	opOr exprOp = iota
	opAnd
	opAction
	opCall
)

// expr is a compiled gate expression node.
type expr struct {
	op     exprOp
	kids   []*expr // opOr, opAnd
	action intent.Action
	fn     function
	arg    string
	name   []nameGlob     // program_is (one glob)
	re     *regexp.Regexp // command_matches
	glob   *pathGlob      // path_matches
	cidr   netip.Prefix   // url_host_in_cidr
}

type tokKind int

const (
	tEOF tokKind = iota
	tLParen
	tRParen
	tAnd
	tOr
	tEq
	tComma
	tIdent
	tString
)

type token struct {
	kind tokKind
	text string // identifier name or unescaped string
	col  int    // 1-based byte column in the expression
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tIdent:
		return fmt.Sprintf("%q", t.text)
	case tString:
		return "string " + quoteExpr(t.text)
	}
	return fmt.Sprintf("%q", [...]string{"", "(", ")", "&&", "||", "==", ","}[t.kind])
}

// lexExpr splits an expression into tokens.
func lexExpr(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		col := i + 1
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks = append(toks, token{tLParen, "", col})
			i++
		case c == ')':
			toks = append(toks, token{tRParen, "", col})
			i++
		case c == ',':
			toks = append(toks, token{tComma, "", col})
			i++
		case strings.HasPrefix(s[i:], "&&"):
			toks = append(toks, token{tAnd, "", col})
			i += 2
		case strings.HasPrefix(s[i:], "||"):
			toks = append(toks, token{tOr, "", col})
			i += 2
		case strings.HasPrefix(s[i:], "=="):
			toks = append(toks, token{tEq, "", col})
			i += 2
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\\' && j+1 < len(s) && (s[j+1] == '\\' || s[j+1] == '\'' || s[j+1] == '"') {
					j++
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, fmt.Errorf("column %d: unterminated string", col)
			}
			toks = append(toks, token{tString, b.String(), col})
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, token{tIdent, s[i:j], col})
			i = j
		default:
			hint := ""
			switch c {
			case '&':
				hint = " (did you mean &&?)"
			case '|':
				hint = " (did you mean ||?)"
			case '=':
				hint = " (did you mean ==?)"
			case '!':
				hint = " (there is no negation; write the condition positively)"
			}
			r, _ := utf8.DecodeRuneInString(s[i:])
			return nil, fmt.Errorf("column %d: unexpected character %q%s", col, r, hint)
		}
	}
	return append(toks, token{kind: tEOF, col: len(s) + 1}), nil
}

// exprParser is a recursive-descent parser over the tokens.
type exprParser struct {
	toks  []token
	pos   int
	depth int
	fold  bool
	win   bool
}

func (p *exprParser) peek() token { return p.toks[p.pos] }

func (p *exprParser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

// compileExpr parses and compiles a gate expression. fold and windows
// select the platform matching of program_is and path_matches.
func compileExpr(s string, fold, windows bool) (*expr, error) {
	if len(s) > MaxExprBytes {
		return nil, fmt.Errorf("expression is %d bytes (max %d)", len(s), MaxExprBytes)
	}
	toks, err := lexExpr(s)
	if err != nil {
		return nil, err
	}
	if toks[0].kind == tEOF {
		return nil, fmt.Errorf("empty expression")
	}
	p := &exprParser{toks: toks, fold: fold, win: windows}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, fmt.Errorf("column %d: unexpected %s after the end of the expression", t.col, t)
	}
	return e, nil
}

func (p *exprParser) or() (*expr, error) { return p.chain(tOr, opOr, p.and) }

func (p *exprParser) and() (*expr, error) { return p.chain(tAnd, opAnd, p.primary) }

// chain parses operands joined by the operator token sep into one node of
// op; a single operand stands for itself.
func (p *exprParser) chain(sep tokKind, op exprOp, operand func() (*expr, error)) (*expr, error) {
	first, err := operand()
	if err != nil {
		return nil, err
	}
	kids := []*expr{first}
	for p.peek().kind == sep {
		p.next()
		k, err := operand()
		if err != nil {
			return nil, err
		}
		kids = append(kids, k)
	}
	if len(kids) == 1 {
		return first, nil
	}
	return &expr{op: op, kids: kids}, nil
}

func (p *exprParser) primary() (*expr, error) {
	t := p.next()
	switch t.kind {
	case tLParen:
		if p.depth++; p.depth > MaxExprDepth {
			return nil, fmt.Errorf("column %d: parentheses nested deeper than %d", t.col, MaxExprDepth)
		}
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		p.depth--
		if c := p.next(); c.kind != tRParen {
			return nil, fmt.Errorf("column %d: expected \")\" to close the \"(\" at column %d, got %s", c.col, t.col, c)
		}
		return e, nil
	case tIdent:
		if t.text == "action" {
			return p.actionEq(t)
		}
		return p.call(t)
	case tEOF:
		return nil, fmt.Errorf("column %d: expression ends where a condition is expected", t.col)
	}
	return nil, fmt.Errorf("column %d: expected \"(\", \"action ==\" or a function call, got %s", t.col, t)
}

func (p *exprParser) actionEq(t token) (*expr, error) {
	if eq := p.next(); eq.kind != tEq {
		return nil, fmt.Errorf("column %d: expected \"==\" after action, got %s", eq.col, eq)
	}
	s := p.next()
	if s.kind != tString {
		return nil, fmt.Errorf("column %d: expected a quoted action name after ==, got %s", s.col, s)
	}
	a := intent.Action(s.text)
	if !a.Known() {
		return nil, fmt.Errorf("column %d: unknown action %s (known: %s)", s.col, quoteExpr(s.text), actionList())
	}
	return &expr{op: opAction, action: a}, nil
}

func (p *exprParser) call(t token) (*expr, error) {
	fn := function(t.text)
	if !slices.Contains(functions, fn) {
		return nil, fmt.Errorf("column %d: unknown function %q (known: %s)", t.col, t.text, functionList())
	}
	if lp := p.next(); lp.kind != tLParen {
		return nil, fmt.Errorf("column %d: expected \"(\" after %s, got %s", lp.col, fn, lp)
	}
	var args []token
	for {
		a := p.next()
		if a.kind == tRParen && len(args) == 0 {
			break
		}
		if a.kind != tString {
			return nil, fmt.Errorf("column %d: %s: expected a quoted string argument, got %s", a.col, fn, a)
		}
		args = append(args, a)
		sep := p.next()
		if sep.kind == tRParen {
			break
		}
		if sep.kind != tComma {
			return nil, fmt.Errorf("column %d: %s: expected \",\" or \")\", got %s", sep.col, fn, sep)
		}
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("column %d: %s takes exactly 1 argument, got %d", t.col, fn, len(args))
	}
	arg := args[0]
	e := &expr{op: opCall, fn: fn, arg: arg.text}
	var err error
	switch fn {
	case fnCommandMatches:
		e.re, err = regexp.Compile(arg.text)
		if err != nil {
			err = fmt.Errorf("bad regex: %w", err)
		}
	case fnProgramIs:
		var g nameGlob
		g, err = compileNameGlob(arg.text, p.fold)
		e.name = []nameGlob{g}
	case fnPathMatches:
		e.glob, err = compilePathGlob(arg.text, p.fold, p.win)
	case fnURLHostInCIDR:
		e.cidr, err = compileCIDR(arg.text)
	}
	if err != nil {
		return nil, fmt.Errorf("column %d: %s: %w", arg.col, fn, err)
	}
	return e, nil
}

// eval evaluates the expression against a view. A function whose input is
// absent (path_matches on an http_get) is false.
func (e *expr) eval(p *Policy, v *tripwire.View) bool {
	switch e.op {
	case opOr:
		for _, k := range e.kids {
			if k.eval(p, v) {
				return true
			}
		}
		return false
	case opAnd:
		for _, k := range e.kids {
			if !k.eval(p, v) {
				return false
			}
		}
		return true
	case opAction:
		return v.Intent != nil && v.Intent.Action == e.action
	}
	in := v.Intent
	switch e.fn {
	case fnCommandContains:
		return in != nil && in.Action == intent.RunCommand && strings.Contains(in.Command, e.arg)
	case fnCommandMatches:
		return in != nil && in.Action == intent.RunCommand && e.re.MatchString(in.Command)
	case fnProgramIs:
		if v.Command == nil {
			return false
		}
		for i := range v.Command.Commands {
			c := &v.Command.Commands[i]
			if !c.AssignOnly && programMatch(e.name, e.arg == "*", c, programName(c, p.fold)) {
				return true
			}
		}
		return false
	case fnPathMatches:
		for i := range v.Paths {
			cands, n := p.pathCandidates(&v.Paths[i])
			for _, s := range cands[:n] {
				if e.glob.match(s) {
					return true
				}
			}
		}
		return false
	case fnURLHostInCIDR:
		// An unknown address set (resolution failed) fires the gate: asking
		// a human is the fail-closed reading of "might be internal".
		return cidrTest([]netip.Prefix{e.cidr}, v.URL) != cidrNo
	}
	return false
}

// String renders the expression canonically; compiling the result gives
// the same expression (FuzzGateExpr checks this).
func (e *expr) String() string {
	switch e.op {
	case opOr, opAnd:
		sep := " || "
		if e.op == opAnd {
			sep = " && "
		}
		parts := make([]string, len(e.kids))
		for i, k := range e.kids {
			parts[i] = k.String()
			if e.op == opAnd && k.op == opOr {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return strings.Join(parts, sep)
	case opAction:
		return "action == " + quoteExpr(string(e.action))
	}
	return string(e.fn) + "(" + quoteExpr(e.arg) + ")"
}

// quoteExpr writes s as a single-quoted expression string.
func quoteExpr(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}

func actionList() string {
	names := make([]string, len(intent.Actions))
	for i, a := range intent.Actions {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

func functionList() string {
	names := make([]string, len(functions))
	for i, f := range functions {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}
