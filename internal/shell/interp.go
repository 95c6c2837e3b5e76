package shell

import (
	"slices"
	"strings"
)

// shellArgs reads a shell interpreter's options. It returns the -c script
// word when there is one, and sets InlineCode, ScriptFile, StdinProgram,
// StdinFile and Scripts.
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
			if (m == "--rcfile" || m == "--init-file") && i+1 < len(cmd.Args) {
				w.scriptFiles(cmd, cmd.Args[i+1:i+2])
			}
			i += 2
			continue
		}
		if !strings.HasPrefix(m, "--") {
			hasC = hasC || strings.Contains(m[1:], "c")
			hasS = hasS || strings.Contains(m[1:], "s")
			// -o NAME inside a cluster (bash -euo pipefail) takes the
			// next word as its name.
			i += strings.Count(m[1:], "o") + strings.Count(m[1:], "O")
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
		return &sw
	}
	if i < len(cmd.Args) && cmd.Args[i].Match != "-" && !hasS {
		cmd.ScriptFile = true
		w.scriptFiles(cmd, cmd.Args[i:i+1])
		return nil
	}
	cmd.StdinProgram = true
	return nil
}

// interpArgs sets InlineCode, StdinProgram, StdinFile and Scripts for a
// non-shell interpreter.
func (w *walker) interpArgs(cmd *Command) {
	fam := family(cmd.Program, w.opt.FoldCase)
	optArgs := interpOptArgs[fam]
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
			if m == "-m" && fam == "python" { // python -m runs a module, not stdin
				return
			}
			if i+1 < len(cmd.Args) && loadsFile(fam, m, cmd.Args[i+1]) {
				w.scriptFiles(cmd, cmd.Args[i+1:i+2])
			}
			i++
		}
		i++
	}
	if i >= len(cmd.Args) || cmd.Args[i].Match == "-" {
		cmd.StdinProgram = true
		return
	}
	w.scriptFiles(cmd, cmd.Args[i:i+1])
}

// loadsFile reports an interpreter option whose value is a file of code
// it loads or runs: node -r ./x.js, php -f x.php.
func loadsFile(fam, opt string, v Word) bool {
	switch fam {
	case "node":
		if opt != "-r" && opt != "--require" && opt != "--import" && opt != "--loader" {
			return false
		}
	case "php":
		if opt != "-f" {
			return false
		}
	default:
		return false
	}
	m := v.Match
	return strings.HasPrefix(m, "/") || strings.HasPrefix(m, ".") || strings.HasPrefix(m, "~") || strings.HasPrefix(m, "$") || IsFDPath(m)
}
