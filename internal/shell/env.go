package shell

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Variables whose value is a command line that a program runs: assigning
// one (in any form: NAME=v cmd, export, env, ${NAME:=v}) is analysed like
// sh -c with that value. pager marks the ones whose stdin is data the
// program pipes in (`PAGER=sh man ls` would run the manual page).
var commandVars = map[string]struct{ pager bool }{
	"GIT_PAGER": {true}, "PAGER": {true}, "MANPAGER": {true}, "SYSTEMD_PAGER": {true}, "DIFF_PAGER": {true},
	"GIT_EDITOR": {}, "EDITOR": {}, "VISUAL": {}, "SUDO_EDITOR": {}, "SYSTEMD_EDITOR": {}, "FCEDIT": {},
	"GIT_SEQUENCE_EDITOR": {}, "GIT_SSH_COMMAND": {}, "GIT_SSH": {}, "GIT_ASKPASS": {}, "SSH_ASKPASS": {},
	"SUDO_ASKPASS": {}, "GIT_EXTERNAL_DIFF": {}, "GIT_PROXY_COMMAND": {}, "LESSOPEN": {true}, "LESSCLOSE": {},
	"BROWSER": {}, "RSYNC_RSH": {}, "CVS_RSH": {},
}

// optionVars carry command-line options of a program; the ones listed
// load code from a file or run a command.
var optionVars = map[string]func(Word) string{
	"NODE_OPTIONS": func(v Word) string {
		return codeOpts(v, specNode, "--require", "-r", "--import", "--loader", "--experimental-loader")
	},
	"PERL5OPT":          func(v Word) string { return codeOpts(v, &OptSpec{ShortValue: "IMmd"}, "-I", "-M", "-m", "-d") },
	"RUBYOPT":           func(v Word) string { return codeOpts(v, &OptSpec{ShortValue: "Ir"}, "-I", "-r") },
	"JAVA_TOOL_OPTIONS": javaOpts, "_JAVA_OPTIONS": javaOpts, "JDK_JAVA_OPTIONS": javaOpts,
}

// javaAgent matches the JVM options that load an agent or run a command.
var javaAgent = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|\s)-(javaagent:|agentpath:|agentlib:|XX:\+?On(Error|OutOfMemoryError)=)`)
})

func javaOpts(v Word) string {
	if !v.Static && strings.ContainsAny(v.Match, "$`") {
		return "is computed at run time"
	}
	if javaAgent().MatchString(v.Match) {
		return "loads a JVM agent or runs a command"
	}
	return ""
}

// codeOpts reports why an option variable's value loads code, or "".
func codeOpts(v Word, spec *OptSpec, names ...string) string {
	words := strings.Fields(v.Match)
	ws := make([]Word, len(words))
	for i, f := range words {
		if !v.Static && strings.ContainsAny(f, "$`") {
			return "is computed at run time"
		}
		ws[i] = Word{Static: true, Value: f, Match: f}
	}
	p := ParseArgs(ws, spec)
	for _, o := range p.Opts {
		if slices.Contains(names, o.Name) {
			return "loads code with " + o.Name
		}
	}
	return ""
}

// gitConfigVar matches GIT_CONFIG_KEY_<n> and GIT_CONFIG_VALUE_<n>.
var gitConfigVar = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^GIT_CONFIG_(KEY|VALUE)_([0-9]+)$`) })

// assignEffects analyses the assignments of one command that carry code:
// command variables, option variables and git's configuration variables.
func (w *walker) assignEffects(cmd Command, c ctx) {
	for _, a := range cmd.Assigns {
		label := a.Name + "="
		if (a.Form == "prefix" || a.Form == "bare") && a.Value.word == nil && !a.Value.Static && a.Value.Match == "" {
			a.Value = Word{Static: true} // NAME= assigns the empty string
		}
		if cv, ok := commandVars[a.Name]; ok {
			v := a.Value
			if a.Name == "LESSOPEN" || a.Name == "LESSCLOSE" {
				// "|cmd %s", "||cmd %s", "|-cmd %s": the prefix only says
				// how less reads the output.
				v = sub(v, strings.TrimLeft(v.Match, "|-"))
			}
			w.subScript(cmd, subscript{word: v, label: label, stdin: cv.pager}, c)
			continue
		}
		if f, ok := optionVars[a.Name]; ok {
			if why := f(a.Value); why != "" {
				w.dynamicUse(cmd, label, a.Name+" "+why, c)
			}
			continue
		}
		switch a.Name {
		case "TAR_OPTIONS":
			var e effects
			tarCode(ParseArgs(fieldWords(a.Value), specTar).Opts, "TAR_OPTIONS", &e)
			for _, s := range e.scripts {
				w.subScript(cmd, s, c)
			}
			continue
		case "GIT_CONFIG_PARAMETERS":
			w.dynamicUse(cmd, label, "GIT_CONFIG_PARAMETERS sets git configuration the check does not read", c)
			continue
		case "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG":
			if a.Value.Match != "/dev/null" {
				w.configFile(a.Value)
			}
			continue
		}
		if m := gitConfigVar().FindStringSubmatch(a.Name); m != nil {
			w.gitConfigEnv(cmd, m[1], m[2], a.Value, c)
		}
	}
}

// fieldWords splits a variable's value into words as a program reading it
// would (on blanks); a word is static only when the value is.
func fieldWords(v Word) []Word {
	var out []Word
	for _, f := range strings.Fields(v.Match) {
		out = append(out, sub(v, f))
	}
	return out
}

// dynamicUse records a derived command that cannot be determined.
func (w *walker) dynamicUse(cmd Command, label, why string, c ctx) {
	n := Command{Derived: true, Wrapper: strings.TrimSuffix(label, "="), PipePos: cmd.PipePos, StdinRedirected: cmd.StdinRedirected,
		Offset: cmd.Offset, ProgramWord: Word{Match: label}, Dynamic: true, DynamicReason: why}
	w.add(n, c)
}

// configFile records a configuration file that can name commands (a git
// or ssh configuration): it counts as a script for the origin checks.
func (w *walker) configFile(v Word) {
	w.a.ConfigFiles = append(w.a.ConfigFiles, v)
}

// gitConfigEnv pairs GIT_CONFIG_KEY_n with GIT_CONFIG_VALUE_n, in whichever
// order they are assigned, and analyses the value of a key that runs
// commands.
func (w *walker) gitConfigEnv(cmd Command, kind, n string, v Word, c ctx) {
	if w.gitEnv == nil {
		w.gitEnv = map[string][2]*Word{}
	}
	pair := w.gitEnv[n]
	vv := v
	if kind == "KEY" {
		pair[0] = &vv
	} else {
		pair[1] = &vv
	}
	w.gitEnv[n] = pair
	if pair[0] == nil || pair[1] == nil {
		return
	}
	key, val := *pair[0], *pair[1]
	if !key.Static {
		w.dynamicUse(cmd, "GIT_CONFIG_KEY_"+n+"=", fmt.Sprintf("GIT_CONFIG_KEY_%s names a git setting computed at run time", n), c)
		return
	}
	var e effects
	w.gitSetting(&cmd, key.Value, val, "GIT_CONFIG_VALUE_"+n, &e)
	for _, s := range e.scripts {
		w.subScript(cmd, s, c)
	}
	for _, d := range e.derived {
		if d.unknown != "" {
			w.dynamicUse(cmd, "GIT_CONFIG_VALUE_"+n+"=", d.unknown, c)
			continue
		}
		w.emitDerived(Command{Program: "git", PipePos: cmd.PipePos, StdinRedirected: cmd.StdinRedirected, Offset: cmd.Offset}, d, c)
	}
}
