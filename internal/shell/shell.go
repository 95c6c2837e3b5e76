// Package shell is the static analysis of a POSIX sh script that the policy
// and tripwire checks share (docs/design/checks.md#tripwire-commands steps
// 1–5 and the facts steps 8–11 need).
//
// # What it computes
//
// [Analyze] parses the script with mvdan.cc/sh in POSIX mode and reduces it
// to the list of simple commands that can run — including commands inside
// functions, loops, command substitutions, here-documents and the commands a
// wrapper runs (`env sudo`, `find -exec`, `sh -c '…'`, `busybox rm`) — each
// with its program, its argument words, its prefix assignments, its
// redirections and its pipeline position. Words are reduced to a static
// value (POSIX quote removal) when they have one, so `"su""do"`, `s\udo`
// and `'sudo'` all name the program sudo.
//
// Each command's arguments are split by its program's option model
// ([OptSpec], [ParseCommand]): short clusters, attached values,
// --long=value, unique abbreviations, per-program value options. Every
// option rule (the tripwire's, the policy's) reads that split through
// [ArgTest], so `curl -d@file` and `rm -vr` are the options they are.
//
// The analysis also follows code that programs run on their own: scripts
// given in option values, settings and variables (git -c core.pager=…,
// tar --to-command, ssh -o ProxyCommand, GIT_PAGER), programs chosen at
// run time by a wrapper (xargs -I{} {}, find -exec {}), the files a script
// writes before it runs them ([Analysis.Written]), and assignments made by
// expansions (${X:=v}).
//
// Nothing here matches raw substrings of the script: rules downstream see
// programs and whole argument words, so `grep sudo notes.txt` names the
// program grep, never sudo.
//
// # Usage
//
//	a := shell.Analyze("timeout 5 sudo ls", shell.Options{})
//	for _, c := range a.Commands { fmt.Println(c.Program, c.Derived) } // timeout false, sudo true
//
// # Limitations
//
// The analysis is static. Anything computed at run time — a program name
// from a variable, arguments that xargs reads from stdin — is marked
// dynamic or left to the sandbox, never guessed. Bash-only syntax is a parse
// error because /bin/sh would not run it the same way. An option word
// computed at run time is read as an operand, and a program without a spec
// is read with the generic option model; configuration files a program
// reads on its own (~/.gitconfig) are not followed.
package shell

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Limits of docs/design/checks.md#tripwire-commands.
const (
	MaxCommands   = 256 // simple commands per script, derived ones included
	MaxDepth      = 16  // nesting of compound commands and substitutions
	MaxScriptNest = 3   // sh -c '…' analysed recursively this deep
)

// Word is one shell word reduced for checking.
type Word struct {
	// Static reports whether the word has one value whatever the
	// environment: only literals and quotes, no expansion, no glob, no ~.
	Static bool
	// Value is the static value after quote removal ("" when not static).
	Value string
	// Match is the text rules match against: the static value, or for a
	// non-static word its source text with the quote characters removed.
	Match string

	word *syntax.Word
}

// RedirKind classifies a redirection for the path checks.
type RedirKind int

// Redirection kinds (docs/design/checks.md#policy-precedence,
// docs/design/checks.md#redirection-targets).
const (
	RedirNone  RedirKind = iota // fd duplication or close: no file target
	RedirRead                   // <
	RedirWrite                  // > >> >| <> and a file >&
	RedirHere                   // << <<-: a here-document, no file target
)

// Redirect is one redirection with its target word.
type Redirect struct {
	Op     string
	Kind   RedirKind
	Target Word // zero for RedirNone and RedirHere
	// TmpDir reports a target of the form $TMPDIR/static-rest (or
	// ${TMPDIR}) with no ".." component: the sandbox's per-command scratch
	// directory (docs/design/checks.md#redirection-targets). Rest is the part
	// after $TMPDIR.
	TmpDir bool
	Rest   string
	Offset int // byte offset in the analysed script, for source order
}

// Assign is a variable assignment that a command performs or passes on.
type Assign struct {
	Name  string
	Value Word
	// Form says how: "prefix" (NAME=v cmd), "bare" (NAME=v), "export",
	// "readonly", "local", "typeset", "declare", "env", "for", "read",
	// "getopts", "printf -v", or the expansion (${NAME:=…}).
	Form string
}

// Command is one simple command that the script can run.
type Command struct {
	// Program is path.Base of the first word's static value ("" when the
	// first word is not static).
	Program string
	// Name is the first word's static value before path.Base, for messages.
	Name string
	// ProgramWord is the first word itself.
	ProgramWord Word
	// Args are the words after the program.
	Args []Word
	// Dynamic reports a program that cannot be determined statically, with
	// the construct that made it so in DynamicReason.
	Dynamic       bool
	DynamicReason string
	// Derived reports a command found through a wrapper (env, timeout,
	// find -exec, sh -c, …); Wrapper names that wrapper's program.
	Derived bool
	Wrapper string
	// Parsed is the argument list split by the program's option model
	// (see OptSpec); every option rule reads it.
	Parsed Parsed
	// ScriptFile reports a shell interpreter running a script-file operand.
	ScriptFile bool
	// Scripts are the files whose content the command runs as code: an
	// interpreter's script operand, make -f, awk -f, ssh -F, sftp -b.
	Scripts []Word
	// StdinFile reports one of Scripts that is a file descriptor or
	// stdin itself (/dev/stdin, /dev/fd/N, /proc/self/fd/N, "-" for an
	// -f option): the code is data no check has seen.
	StdinFile bool
	// InlineCode reports an interpreter given code with an inline-code flag
	// (-c, -e, …); StdinProgram reports one that reads its program from
	// stdin (docs/design/checks.md#script-level-rules).
	InlineCode   bool
	StdinProgram bool
	// AssignOnly reports a command of bare assignments (X=1) with no
	// program.
	AssignOnly bool
	// Assigns are prefix and bare assignments, and NAME=value arguments of
	// export, readonly and env.
	Assigns []Assign
	// Redirs are the redirections attached to this command.
	Redirs []Redirect
	// PipePos is the pipeline stage (0 = first, or not piped).
	PipePos int
	// StdinRedirected reports a <, << or <<- on the command or an enclosing
	// compound command.
	StdinRedirected bool
	// Offset is the byte offset of the command in the top-level script.
	Offset int
}

// ArgMatches returns the match texts of the arguments.
func (c *Command) ArgMatches() []string {
	out := make([]string, len(c.Args))
	for i, a := range c.Args {
		out[i] = a.Match
	}
	return out
}

// Analysis is the result of analysing one script.
type Analysis struct {
	// Source is the script.
	Source string
	// ParseError is set when the script is not POSIX sh (cmd_unparseable).
	ParseError error
	// TooComplex is set when a limit is exceeded (cmd_too_complex).
	TooComplex string
	// Commands lists every simple command in source order, derived
	// commands right after their wrapper.
	Commands []Command
	// Redirects lists every redirection in source order, including those
	// on compound commands.
	Redirects []Redirect
	// ChangesDir reports a cd, pushd or popd anywhere in the script: relative
	// redirection targets then cannot be resolved statically.
	ChangesDir bool
	// LoopVars are the variables of for loops, which the loop assigns: one
	// entry per item with the item as the value (one without a value for
	// a loop over "$@").
	LoopVars []Assign
	// AssignsTmpDir reports any assignment to TMPDIR, which voids the
	// $TMPDIR redirection exception.
	AssignsTmpDir bool
	// Functions lists the functions the script defines.
	Functions []string
	// RecursiveFunction describes a cycle of function calls that runs in
	// new processes (a fork bomb); plain recursion is not one.
	RecursiveFunction string
	// ExpansionAssigns are assignments made by expansions: ${NAME:=v},
	// ${NAME=v}, $((NAME=v)), $((NAME++)).
	ExpansionAssigns []Assign
	// Written lists the files the script writes: redirection targets,
	// tee, cp, mv, install, ln, dd of=, curl -o/-O, wget, sort -o, sed -i.
	Written []Word
	// WritesUnknown names a program that writes files under names the
	// analysis cannot know (tar -x, unzip, git clone, wget -r), and
	// UnknownDirs the directories they write into ("." for the working
	// directory).
	WritesUnknown string
	UnknownDirs   []Word
	// ConfigFiles are configuration files a command is told to read that
	// can name commands (git include.path, GIT_CONFIG_GLOBAL).
	ConfigFiles []Word
	// DownloadExec names the construct when downloaded content is executed
	// (a downloader inside a command substitution passed to eval, ., source
	// or sh -c).
	DownloadExec string
}

// Options selects platform behaviour.
type Options struct {
	// FoldCase compares program names ASCII case-insensitively (darwin and
	// windows file systems).
	FoldCase bool
}

// Analyze parses and analyses a script. It never fails: problems are
// reported in ParseError and TooComplex.
func Analyze(src string, opt Options) *Analysis {
	a := &Analysis{Source: src}
	w := &walker{a: a, opt: opt}
	w.script(src, ctx{fixed: -1})
	if a.ParseError != nil || a.TooComplex != "" {
		a.Commands, a.Redirects = nil, nil
	}
	return a
}

// ParseError is a parse failure with the parser's message.
type ParseError struct{ msg string }

func (e *ParseError) Error() string { return e.msg }

// parse parses POSIX sh.
func parse(src string) (*syntax.File, error) {
	p := syntax.NewParser(syntax.Variant(syntax.LangPOSIX))
	f, err := p.Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, &ParseError{msg: err.Error()}
	}
	return f, nil
}

// base returns the program name of a static first word.
func base(v string, fold bool) string {
	b := path.Base(v)
	if fold {
		b = strings.ToLower(b)
	}
	return b
}

// ValidGlob checks a basename glob.
func ValidGlob(glob string) error {
	if glob == "" {
		return fmt.Errorf("empty glob")
	}
	for _, g := range ExpandBraces(glob) {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("bad glob %q: %w", glob, err)
		}
	}
	return nil
}

// ExpandBraces expands {a,b} alternatives (no nesting) into plain globs.
func ExpandBraces(g string) []string {
	i := strings.IndexByte(g, '{')
	if i < 0 {
		return []string{g}
	}
	j := strings.IndexByte(g[i:], '}')
	if j < 0 {
		return []string{g}
	}
	j += i
	var out []string
	for _, alt := range strings.Split(g[i+1:j], ",") {
		for _, rest := range ExpandBraces(g[j+1:]) {
			out = append(out, g[:i]+alt+rest)
		}
	}
	return out
}

// sortCommands puts commands in source order while keeping each derived
// command right after its wrapper: derived commands share their wrapper's
// offset and are appended in order, and sort.SliceStable keeps that.
func sortCommands(cs []Command) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Offset < cs[j].Offset })
}

func sortRedirects(rs []Redirect) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Offset < rs[j].Offset })
}
