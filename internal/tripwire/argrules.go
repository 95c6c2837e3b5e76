package tripwire

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/strictjson"
)

// ArgRule is a banned-argument rule (docs/checks.md#argument-rules,
// banned_arg_rules). It fires when every condition it sets holds. The
// structured conditions (option, option_value, subcommand, operand,
// last_operand, operand_matches_all, absent) read the command line with the
// option model of package shell, so `curl -d@f`, `rm -vr`, `nc -e/bin/sh` and
// `--long=value` are the options they are; `require` keeps its meaning of
// a regex that fully matches some argument word, an option's name or an
// option's value. A word that except fully matches counts for no
// condition.
type ArgRule struct {
	ID      string
	Program string

	prog shell.Glob
	// match returns the rule's compiled conditions. A rule of the file
	// is compiled at load, so that every bad regex is reported; a
	// built-in rule is compiled the first time its program is run, as
	// most never are and compiling them all is most of the cost of
	// loading the defaults (docs/operate/performance.md#start-up). An
	// error makes the rule fire (fail closed).
	match func() (*argMatch, error)
	src   argRuleSrc
}

// argMatch holds the compiled conditions of an ArgRule.
type argMatch struct {
	require []*regexp.Regexp
	except  *regexp.Regexp
	test    shell.ArgTest
}

// argRuleSrc is one rule as written in tripwire.json.
type argRuleSrc struct {
	ID                string   `json:"id"`
	Program           string   `json:"program"`
	Require           []string `json:"require,omitempty"`
	Option            []string `json:"option,omitempty"`
	OptionValue       string   `json:"option_value,omitempty"`
	Subcommand        *string  `json:"subcommand,omitempty"`
	Operand           string   `json:"operand,omitempty"`
	LastOperand       string   `json:"last_operand,omitempty"`
	OperandMatchesAll []string `json:"operand_matches_all,omitempty"`
	Absent            []string `json:"absent,omitempty"`
	Except            string   `json:"except,omitempty"`
}

// Patterns shared by the default rules.
const (
	// reRootOrHome is /, a home (~, $HOME, ${HOME:?}, …, see
	// shell.PathForm), or a glob directly under either: after cleaning,
	// /.., $HOME/. and /tmp/../* are among them.
	reRootOrHome = `/|~|(/|~/)[^/]*[*?\[][^/]*`
	// reDevSafe are device files that are not disks.
	reDevSafe = `/dev/(null|zero|full|random|urandom|stdout|stderr|stdin|tty|fd/[0-9]+|pts/[0-9]+|shm(/.*)?)`
	// reScratchPath is $TMPDIR or a path below it without a ".."
	// component.
	reScratchPath = `\$\{?TMPDIR\}?(/(\.?[^./$\x60][^/$\x60]*|\.\.[^/$\x60]+|\.)?)*`
	// reChmodOther grants write to others: 0777, 1777, o+w, a=rwx,
	// u+w,o+w (a clause of a list).
	reChmodOther = `0*[0-7]?[0-7]{2}[2367]|(.*,)?[ugoa]*[oa][ugoa]*([-+=][rwxXstugo]*)*[+=][rwxXst]*w[rwxXst]*([-+=][rwxXstugo]*)*(,.*)?`
	// reChmodSetID sets the set-user-ID or set-group-ID bit: 4755, u+s.
	reChmodSetID = `0*[2-7][0-7]{3}|(.*,)?[ugoa]*([-+=][rwxXstugo]*)*[+=][rwxXt]*s[rwxXst]*([-+=][rwxXstugo]*)*(,.*)?`
	// rePowerUnit is a systemd unit that powers off, reboots, sleeps or
	// changes the run level.
	rePowerUnit = `(systemd-)?(reboot|poweroff|halt|kexec|suspend|hibernate|hybrid-sleep|suspend-then-hibernate|sleep|rescue|emergency|ctrl-alt-del|soft-reboot|exit|shutdown)(\.(target|service))?`
	// reLocalScheme is a URL curl would not fetch over HTTP: a local file
	// or a raw protocol, also inside curl's {a,b} globbing.
	reLocalScheme = `(?i)((file|gopher|dict|telnet|ldaps?|smbs?|tftp|scp|sftp|smtps?|pop3s?|imaps?|mqtts?|rtsp):|\{[^}]*\b(file|gopher|dict|telnet|ldaps?|smbs?|tftp|scp|sftp|smtps?|pop3s?|imaps?)\b[^}]*\}:).*`
)

// everyProcess are names no ordinary pkill pattern matches all of.
var everyProcess = []string{"systemd", "init", "sh", "bash", "sshd", "kworker/0:1", "python3", "ironvise"}

func strPtr(s string) *string { return &s }

var defaultArgRules = []argRuleSrc{
	{ID: "rm_recursive_root", Program: "rm", Option: []string{"-r", "-R", "--recursive"}, Operand: reRootOrHome},
	{ID: "rm_no_preserve_root", Program: "rm", Option: []string{"--no-preserve-root"}},
	{ID: "dd_device_write", Program: "dd", Operand: `of=(/dev/.+|.*[$\x60].*)`, Except: `of=(` + reDevSafe + `|` + reScratchPath + `)`},
	{ID: "tee_device_write", Program: "tee", Operand: `/dev/.+`, Except: reDevSafe},
	{ID: "copy_device_write", Program: "{cp,mv,install,ln,rsync}", LastOperand: `/dev/.+`, Except: reDevSafe},
	{ID: "shred_device", Program: "shred", Operand: `/dev/.+`, Except: reDevSafe},
	{ID: "chmod_world_writable", Program: "chmod", Operand: reChmodOther},
	{ID: "chmod_setid", Program: "chmod", Operand: reChmodSetID},
	{ID: "setfacl_world_writable", Program: "setfacl", Option: []string{"-m", "--modify", "--set"},
		OptionValue: `(.*,)?(d(efault)?:)?o(ther)?:[^,]*w[^,]*(,.*)?`},
	{ID: "nc_exec", Program: "{nc,ncat,netcat,nc.*}", Option: []string{"-e", "-c", "--exec", "--sh-exec", "--lua-exec"}},
	{ID: "socat_exec", Program: "socat", Operand: `(?i)(.*!!)?[[:space:]]*(exec|system|shell)[[:space:]]*:.*`},
	{ID: "systemctl_power", Program: "systemctl",
		Subcommand: strPtr(`reboot|poweroff|halt|kexec|suspend|hibernate|hybrid-sleep|suspend-then-hibernate|sleep|rescue|emergency|isolate|default|exit|soft-reboot|switch-root`)},
	{ID: "systemctl_power_unit", Program: "systemctl",
		Subcommand: strPtr(`start|restart|try-restart|reload-or-restart|try-reload-or-restart|condrestart|force-reload|reload|enable|reenable|set-default|add-wants|add-requires|link|preset`),
		Operand:    rePowerUnit},
	{ID: "systemctl_persist", Program: "systemctl", Subcommand: strPtr(`enable|reenable|link|preset|preset-all|set-default|add-wants|add-requires|edit`)},
	{ID: "loginctl_power", Program: "loginctl",
		Subcommand: strPtr(`poweroff|reboot|halt|suspend|hibernate|hybrid-sleep|suspend-then-hibernate|kexec|sleep|enable-linger|terminate-session|terminate-user|terminate-seat|kill-session|kill-user`)},
	{ID: "init_runlevel", Program: "init", Operand: `[0-6sSqQuU]`},
	{ID: "kill_all", Program: "kill", Require: []string{`-1`, `-([02-9]|1[0-9]+|[0-9]{2,})|-[A-Z]+|-SIG[A-Z]+|-s|--`}},
	{ID: "pkill_all", Program: "pkill", OperandMatchesAll: everyProcess},
	{ID: "pkill_inverse", Program: "pkill", Option: []string{"-v", "--inverse"}},
	{ID: "killall_all", Program: "killall", Option: []string{"-r", "--regexp"}, OperandMatchesAll: everyProcess},
	{ID: "crontab_install", Program: "crontab", Operand: `.*`},
	{ID: "crontab_install_stdin", Program: "crontab", Subcommand: strPtr(``), Absent: []string{"-l", "-r", "-e", "-V"}},
	{ID: "at_schedule", Program: "{at,batch}", Absent: []string{"-l", "-d", "-r", "-c", "-V"}},
	{ID: "find_delete", Program: "find", Option: []string{"-delete"}},
	{ID: "find_write", Program: "find", Option: []string{"-fprint", "-fprint0", "-fprintf", "-fls"}},
	{ID: "curl_write_or_upload", Program: "curl", Option: []string{"-o", "--output", "-O", "--remote-name", "--remote-name-all",
		"--output-dir", "-T", "--upload-file", "-F", "--form", "--form-string", "-d", "--data", "--data-ascii", "--data-binary",
		"--data-raw", "--data-urlencode", "--json", "-K", "--config", "--connect-to", "--resolve", "--unix-socket",
		"--abstract-unix-socket", "-x", "--proxy", "--preproxy", "--socks4", "--socks4a", "--socks5", "--socks5-hostname", "-D",
		"--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii", "--stderr", "--libcurl", "--etag-save", "--hsts",
		"--alt-svc", "--variable", "-Q", "--quote"}},
	{ID: "curl_header_file", Program: "curl", Option: []string{"-H", "--header", "--proxy-header"}, OptionValue: `@.*`},
	{ID: "curl_cookie_file", Program: "curl", Option: []string{"-b", "--cookie"}, OptionValue: `[^=]*`},
	{ID: "curl_scheme", Program: "curl", Operand: reLocalScheme},
	{ID: "curl_url_scheme", Program: "curl", Option: []string{"--url"}, OptionValue: reLocalScheme},
	{ID: "date_set", Program: "date", Option: []string{"-s", "--set"}},
	{ID: "date_set_operand", Program: "date", Operand: `[^+].*`},
	{ID: "hostname_set", Program: "hostname", Operand: `.+`},
	{ID: "hostname_set_file", Program: "hostname", Option: []string{"-F", "--file", "-b", "--boot"}},
}

var argRuleKeys = []string{"id", "program", "require", "option", "option_value", "subcommand", "operand", "last_operand",
	"operand_matches_all", "absent", "except"}

func (l *loader) argRules(root *strictjson.Node, key string, def []argRuleSrc) []ArgRule {
	n := root.Get(key)
	var srcs []argRuleSrc
	path := "$." + key
	if n == nil {
		if def == nil {
			return nil
		}
		// A copy: the set is shared by every configuration of the
		// process, and a Config's fields are the caller's to change.
		return slices.Clone(builtinArgRules())
	} else if n.Kind != strictjson.Array {
		l.fail(path, "expected array of rules, got %s", n.Kind)
		return nil
	}
	if cached, ok := l.cache.get(key); ok {
		return cached
	}
	problems := len(l.problems)
	for i, e := range n.Elems {
		if r, ok := l.argRuleSrc(e, strictjson.Index(path, i)); ok {
			srcs = append(srcs, r)
		}
	}
	out := make([]ArgRule, 0, len(srcs))
	for i, s := range srcs {
		if r, ok := l.compileArgRule(s, strictjson.Index(path, i)); ok {
			out = append(out, r)
		}
	}
	if len(l.problems) == problems {
		l.cache.put(key, out)
	}
	return out
}

// builtinArgRules are the default rules, built once per process with their
// conditions compiled on first use (ArgRule.match). TestBuiltinArgRules
// loads them as a file's rules, which checks everything a file's rule is
// checked for.
var builtinArgRules = sync.OnceValue(buildBuiltinArgRules)

func buildBuiltinArgRules() []ArgRule {
	out := make([]ArgRule, 0, len(defaultArgRules))
	for _, s := range defaultArgRules {
		r := ArgRule{ID: s.ID, Program: s.Program, src: s}
		g, err := shell.CompileGlob(s.Program)
		if err != nil {
			// Should a tested built-in rule be broken anyway, it
			// applies to every program and always fires.
			g, _ = shell.CompileGlob("*")
			r.prog = g
			r.match = func() (*argMatch, error) { return nil, err }
			out = append(out, r)
			continue
		}
		r.prog = g
		r.match = sync.OnceValues(func() (*argMatch, error) {
			var first error
			m := compileArgMatch(s, func(key, re string, err error) {
				if first == nil {
					first = fmt.Errorf("built-in rule %s: %s: bad regex %q: %w", s.ID, key, re, err)
				}
			})
			return m, first
		})
		out = append(out, r)
	}
	return out
}

// compileArgMatch compiles the regexps of a rule, each anchored to match a
// whole text; bad reports each one that does not compile (it is then
// left nil, so the result is only usable when bad was never called).
func compileArgMatch(s argRuleSrc, bad func(key, re string, err error)) *argMatch {
	full := func(key, re string) *regexp.Regexp {
		c, err := regexp.Compile(`^(?:` + re + `)$`)
		if err != nil {
			bad(key, re, err)
		}
		return c
	}
	m := &argMatch{test: shell.ArgTest{Options: s.Option, Absent: s.Absent, OperandMatchesAll: s.OperandMatchesAll}}
	for j, re := range s.Require {
		if c := full(strictjson.Index("require", j), re); c != nil {
			m.require = append(m.require, c)
		}
	}
	if s.Except != "" {
		m.except = full("except", s.Except)
	}
	if s.OptionValue != "" {
		m.test.OptionValue = full("option_value", s.OptionValue)
	}
	if s.Subcommand != nil {
		m.test.Subcommand = full("subcommand", *s.Subcommand)
	}
	if s.Operand != "" {
		m.test.Operand = full("operand", s.Operand)
	}
	if s.LastOperand != "" {
		m.test.LastOperand = full("last_operand", s.LastOperand)
	}
	return m
}

// compileArgRule compiles one rule of the file; every problem is reported.
func (l *loader) compileArgRule(s argRuleSrc, p string) (ArgRule, bool) {
	r := ArgRule{ID: s.ID, Program: s.Program, src: s}
	ok := true
	g, err := shell.CompileGlob(s.Program)
	if err != nil {
		l.fail(p+".program", "%v", err)
		ok = false
	}
	r.prog = g
	m := compileArgMatch(s, func(key, re string, err error) {
		l.fail(p+"."+key, "bad regex %q: %v", re, err)
		ok = false
	})
	r.match = func() (*argMatch, error) { return m, nil }
	for j, o := range append(slices.Clone(s.Option), s.Absent...) {
		if len(o) < 2 || o[0] != '-' || strings.ContainsAny(o, " =") {
			l.fail(strictjson.Index(p+".option", j), "%q is not an option name (write -x or --long, without a value)", o)
			ok = false
		}
	}
	if len(m.require) == 0 && m.test.Empty() && ok {
		l.fail(p, "the rule has no condition (set require, option, option_value, subcommand, operand, last_operand, operand_matches_all or absent)")
		ok = false
	}
	return r, ok
}

func (l *loader) argRuleSrc(n *strictjson.Node, path string) (argRuleSrc, bool) {
	var r argRuleSrc
	if n.Kind != strictjson.Object {
		l.fail(path, "expected object, got %s", n.Kind)
		return r, false
	}
	ok := true
	for _, k := range n.Keys {
		if !slices.Contains(argRuleKeys, k) {
			l.fail(strictjson.Child(path, k), "unknown key (allowed: %s)", strings.Join(argRuleKeys, ", "))
			ok = false
		}
	}
	str := func(k string, required bool) (string, bool) {
		v := n.Get(k)
		if v == nil {
			if required {
				l.fail(path+"."+k, "required")
				ok = false
			}
			return "", false
		}
		if v.Kind != strictjson.String || (required && v.Str == "") {
			l.fail(path+"."+k, "expected non-empty string, got %s", v.Kind)
			ok = false
			return "", false
		}
		return v.Str, true
	}
	list := func(k string) []string {
		v := n.Get(k)
		if v == nil {
			return nil
		}
		if v.Kind != strictjson.Array || len(v.Elems) == 0 {
			l.fail(path+"."+k, "expected a non-empty array of strings")
			ok = false
			return nil
		}
		var out []string
		for i, e := range v.Elems {
			if e.Kind != strictjson.String {
				l.fail(strictjson.Index(path+"."+k, i), "expected string, got %s", e.Kind)
				ok = false
				continue
			}
			out = append(out, e.Str)
		}
		return out
	}
	r.ID, _ = str("id", true)
	r.Program, _ = str("program", true)
	r.Except, _ = str("except", false)
	r.OptionValue, _ = str("option_value", false)
	r.Operand, _ = str("operand", false)
	r.LastOperand, _ = str("last_operand", false)
	if v := n.Get("subcommand"); v != nil {
		if v.Kind != strictjson.String {
			l.fail(path+".subcommand", "expected string, got %s", v.Kind)
			ok = false
		} else {
			r.Subcommand = strPtr(v.Str)
		}
	}
	r.Require = list("require")
	r.Option = list("option")
	r.OperandMatchesAll = list("operand_matches_all")
	r.Absent = list("absent")
	return r, ok
}

// fires applies the rule to one command (its program already matched). A
// rule whose conditions cannot be compiled fires: the command is denied
// rather than let through unchecked.
func (r *ArgRule) fires(c *shell.Command, forms func(shell.Word) []string) bool {
	m, err := r.match()
	if err != nil {
		return true
	}
	excluded := func(texts []string) bool {
		return m.except != nil && slices.ContainsFunc(texts, m.except.MatchString)
	}
	if len(m.require) > 0 {
		words := argWords(c)
		for _, re := range m.require {
			if !slices.ContainsFunc(words, func(w string) bool { return !excluded([]string{w}) && re.MatchString(w) }) {
				return false
			}
		}
	}
	if m.test.Empty() {
		return true
	}
	f := forms
	if m.except != nil {
		f = func(w shell.Word) []string {
			t := forms(w)
			if excluded(t) {
				return nil
			}
			return t
		}
	}
	return m.test.Match(c, f)
}

// argWords are the texts a require regex is matched against: every
// argument word, and every option's name and value as the option model
// reads them (so -d@file also counts as -d and @file).
func argWords(c *shell.Command) []string {
	out := make([]string, 0, len(c.Args)+2*len(c.Parsed.Opts))
	for _, a := range c.Args {
		out = append(out, a.Match)
	}
	for _, o := range c.Parsed.Opts {
		out = append(out, o.Name)
		if o.HasValue {
			out = append(out, o.Value.Match)
		}
	}
	return out
}

// operandForms returns the texts an operand is compared by: its own forms
// (shell.Forms), and for a relative path after a cd, the path in every
// directory the script may be in, a home written "~" (`cd / && rm -rf *`
// is `rm -rf /*`).
func (t *Tripwire) operandForms(v *View) func(shell.Word) []string {
	if !v.Command.ChangesDir {
		return shell.Forms
	}
	home := cdHome(v.Command)
	return func(w shell.Word) []string {
		out := shell.Forms(w)
		f, ok := w.PathForm()
		if !ok || f == "" || f[0] == '/' || f[0] == '~' {
			return out
		}
		if home {
			out = append(out, cleanHome("~/"+f))
		}
		for _, d := range v.cwds {
			j := path.Join(filepath.ToSlash(d), f)
			for _, h := range t.list.Homes {
				h = filepath.ToSlash(h)
				if j == h {
					j = "~"
				} else if rest, ok := strings.CutPrefix(j, h+"/"); ok {
					j = "~/" + rest
				}
			}
			out = append(out, j)
		}
		return out
	}
}

// cdHome reports a cd or pushd to a home: alone, to ~ or to $HOME.
func cdHome(a *shell.Analysis) bool {
	for i := range a.Commands {
		c := &a.Commands[i]
		if c.Program != "cd" && c.Program != "pushd" {
			continue
		}
		ops := c.Parsed.Operands
		if len(ops) == 0 {
			return true
		}
		if f, ok := ops[0].PathForm(); ok && f == "~" {
			return true
		}
	}
	return false
}

// cleanHome cleans a path below a home, keeping the leading "~".
func cleanHome(p string) string {
	r := path.Clean("/" + strings.TrimPrefix(p, "~"))
	if r == "/" {
		return "~"
	}
	return "~" + r
}
