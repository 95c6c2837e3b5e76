package shell

import (
	"strings"
)

// git runs commands named by its configuration (core.pager, aliases with
// "!", filters, credential helpers, ext:: URLs) and by some subcommands'
// options (grep -O, rebase --exec, bisect run, submodule foreach,
// filter-branch, difftool --extcmd, clone --upload-pack). Each is
// analysed like sh -c; one computed at run time is dynamic.

// gitKey is how git uses the value of one setting.
type gitKey int

const (
	gitData    gitKey = iota // not a command
	gitShell                 // a command line run by the shell
	gitBang                  // a command line when it starts with "!" (alias.*, credential helpers, submodule update)
	gitBoolCmd               // a boolean, or a command line (pager.*, core.fsmonitor)
	gitFile                  // a file or directory of configuration or hooks
	gitURL                   // a URL: ext::… runs a command
	gitProgram               // a program path (sendemail.smtpServer)
	gitDynamic               // a setting the check cannot follow
)

// gitKeys maps section, subsection ("*" for any, "" for none) and name,
// lowercased, to how git uses the value.
var gitKeys = map[[3]string]gitKey{
	{"core", "", "pager"}: gitShell, {"core", "", "editor"}: gitShell, {"core", "", "sshcommand"}: gitShell,
	{"core", "", "askpass"}: gitShell, {"core", "", "gitproxy"}: gitShell, {"core", "", "alternaterefscommand"}: gitShell,
	{"core", "", "fsmonitor"}: gitBoolCmd, {"core", "", "hookspath"}: gitFile, {"sequence", "", "editor"}: gitShell,
	{"diff", "", "external"}: gitShell, {"diff", "*", "command"}: gitShell, {"diff", "*", "textconv"}: gitShell,
	{"merge", "*", "driver"}: gitShell, {"filter", "*", "clean"}: gitShell, {"filter", "*", "smudge"}: gitShell,
	{"filter", "*", "process"}: gitShell, {"pager", "", "*"}: gitBoolCmd, {"alias", "", "*"}: gitBang,
	{"credential", "", "helper"}: gitBang, {"credential", "*", "helper"}: gitBang, {"gpg", "", "program"}: gitShell,
	{"gpg", "*", "program"}: gitShell, {"uploadpack", "", "packobjectshook"}: gitShell,
	{"remote", "*", "uploadpack"}: gitShell, {"remote", "*", "receivepack"}: gitShell, {"remote", "*", "url"}: gitURL,
	{"remote", "*", "pushurl"}: gitURL, {"url", "*", "insteadof"}: gitURL, {"url", "*", "pushinsteadof"}: gitURL,
	{"submodule", "*", "url"}: gitURL, {"submodule", "*", "update"}: gitBang, {"include", "", "path"}: gitFile,
	{"includeif", "*", "path"}: gitFile, {"web", "", "browser"}: gitShell, {"browser", "*", "cmd"}: gitShell,
	{"man", "*", "cmd"}: gitShell, {"difftool", "*", "cmd"}: gitShell, {"mergetool", "*", "cmd"}: gitShell,
	{"interactive", "", "difffilter"}: gitShell, {"sendemail", "", "tocmd"}: gitShell, {"sendemail", "", "cccmd"}: gitShell,
	{"sendemail", "", "sendmailcmd"}: gitShell, {"sendemail", "", "smtpserver"}: gitProgram,
	{"trailer", "*", "command"}: gitShell, {"trailer", "*", "cmd"}: gitShell, {"protocol", "", "allow"}: gitData,
	{"core", "", "worktree"}: gitData, {"instaweb", "", "httpd"}: gitShell,
}

// gitKeyKind classifies a setting name (section[.subsection].name; the
// section and name are case-insensitive).
func gitKeyKind(key string) gitKey {
	i, j := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if i < 0 {
		return gitData
	}
	sec, name, subsec := strings.ToLower(key[:i]), strings.ToLower(key[j+1:]), ""
	if j > i {
		subsec = key[i+1 : j]
	}
	try := [][3]string{{sec, subsec, name}, {sec, "", "*"}}
	if subsec != "" {
		try = [][3]string{{sec, "*", name}}
	}
	for _, k := range try {
		if g, ok := gitKeys[k]; ok {
			return g
		}
	}
	return gitData
}

// gitSetting analyses one key=value setting that git will use.
func (w *walker) gitSetting(cmd *Command, key string, val Word, label string, e *effects) {
	label = label + " " + key
	switch gitKeyKind(key) {
	case gitShell:
		e.script(val, label, true)
	case gitBoolCmd:
		switch strings.ToLower(val.Match) {
		case "", "true", "false", "yes", "no", "on", "off", "1", "0":
			if val.Static {
				return
			}
		}
		e.script(val, label, true)
	case gitBang:
		if !val.Static && !strings.HasPrefix(val.Match, "!") && strings.ContainsAny(val.Match, "$`") {
			e.script(val, label, true) // cannot tell whether it starts with "!"
			return
		}
		if rest, ok := strings.CutPrefix(val.Match, "!"); ok {
			e.script(sub(val, rest), label, true)
		} else if strings.HasPrefix(val.Match, "/") {
			e.derive(derivation{words: []Word{val}})
		}
	case gitURL:
		if rest, ok := strings.CutPrefix(val.Match, "ext::"); ok {
			e.script(sub(val, rest), label+"=ext::", false)
		} else if !val.Static && strings.HasPrefix(val.Match, "$") {
			e.script(val, label, false)
		}
	case gitFile:
		w.configFile(val)
	case gitProgram:
		if strings.HasPrefix(val.Match, "/") || !val.Static {
			e.derive(derivation{words: []Word{val}})
		}
	}
}

// gitPair analyses a "key=value" word (git -c, clone --config).
func (w *walker) gitPair(cmd *Command, kv Word, label string, e *effects) {
	key, val, found := strings.Cut(kv.Match, "=")
	if strings.ContainsAny(key, "$`") {
		e.derive(derivation{unknown: label + " sets a git setting whose name is computed at run time"})
		return
	}
	if !found {
		val = "true" // git -c key alone means key=true
	}
	w.gitSetting(cmd, key, sub(kv, val), label, e)
}

var (
	specGitGrep   = &OptSpec{ShortValue: "efmABC", ShortOptional: "O", LongValue: []string{"max-count", "after-context", "before-context", "context", "threads", "max-depth"}, LongOptional: []string{"open-files-in-pager", "color"}, LongFlags: []string{"cached", "untracked", "no-index", "recurse-submodules", "text", "textconv", "ignore-case", "word-regexp", "invert-match", "full-name", "extended-regexp", "basic-regexp", "perl-regexp", "fixed-strings", "line-number", "column", "files-with-matches", "name-only", "files-without-match", "null", "only-matching", "count", "break", "heading", "show-function", "function-context", "quiet", "all-match", "and", "or", "not", "exclude-standard"}, Abbrev: true}
	specGitRebase = &OptSpec{ShortValue: "xsXS", LongValue: []string{"exec", "onto", "strategy", "strategy-option", "gpg-sign"}, Abbrev: true}
	specGitDiffT  = &OptSpec{ShortValue: "xtX", LongValue: []string{"extcmd", "tool"}, Abbrev: true}
	specGitFetch  = &OptSpec{ShortValue: "ucboj", LongValue: []string{"upload-pack", "config", "branch", "origin", "depth", "reference", "separate-git-dir", "template", "jobs", "receive-pack", "exec", "remote"}, Abbrev: true}
	specGitConfig = &OptSpec{ShortValue: "f", LongValue: []string{"file", "blob", "type", "default", "comment", "value"}, Abbrev: true}
	specGitFilter = &OptSpec{LongValue: []string{"env-filter", "tree-filter", "index-filter", "parent-filter", "msg-filter", "commit-filter", "tag-name-filter", "setup", "subdirectory-filter", "prune-empty", "original", "state-branch", "d"}}
)

// git reads git's global options and the subcommands that run commands.
func (w *walker) git(cmd *Command, e *effects) {
	p := &cmd.Parsed
	for _, o := range p.Opts {
		switch o.Name {
		case "-c":
			if o.HasValue {
				w.gitPair(cmd, o.Value, "git -c", e)
			}
		case "--config-env":
			// --config-env=key=ENVVAR takes the value from a variable.
			key, _, _ := strings.Cut(o.Value.Match, "=")
			if k := gitKeyKind(key); k != gitData || strings.ContainsAny(key, "$`") {
				e.derive(derivation{unknown: "git --config-env sets " + key + " from a variable, so the command it names is decided at run time"})
			}
		case "--exec-path":
			if o.HasValue {
				e.derive(derivation{unknown: "git --exec-path runs git's commands from " + quoteMatch(o.Value.Match)})
			}
		}
	}
	sc, ok := p.First()
	if !ok {
		return
	}
	rest := p.Operands[1:]
	for _, r := range rest {
		if v, ok := strings.CutPrefix(r.Match, "ext::"); ok {
			e.script(sub(r, v), "git ext::", false)
		}
	}
	switch sc.Match {
	case "grep":
		q := ParseArgs(rest, specGitGrep)
		for _, o := range q.Opts {
			if (o.Name == "-O" || o.Name == "--open-files-in-pager") && o.HasValue {
				e.script(o.Value, "git grep --open-files-in-pager", false)
			}
		}
	case "config":
		w.gitConfig(cmd, rest, e)
	case "rebase":
		for _, v := range ParseArgs(rest, specGitRebase).Values("-x", "--exec") {
			e.script(v, "git rebase --exec", false)
		}
	case "difftool":
		for _, v := range ParseArgs(rest, specGitDiffT).Values("-x", "--extcmd") {
			e.script(v, "git difftool --extcmd", false)
		}
	case "bisect":
		if len(rest) > 1 && rest[0].Match == "run" {
			e.derive(derivation{words: rest[1:]})
		}
	case "submodule":
		q := ParseArgs(rest, &OptSpec{InOrder: true})
		if f, ok := q.First(); ok && f.Match == "foreach" {
			r := ParseArgs(q.Operands[1:], &OptSpec{InOrder: true})
			if len(r.Operands) > 0 {
				e.script(joinWords(r.Operands), "git submodule foreach", false)
			}
		}
	case "filter-branch":
		q := ParseArgs(rest, specGitFilter)
		for _, o := range q.Opts {
			switch o.Name {
			case "--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter", "--commit-filter",
				"--tag-name-filter", "--setup":
				if o.HasValue {
					e.script(o.Value, "git filter-branch "+o.Name, false)
				}
			}
		}
	case "clone", "fetch", "pull", "ls-remote", "archive", "push", "send-pack", "fetch-pack", "remote":
		q := ParseArgs(rest, specGitFetch)
		for _, o := range q.Opts {
			if !o.HasValue {
				continue
			}
			switch o.Name {
			case "--upload-pack", "--receive-pack", "--exec":
				e.script(o.Value, "git "+sc.Match+" "+o.Name, false)
			case "-u":
				if sc.Match == "clone" || sc.Match == "ls-remote" {
					e.script(o.Value, "git "+sc.Match+" -u", false)
				}
			case "-c", "--config":
				if sc.Match == "clone" {
					w.gitPair(cmd, o.Value, "git clone --config", e)
				}
			}
		}
	}
}

// gitConfig analyses `git config [scope] key value` and `git config set
// key value`: a setting written now is used by the next git command.
func (w *walker) gitConfig(cmd *Command, args []Word, e *effects) {
	q := ParseArgs(args, specGitConfig)
	ops := q.Operands
	if len(ops) > 0 && (ops[0].Match == "set" || ops[0].Match == "--add") {
		ops = ops[1:]
	}
	if q.Has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--unset", "--unset-all", "-l", "--list", "--remove-section",
		"--rename-section", "-e", "--edit", "--get-color", "--get-colorbool") {
		return
	}
	if len(ops) >= 2 && ops[0].Static {
		w.gitSetting(cmd, ops[0].Value, ops[1], "git config", e)
	}
}
