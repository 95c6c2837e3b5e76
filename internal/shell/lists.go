package shell

import "strings"

// The program families of docs/design/checks.md#executable-allowlist. They
// are part of the analysis (which words a wrapper runs, which interpreter
// reads stdin), not of the configurable tripwire rules.
var (
	// ShellInterpreters run sh-like scripts; a static -c script is
	// analysed recursively.
	ShellInterpreters = MustGlobs("sh", "ash", "bash", "dash", "ksh", "mksh", "zsh", "fish", "csh", "tcsh")
	// OtherInterpreters run code in another language.
	OtherInterpreters = MustGlobs("python*", "perl*", "ruby*", "node", "nodejs", "php*", "lua*", "tclsh", "wish", "expect", "pwsh",
		"osascript", "dc")
	// Downloaders fetch remote content.
	Downloaders = MustGlobs("curl", "wget", "fetch", "ftp", "tftp", "nc", "ncat", "netcat", "socat")
	// DynamicBuiltins compute the command they run at run time.
	DynamicBuiltins = MustGlobs("eval", ".", "source", "trap", "alias")
)

// inlineFlags maps an interpreter family glob to its inline-code flags.
var inlineFlags = []struct {
	glob  Glob
	flags []string
}{
	{MustGlobs("{sh,ash,bash,dash,ksh,mksh,zsh,fish,csh,tcsh}")[0], []string{"-c"}},
	{MustGlobs("python*")[0], []string{"-c"}},
	{MustGlobs("perl*")[0], []string{"-e", "-E"}},
	{MustGlobs("ruby*")[0], []string{"-e"}},
	{MustGlobs("{node,nodejs}")[0], []string{"-e", "-p", "--eval", "--print"}},
	{MustGlobs("php*")[0], []string{"-r"}},
	{MustGlobs("lua*")[0], []string{"-e"}},
	{MustGlobs("pwsh")[0], []string{"-c", "-Command"}},
	{MustGlobs("expect")[0], []string{"-c"}},
	{MustGlobs("dc")[0], []string{"-e", "--expression"}},
}

// interpOptArgs lists interpreter options that take the next word as their
// argument, so it is not mistaken for a script operand.
var interpOptArgs = map[string][]string{
	"shell":  {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"},
	"python": {"-W", "-X", "-m", "-Q"},
	"perl":   {"-I", "-M", "-m", "-x"},
	"ruby":   {"-I", "-r", "-C", "-E"},
	"node":   {"-r", "--require", "--import", "--loader", "-C", "--conditions"},
	"php":    {"-d", "-c", "-z", "-f"},
	"lua":    {"-l"},
}

// IsShell reports whether program is a shell interpreter.
func IsShell(program string, fold bool) bool { return ShellInterpreters.Match(program, fold) }

// IsInterpreter reports whether program is any interpreter, shells included.
func IsInterpreter(program string, fold bool) bool {
	return IsShell(program, fold) || OtherInterpreters.Match(program, fold)
}

// IsDownloader reports whether program fetches remote content.
func IsDownloader(program string, fold bool) bool { return Downloaders.Match(program, fold) }

// family returns the key of interpOptArgs for an interpreter.
func family(program string, fold bool) string {
	p := program
	if fold {
		p = strings.ToLower(p)
	}
	switch {
	case IsShell(p, false):
		return "shell"
	case strings.HasPrefix(p, "python"):
		return "python"
	case strings.HasPrefix(p, "perl"):
		return "perl"
	case strings.HasPrefix(p, "ruby"):
		return "ruby"
	case p == "node" || p == "nodejs":
		return "node"
	case strings.HasPrefix(p, "php"):
		return "php"
	case strings.HasPrefix(p, "lua"):
		return "lua"
	}
	return ""
}

// isInlineFlag reports whether word is one of the interpreter's inline-code
// flags. For shells any single-dash bundle containing c counts as -c
// (docs/design/checks.md#derived-commands: "-ec" is -e -c, which is how a
// bundle hides -c). For other interpreters a flag also counts with its code
// attached ("-eprint") or at the end of a bundle of letters ("perl -ne",
// "python3 -Ic").
func isInlineFlag(program, word string, fold bool) bool {
	shell := IsShell(program, fold)
	for _, f := range inlineFlags {
		if !f.glob.Match(program, fold) {
			continue
		}
		for _, fl := range f.flags {
			if word == fl {
				return true
			}
			if len(fl) != 2 || len(word) <= 2 || word[0] != '-' || word[1] == '-' {
				continue
			}
			if shell {
				if strings.IndexByte(word[1:], fl[1]) >= 0 {
					return true
				}
				continue
			}
			if strings.HasPrefix(word, fl) || (word[len(word)-1] == fl[1] && isLetters(word[1:])) {
				return true
			}
		}
	}
	return false
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z') {
			return false
		}
	}
	return true
}
