package shell

import (
	"fmt"
	"strings"
)

// wrapper describes a program that runs another program given as its
// operands (docs/checks.md#commands, "Wrappers are looked through").
type wrapper struct {
	opts *OptSpec
	// skip is the number of operands before the program: timeout's
	// duration, flock's file, taskset's mask, faketime's time.
	skip int
	// lead is the number of operands before the options: setarch's
	// architecture.
	lead int
	// noRun lists options with which the wrapper runs no program
	// (command -v, ionice -p, taskset -p).
	noRun []string
	// shell lists options with which the wrapper runs an interactive
	// shell reading stdin (systemd-run --shell, torsocks --shell).
	shell []string
}

// strict builds a Strict, InOrder spec: the program a wrapper runs starts
// at its first operand, and an option the analysis does not know could
// take the word that would otherwise be read as that program.
func strict(shortValue, shortFlags string, longValue, longFlags []string) *OptSpec {
	return &OptSpec{ShortValue: shortValue, ShortFlags: shortFlags, LongValue: longValue,
		LongFlags: append(longFlags, "help", "version"), InOrder: true, Strict: true, Abbrev: true}
}

var wrappers = map[string]wrapper{
	"command":  {opts: strict("", "pvV", nil, nil), noRun: []string{"-v", "-V"}},
	"builtin":  {opts: strict("", "", nil, nil)},
	"exec":     {opts: strict("a", "cl", nil, nil)},
	"nohup":    {opts: strict("", "", nil, nil)},
	"setsid":   {opts: strict("", "cfw", nil, []string{"ctty", "fork", "wait"})},
	"time":     {opts: strict("fo", "apqv", []string{"format", "output"}, []string{"append", "portability", "verbose", "quiet"})},
	"unbuffer": {opts: strict("", "p", nil, nil)},
	"nice": {opts: func() *OptSpec {
		s := strict("n", "", []string{"adjustment"}, nil)
		s.NumericFlag = true // nice -5 cmd
		return s
	}()},
	"ionice": {opts: strict("cnpPu", "thV", []string{"class", "classdata", "pid", "pgid", "uid"}, []string{"ignore"}),
		noRun: []string{"-p", "-P", "-u", "--pid", "--pgid", "--uid"}},
	"stdbuf":  {opts: strict("ioe", "", []string{"input", "output", "error"}, nil)},
	"timeout": {opts: strict("ks", "fpv", []string{"kill-after", "signal"}, []string{"foreground", "preserve-status", "verbose"}), skip: 1},
	"taskset": {opts: strict("", "acp", nil, []string{"all-tasks", "cpu-list", "pid"}), skip: 1, noRun: []string{"-p", "--pid"}},
	"chrt": {opts: strict("TPD", "abdfimoprReV", []string{"sched-runtime", "sched-period", "sched-deadline"},
		[]string{"all-tasks", "batch", "deadline", "fifo", "idle", "max", "other", "pid", "rr", "reset-on-fork", "ext", "verbose"}),
		skip: 1, noRun: []string{"-p", "--pid", "-m", "--max"}},
	"strace": {opts: strict("abeEIoOpPsSuUX", "AcCdDfFhiknqrtTvVwxyYzZ",
		[]string{"trace", "trace-path", "trace-fds", "signal", "status", "abbrev", "verbose", "raw", "read", "write", "quiet",
			"decode-fds", "decode-pids", "secontext", "kvm", "fault", "inject", "output", "attach", "user", "env", "string-limit",
			"const-print-style", "columns", "summary-sort-by", "summary-columns", "detach-on", "absolute-timestamps",
			"timestamps", "syscall-times", "stack-traces"},
		[]string{"follow-forks", "output-separately", "summary-only", "summary", "summary-wall-clock", "no-abbrev", "debug",
			"daemonize", "seccomp-bpf", "kill-on-exit", "relative-timestamps", "instruction-pointer", "tips"})},
	"ltrace": {opts: strict("aADeFlnopsuwx", "bcCfhiLrStTV", []string{"align", "indent", "output", "library", "config"},
		[]string{"demangle", "debug"})},
	"systemd-run": {opts: strict("upEHM", "dGtPqrShV",
		[]string{"unit", "property", "description", "slice", "uid", "gid", "nice", "working-directory", "setenv", "on-active",
			"on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar", "timer-property", "path-property",
			"socket-property", "machine", "host", "service-type", "job-mode", "expand-environment", "json"},
		[]string{"user", "system", "scope", "same-dir", "pty", "pipe", "quiet", "no-block", "wait", "collect",
			"remain-after-exit", "send-sighup", "shell", "on-clock-change", "on-timezone-change", "no-ask-password",
			"slice-inherit", "verbose"}),
		shell: []string{"-S", "--shell"}},
	"prlimit": {opts: func() *OptSpec {
		s := strict("po", "", []string{"pid", "output"}, []string{"noheadings", "raw", "verbose"})
		s.ShortOptional = "cdefilmnqrstuvxy"
		s.LongOptional = []string{"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile",
			"nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}
		return s
	}(), noRun: []string{"-p", "--pid"}},
	"setarch": {opts: strict("", "3BFILRSTXZvhV", nil, []string{"addr-no-randomize", "fdpic-funcptrs", "mmap-page-zero",
		"addr-compat-layout", "read-implies-exec", "32bit", "short-inode", "whole-seconds", "sticky-timeouts", "3gb", "4gb",
		"uname-2.6", "verbose", "list"}), lead: 1},
	"linux32":          {opts: strict("", "3BFILRSTXZvhV", nil, []string{"addr-no-randomize", "uname-2.6", "verbose"})},
	"linux64":          {opts: strict("", "3BFILRSTXZvhV", nil, []string{"addr-no-randomize", "uname-2.6", "verbose"})},
	"eatmydata":        {opts: strict("", "", nil, nil)},
	"fakeroot":         {opts: strict("lsib", "uhv", []string{"lib", "faked"}, []string{"unknown-is-real"})},
	"faketime":         {opts: strict("p", "mf", nil, []string{"exclude-monotonic", "date-prog"}), skip: 1},
	"torsocks":         {opts: strict("uapP", "idqhV", []string{"user", "pass", "address", "port"}, []string{"isolate", "debug", "quiet", "shell"}), shell: []string{"--shell"}},
	"proxychains":      {opts: strict("f", "q", nil, nil)},
	"proxychains4":     {opts: strict("f", "q", nil, nil)},
	"xvfb-run":         {opts: strict("nsefpw", "alh", []string{"server-num", "server-args", "error-file", "auth-file", "xauth-protocol", "wait"}, []string{"auto-servernum", "listen-tcp"})},
	"catchsegv":        {opts: strict("", "", nil, nil)},
	"dbus-run-session": {opts: strict("", "", []string{"config-file", "dbus-daemon"}, nil)},
	"valgrind":         {opts: &OptSpec{InOrder: true}},
	"busybox":          {opts: &OptSpec{InOrder: true}},
	"toybox":           {opts: &OptSpec{InOrder: true}},
}

var (
	specXargs = &OptSpec{
		ShortValue: "adEILnPs", ShortOptional: "eil", ShortFlags: "0oprtx",
		LongValue:    []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
		LongOptional: []string{"eof", "replace", "max-lines"},
		LongFlags:    []string{"null", "open-tty", "interactive", "no-run-if-empty", "verbose", "show-limits", "exit", "help", "version"},
		InOrder:      true, Strict: true, Abbrev: true,
	}
	specFlock = strict("wE", "sexnoFuhV", []string{"wait", "timeout", "conflict-exit-code"},
		[]string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose"})
	specWatch = func() *OptSpec {
		s := strict("nqs", "bcCegprtwxhv", []string{"interval", "equexit", "shotsdir"},
			[]string{"beep", "color", "no-color", "errexit", "chgexit", "precise", "no-rerun", "no-title", "no-wrap", "exec"})
		s.ShortOptional, s.LongOptional = "d", []string{"differences"}
		return s
	}()
	specScript = &OptSpec{
		ShortValue: "cEBIOTmo", ShortOptional: "t", ShortFlags: "aefqhV",
		LongValue:    []string{"command", "echo", "log-io", "log-in", "log-out", "log-timing", "logging-format", "output-limit"},
		LongOptional: []string{"timing"},
		LongFlags:    []string{"append", "return", "flush", "force", "quiet", "help", "version"},
		Abbrev:       true,
	}
	specParallel = &OptSpec{
		ShortValue: "aCdEIjLnNPsS", ShortFlags: "0kmquvXxrehV",
		LongValue: []string{"arg-file", "arg-file-sep", "arg-sep", "colsep", "compress-program", "decompress-program", "delay",
			"delimiter", "env", "halt", "header", "joblog", "jobs", "max-lines", "load", "max-args", "max-chars", "nice", "block",
			"results", "retries", "sshlogin", "sshloginfile", "tagstring", "timeout", "tmpdir", "workdir", "wd", "memfree",
			"termseq", "id", "basefile", "return", "transferfile"},
		LongFlags: []string{"null", "eta", "keep-order", "quote", "verbose", "will-cite", "bar", "progress", "dry-run",
			"semaphore", "fg", "bg", "tag", "pipe", "line-buffer", "group", "ungroup", "no-run-if-empty", "xargs", "plus",
			"transfer", "cleanup", "help", "version"},
		InOrder: true, Strict: true, Abbrev: true,
	}
)

// wrapperEffects derives the program a wrapper runs. It reports false for
// a program that is not a wrapper.
func (w *walker) wrapperEffects(cmd *Command, c ctx, e *effects) bool {
	prog := strings.ToLower(cmd.Program)
	switch prog {
	case "xargs":
		w.xargs(cmd, c, e)
		return true
	case "flock":
		w.flock(cmd, c, e)
		return true
	case "watch":
		w.watch(cmd, c, e)
		return true
	case "script":
		p := ParseArgs(cmd.Args, specScript)
		cmd.Parsed = p
		if v := p.Values("-c", "--command"); len(v) > 0 {
			for _, s := range v {
				e.script(s, "script -c", false)
			}
		} else {
			// script without -c starts an interactive shell that reads
			// its commands from stdin.
			cmd.StdinProgram = true
		}
		return true
	case "sg":
		// sg [-] [group [-c] command]: the command is a string for /bin/sh.
		args := cmd.Args
		if len(args) > 0 && args[0].Match == "-" {
			args = args[1:]
		}
		if len(args) > 1 {
			rest := args[1:]
			if rest[0].Match == "-c" {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				e.script(joinWords(rest), "sg", false)
			}
		}
		return true
	case "parallel", "sem":
		w.parallel(cmd, c, e)
		return true
	}
	spec, ok := wrappers[prog]
	if !ok {
		return false
	}
	args := cmd.Args
	if spec.lead > 0 {
		if len(args) < spec.lead {
			return true
		}
		args = args[spec.lead:]
	}
	p := ParseArgs(args, spec.opts)
	cmd.Parsed = p
	if p.Has(spec.noRun...) {
		return true // command -v sudo looks a name up; nothing runs
	}
	if p.Has(spec.shell...) {
		cmd.StdinProgram = true
	}
	d := derivation{appended: c.appended}
	if p.Unknown != "" {
		d.unknown = fmt.Sprintf("%s option %s is not known, so the program it runs cannot be determined", cmd.Program, p.Unknown)
		e.derive(d)
		return true
	}
	if len(p.Operands) > spec.skip {
		d.words = p.Operands[spec.skip:]
		e.derive(d)
	} else if c.appended {
		// xargs timeout 5: the program is a word xargs reads at run time.
		e.derive(d)
	}
	return true
}

// xargs runs its operands with words read from stdin appended, or with a
// replace string (-I R, -i, --replace) substituted.
func (w *walker) xargs(cmd *Command, c ctx, e *effects) {
	p := ParseArgs(cmd.Args, specXargs)
	cmd.Parsed = p
	d := derivation{appended: true}
	for _, o := range p.Opts {
		switch o.Name {
		case "-I", "-i", "--replace":
			h := "{}"
			if o.HasValue && o.Value.Match != "" {
				h = o.Value.Match
			}
			d.holes = append(d.holes, h)
		}
	}
	switch {
	case p.Unknown != "":
		d.unknown = fmt.Sprintf("xargs option %s is not known, so the program it runs cannot be determined", p.Unknown)
	case len(p.Operands) > 0:
		d.words = p.Operands
	default:
		d.words = []Word{{Static: true, Value: "echo", Match: "echo"}}
	}
	e.derive(d)
}

// flock file command…, flock file -c 'script', flock fd.
func (w *walker) flock(cmd *Command, c ctx, e *effects) {
	p := ParseArgs(cmd.Args, specFlock)
	cmd.Parsed = p
	if p.Unknown != "" {
		e.derive(derivation{unknown: fmt.Sprintf("flock option %s is not known, so the program it runs cannot be determined", p.Unknown)})
		return
	}
	if len(p.Operands) < 2 {
		return // flock FD: locks a descriptor, runs nothing
	}
	rest := p.Operands[1:]
	if m := rest[0].Match; m == "-c" || m == "--command" {
		if len(rest) > 1 {
			e.script(rest[1], "flock -c", false)
		}
		return
	}
	e.derive(derivation{words: rest, appended: c.appended})
}

// watch joins its operands into a string for sh -c, unless -x runs them as
// a command line.
func (w *walker) watch(cmd *Command, c ctx, e *effects) {
	p := ParseArgs(cmd.Args, specWatch)
	cmd.Parsed = p
	switch {
	case p.Unknown != "":
		e.derive(derivation{unknown: fmt.Sprintf("watch option %s is not known, so the program it runs cannot be determined", p.Unknown)})
	case len(p.Operands) == 0:
	case p.Has("-x", "--exec"):
		e.derive(derivation{words: p.Operands})
	default:
		e.script(joinWords(p.Operands), "watch", false)
	}
}

// parallel (and sem) runs a command template, itself a shell string with
// {} replacement strings, for each argument; with no template the
// arguments (or stdin lines) are the commands.
func (w *walker) parallel(cmd *Command, c ctx, e *effects) {
	p := ParseArgs(cmd.Args, specParallel)
	cmd.Parsed = p
	if p.Unknown != "" {
		e.derive(derivation{unknown: fmt.Sprintf("%s option %s is not known, so the program it runs cannot be determined", cmd.Program, p.Unknown)})
		return
	}
	var tmpl, inputs []Word
	sep := false
	for _, o := range p.Operands {
		switch o.Match {
		case ":::", "::::", ":::+", "::::+":
			sep = true
			continue
		}
		if sep {
			inputs = append(inputs, o)
		} else {
			tmpl = append(tmpl, o)
		}
	}
	if len(tmpl) == 0 {
		if len(inputs) == 0 {
			e.derive(derivation{unknown: cmd.Program + " runs the commands it reads from stdin"})
			return
		}
		for _, in := range inputs {
			e.script(in, cmd.Program, false)
		}
		return
	}
	holes := []string{"{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}"}
	if p.Has("-q", "--quote") {
		e.derive(derivation{words: tmpl, holes: holes, appended: true})
		return
	}
	sw := joinWords(tmpl)
	if sw.Static && strings.Contains(sw.Value, "{") {
		// Any {…} in the template is a replacement string ({1}, {= perl =}).
		e.derive(derivation{unknown: fmt.Sprintf("%s completes the command %s at run time", cmd.Program, quoteMatch(sw.Value))})
		return
	}
	e.script(sw, cmd.Program, false)
}

// joinWords joins words with spaces, as watch, sg and parallel join their
// operands into one string for sh -c; the result is static only when every
// word is.
func joinWords(ws []Word) Word {
	out := Word{Static: true}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Match
		out.Static = out.Static && w.Static
	}
	out.Match = strings.Join(parts, " ")
	if out.Static {
		out.Value = out.Match
	}
	return out
}
