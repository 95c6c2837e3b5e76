package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// SimpleArgv returns the argument vector /bin/sh would execve for script
// when script is one simple command that needs nothing of a shell: plain
// words (quotes whose removal is all the shell would do), no expansion, no
// redirection, no assignment, no list or pipeline, and a program that is
// not a shell builtin or reserved word. Otherwise it returns false and the
// script must run under /bin/sh -c. The sandbox uses it to exec such a
// command directly (docs/reference/sandboxing.md#exec-mode).
//
// The test is deliberately narrower than POSIX: it refuses what a shell
// could read differently from this parser — any backslash, `$` or
// backquote, a newline, a control or non-ASCII byte, an unquoted glob,
// brace or tilde character — and the builtins and reserved words of the
// shells found as /bin/sh (dash, bash, BusyBox ash, mksh), whose builtins
// can behave unlike the program of the same name (`echo '\n'`).
func SimpleArgv(script string) ([]string, bool) {
	for i := 0; i < len(script); i++ {
		c := script[i]
		if c != ' ' && c != '\t' && (c < 0x20 || c > 0x7e) || c == '\\' || c == '$' || c == '`' {
			return nil, false
		}
	}
	f, err := parse(script)
	if err != nil || len(f.Stmts) != 1 || len(f.Last) != 0 {
		return nil, false
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || st.Coprocess || len(st.Redirs) != 0 ||
		len(call.Assigns) != 0 || len(call.Args) == 0 {
		return nil, false
	}
	argv := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		v, ok := literalWord(w)
		if !ok {
			return nil, false
		}
		argv = append(argv, v)
	}
	// A name with a slash is never a builtin: the shell execs that path.
	if argv[0] == "" || !strings.Contains(argv[0], "/") && shellOwned[argv[0]] {
		return nil, false
	}
	return argv, true
}

// literalWord is the value of a word made only of literal text and plain
// quotes, after quote removal (staticValue; SimpleArgv has ruled out
// backslashes and $ already). Unquoted, the characters of pathname, brace
// (bash) and tilde expansion would make a shell change the word.
func literalWord(w *syntax.Word) (string, bool) {
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.ContainsAny(lit.Value, "*?[]{}~") {
			return "", false
		}
	}
	return staticValue(w)
}

// shellOwned are the names a shell found as /bin/sh runs itself rather
// than by a PATH search: the builtins of dash, bash (also in POSIX mode),
// BusyBox ash and mksh, and the reserved words of all of them. A command
// naming one keeps /bin/sh -c.
var shellOwned = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range strings.Fields(`
		! { } [[ ]] case coproc do done elif else esac fi for function if in
		select then time until while
		. : [ alias bg bind break builtin caller cd chdir command compgen
		complete compopt continue declare dirs disown echo enable eval exec
		exit export false fc fg getopts hash help history jobs kill let local
		logout mapfile newgrp popd print printf pushd pwd read readarray
		readonly return set shift shopt source suspend test times trap true
		type typeset ulimit umask unalias unset wait whence`) {
		m[n] = true
	}
	return m
}()
