package shell

import (
	"path"
	"slices"
	"strings"
)

// This file knows what a few programs run on their own: a command line
// they take from an option (tar --to-command, rsync -e, ssh -o
// ProxyCommand), a program they start (sort --compress-program), a file
// of commands they read (make -f, ssh -F), and the files they write (the
// producers of a script that the same command runs later).

var (
	specMan = &OptSpec{
		ShortValue: "CMmSsLeprREP", ShortOptional: "THX",
		LongValue:    []string{"config-file", "manpath", "systems", "sections", "extension", "locale", "preprocessor", "recode", "encoding", "pager", "prompt"},
		LongOptional: []string{"troff-device", "html", "gxditview"},
		Abbrev:       true,
	}
	specAwk = &OptSpec{ShortValue: "fvFEe", LongValue: []string{"file", "assign", "field-separator", "exec", "source", "include", "load"}, Abbrev: true}
	specSed = &OptSpec{ShortValue: "efl", ShortOptional: "i", LongValue: []string{"expression", "file", "line-length"}, LongOptional: []string{"in-place"}, Abbrev: true}
	specVim = &OptSpec{ShortValue: "cSsTuUiwWtqr", LongValue: []string{"cmd"}}
)

// CommandReaders read commands from stdin when they have no other input,
// and can run programs from them (ed's and ex's !, sftp's and ftp's !): fed
// by a pipe they are interpreters of their stdin.
var CommandReaders = MustGlobs("ed", "red", "ex", "sftp", "ftp")

// programEffects records what a known program runs.
func (w *walker) programEffects(cmd *Command, c ctx, e *effects) {
	if w.wrapperEffects(cmd, c, e) {
		return
	}
	fold := w.opt.FoldCase
	prog := strings.ToLower(cmd.Program)
	switch {
	case prog == "env":
		i, dyn := w.envArgs(cmd)
		switch {
		case dyn:
			cmd.Dynamic, cmd.DynamicReason = true, "env -S splits a string into a command"
		case i < len(cmd.Args):
			e.derive(derivation{words: cmd.Args[i:], appended: c.appended})
		case c.appended:
			e.derive(derivation{})
		}
	case prog == "find":
		for _, ws := range findExecs(cmd.Args, &cmd.Parsed) {
			e.derive(derivation{words: ws, holes: []string{FindPlaceholder}})
		}
	case prog == "git":
		w.git(cmd, e)
	case prog == "tar" || prog == "gtar" || prog == "bsdtar":
		tarCode(cmd.Parsed.Opts, "tar", e)
	case prog == "sort":
		for _, v := range cmd.Parsed.Values("--compress-program") {
			// sort pipes its temporary data through this program: `sh`
			// here would run the sorted lines.
			e.derive(derivation{words: []Word{v}, stdin: true})
		}
	case prog == "ssh" || prog == "scp" || prog == "sftp":
		w.ssh(cmd, e)
	case prog == "rsync":
		for _, v := range cmd.Parsed.Values("-e", "--rsh") {
			e.script(v, "rsync -e", false)
		}
	case prog == "wget":
		for _, v := range cmd.Parsed.Values("--use-askpass") {
			e.script(v, "wget --use-askpass", false)
		}
	case prog == "man":
		cmd.Parsed = ParseArgs(cmd.Args, specMan)
		for _, v := range cmd.Parsed.Values("-P", "--pager", "-H", "--html") {
			e.script(v, "man --pager", true)
		}
	case prog == "make" || prog == "gmake":
		w.make(cmd, e)
	case prog == "awk" || prog == "gawk" || prog == "mawk" || prog == "nawk":
		cmd.Parsed = ParseArgs(cmd.Args, specAwk)
		w.scriptFiles(cmd, cmd.Parsed.Values("-f", "--file"))
	case prog == "sed" || prog == "gsed":
		cmd.Parsed = ParseArgs(cmd.Args, specSed)
		w.scriptFiles(cmd, cmd.Parsed.Values("-f", "--file"))
	case prog == "vi" || prog == "vim" || prog == "nvim" || prog == "view" || prog == "vim.basic" || prog == "vim.tiny":
		cmd.Parsed = ParseArgs(cmd.Args, specVim)
		if cmd.Parsed.Has("-e", "-E") {
			cmd.StdinProgram = true // ex mode reads its commands from stdin
		}
		w.scriptFiles(cmd, cmd.Parsed.Values("-S", "-s"))
		if len(cmd.Parsed.Values("-c", "--cmd")) > 0 || slices.ContainsFunc(cmd.Args, func(a Word) bool { return strings.HasPrefix(a.Match, "+") }) {
			e.derive(derivation{unknown: cmd.Program + " runs editor commands given on its command line, which can run programs"})
		}
	case CommandReaders.Match(prog, false):
		cmd.StdinProgram = true
	case IsShell(prog, fold):
		if s := w.shellArgs(cmd); s != nil {
			e.script(*s, cmd.Program+" -c", false)
		}
	case IsInterpreter(prog, fold):
		w.interpArgs(cmd)
	}
}

// make runs the recipes of the makefiles it reads with $(SHELL).
func (w *walker) make(cmd *Command, e *effects) {
	p := cmd.Parsed
	w.scriptFiles(cmd, p.Values("-f", "--file", "--makefile"))
	for _, d := range p.Values("-C", "--directory") {
		w.scriptFiles(cmd, []Word{d})
	}
	if len(p.Values("--eval")) > 0 {
		e.derive(derivation{unknown: "make --eval adds makefile text whose recipes run at run time"})
	}
	for _, o := range p.Operands {
		if v, ok := strings.CutPrefix(o.Match, "SHELL="); ok {
			e.derive(derivation{words: []Word{sub(o, v)}})
		}
	}
}

// scriptFiles records files whose content a command runs as code.
func (w *walker) scriptFiles(cmd *Command, ws []Word) {
	for _, f := range ws {
		cmd.Scripts = append(cmd.Scripts, f)
		if f.Match == "-" || IsFDPath(f.Match) {
			cmd.StdinFile = true
		}
	}
}

// tarCode records the commands GNU tar runs from its options (also from
// TAR_OPTIONS).
func tarCode(opts []Opt, label string, e *effects) {
	for _, o := range opts {
		if !o.HasValue {
			continue
		}
		switch o.Name {
		case "--to-command":
			// Each extracted file's content is the command's stdin.
			e.script(o.Value, label+" --to-command", true)
		case "-I", "--use-compress-program":
			e.script(o.Value, label+" --use-compress-program", true)
		case "--rsh-command", "--rmt-command", "-F", "--info-script", "--new-volume-script":
			e.script(o.Value, label+" "+o.Name, false)
		case "--checkpoint-action":
			m := o.Value.Match
			if rest, ok := strings.CutPrefix(m, "exec="); ok {
				e.script(sub(o.Value, rest), label+" --checkpoint-action=exec", false)
			} else if !o.Value.Static && !staticActionPrefix(m) {
				e.script(o.Value, label+" --checkpoint-action", false)
			}
		}
	}
}

// staticActionPrefix reports a checkpoint action whose kind is written
// out and is not exec (echo=$MSG).
func staticActionPrefix(m string) bool {
	for _, a := range []string{"bell", "dot", "echo", "sleep", "totals", "ttyout", "wait"} {
		if m == a || strings.HasPrefix(m, a+"=") {
			return true
		}
	}
	return false
}

// ssh reads ssh's options before the destination and right after it (ssh
// parses both), scp's and sftp's anywhere; the rest of an ssh command
// line runs on the remote host.
func (w *walker) ssh(cmd *Command, e *effects) {
	prog := strings.ToLower(cmd.Program)
	opts := cmd.Parsed.Opts
	if prog == "ssh" && len(cmd.Parsed.Operands) > 0 {
		q := ParseArgs(cmd.Parsed.Operands[1:], specSSH)
		opts = append(slices.Clone(opts), q.Opts...)
		cmd.Parsed.Opts = opts
	}
	permitLocal, localCmd := false, false
	for _, o := range opts {
		if !o.HasValue {
			continue
		}
		switch {
		case o.Name == "-o":
			key, val, static := sshOption(o.Value)
			switch key {
			case "proxycommand", "localcommand", "knownhostscommand":
				if static && strings.EqualFold(strings.TrimSpace(val.Match), "none") {
					continue
				}
				localCmd = localCmd || key == "localcommand"
				e.script(val, prog+" -o "+key, false)
			case "permitlocalcommand":
				permitLocal = !static || !strings.EqualFold(val.Match, "no")
			case "":
				if !static {
					e.script(o.Value, prog+" -o", false) // the key itself is computed
				}
			}
		case o.Name == "-F":
			if o.Value.Match != "none" && o.Value.Match != "/dev/null" {
				w.scriptFiles(cmd, []Word{o.Value})
			}
		case (prog == "scp" || prog == "sftp") && (o.Name == "-S" || o.Name == "-D"):
			// scp -S and sftp -S name the program run in ssh's place; -D
			// a local server program.
			e.script(o.Value, prog+" "+o.Name, false)
		case prog == "sftp" && o.Name == "-b":
			w.scriptFiles(cmd, []Word{o.Value})
		}
	}
	if permitLocal && !localCmd {
		e.derive(derivation{unknown: "ssh -o PermitLocalCommand runs a LocalCommand from a configuration file the check cannot see"})
	}
	if prog == "sftp" && len(cmd.Parsed.Values("-b")) == 0 {
		cmd.StdinProgram = true // its commands, and their !shell escapes, come from stdin
	}
}

// sshOption splits an ssh -o word, "Key=Value" or "Key Value", into its
// lowercased key and its value. static is false when the key cannot be
// read.
func sshOption(w Word) (key string, val Word, static bool) {
	m := strings.TrimLeft(w.Match, " \t")
	i := strings.IndexAny(m, "= \t")
	if i < 0 {
		return strings.ToLower(m), Word{Static: true}, w.Static
	}
	k := m[:i]
	if strings.ContainsAny(k, "$`") {
		return "", Word{}, false
	}
	rest := strings.TrimLeft(m[i:], " \t")
	rest = strings.TrimPrefix(rest, "=")
	rest = strings.TrimLeft(rest, " \t")
	return strings.ToLower(k), sub(w, rest), w.Static
}

// produced records the files a command writes, so that a script it writes
// and the same command later runs is known to be unreviewed.
func (w *walker) produced(cmd *Command) {
	if cmd.Dynamic || cmd.Program == "" {
		return
	}
	p := &cmd.Parsed
	write := func(ws ...Word) { w.a.Written = append(w.a.Written, ws...) }
	dot := Word{Static: true, Value: ".", Match: "."}
	unknownIn := func(dirs ...Word) {
		if w.a.WritesUnknown == "" {
			w.a.WritesUnknown = cmd.Program
		}
		if len(dirs) == 0 {
			dirs = []Word{dot}
		}
		w.a.UnknownDirs = append(w.a.UnknownDirs, dirs[len(dirs)-1])
	}
	unknown := func() { unknownIn() }
	switch prog := strings.ToLower(cmd.Program); prog {
	case "tee":
		write(p.Operands...)
	case "cp", "mv", "install", "ln":
		if t := p.Values("-t", "--target-directory"); len(t) > 0 {
			for _, d := range t {
				write(d)
				for _, s := range p.Operands {
					write(joinPath(d, s))
				}
			}
			return
		}
		if n := len(p.Operands); n >= 2 {
			d := p.Operands[n-1]
			write(d)
			for _, s := range p.Operands[:n-1] {
				write(joinPath(d, s))
			}
		}
	case "dd":
		for _, o := range p.Operands {
			if v, ok := strings.CutPrefix(o.Match, "of="); ok {
				write(sub(o, v))
			}
		}
	case "sort":
		write(p.Values("-o", "--output")...)
	case "curl":
		write(p.Values("-o", "--output")...)
		if p.Has("-O", "--remote-name", "--remote-name-all") {
			urlNames(p.Operands, write, unknown)
		}
	case "wget":
		outs := p.Values("-O", "--output-document")
		write(outs...)
		switch {
		case p.Has("-r", "--recursive", "-m", "--mirror", "-i", "--input-file"):
			unknownIn(p.Values("-P", "--directory-prefix")...)
		case len(outs) == 0:
			urlNames(p.Operands, write, unknown)
		}
	case "tar", "gtar", "bsdtar":
		if p.Has("-x", "--extract", "--get") && !p.Has("-O", "--to-stdout", "--to-command") {
			unknownIn(p.Values("-C", "--directory")...)
		}
		write(p.Values("-f", "--file")...)
	case "sed", "gsed":
		if p.Has("-i", "--in-place") {
			write(p.Operands...)
		}
	case "unzip", "7z", "7za", "7zr", "cpio", "gunzip", "unxz", "bunzip2", "unzstd", "uncompress", "patch", "rpm2cpio", "ar":
		unknown()
	case "gzip", "xz", "bzip2", "zstd":
		if p.Has("-d", "--decompress") {
			unknown()
		}
	case "git":
		sc, ok := p.First()
		switch {
		case ok && sc.Match == "clone":
			// git clone URL [DIR]: the files land in DIR, by default the
			// URL's last component without .git.
			ops := ParseArgs(p.Operands[1:], specGitFetch).Operands
			switch {
			case len(ops) >= 2:
				unknownIn(ops[1])
			case len(ops) == 1 && ops[0].Static:
				d := strings.TrimSuffix(path.Base(strings.TrimSuffix(ops[0].Value, "/")), ".git")
				unknownIn(Word{Static: true, Value: d, Match: d})
			default:
				unknown()
			}
		case ok && (sc.Match == "checkout" || sc.Match == "switch" || sc.Match == "restore" || sc.Match == "pull" ||
			sc.Match == "apply" || sc.Match == "am" || sc.Match == "worktree"):
			unknown()
		}
	}
}

// urlNames records the file names that curl -O and wget give downloads:
// the last path component of each URL.
func urlNames(ops []Word, write func(...Word), unknown func()) {
	for _, u := range ops {
		if !u.Static {
			unknown()
			continue
		}
		v := u.Value
		if i := strings.IndexAny(v, "?#"); i >= 0 {
			v = v[:i]
		}
		if _, after, ok := strings.Cut(v, "://"); ok {
			v = after
		}
		if b := path.Base(v); b != "" && b != "/" && b != "." && strings.Contains(v, "/") {
			write(Word{Static: true, Value: b, Match: b})
		} else {
			write(Word{Static: true, Value: "index.html", Match: "index.html"})
		}
	}
}

// joinPath is dir/base(file) for a copy into a directory.
func joinPath(dir, file Word) Word {
	b := path.Base(file.Match)
	j := strings.TrimSuffix(dir.Match, "/") + "/" + b
	if dir.Static && file.Static {
		return Word{Static: true, Value: j, Match: j}
	}
	return Word{Match: j}
}

// envArgs skips env's options and NAME=value words, recording the latter as
// assignments, and returns the index of the program. dyn is true for -S /
// --split-string, which builds the command from one string at run time.
func (w *walker) envArgs(cmd *Command) (i int, dyn bool) {
	for i < len(cmd.Args) {
		m := cmd.Args[i].Match
		switch {
		case m == "-S" || m == "--split-string" || strings.HasPrefix(m, "--split-string=") ||
			(strings.HasPrefix(m, "-") && !strings.HasPrefix(m, "--") && strings.Contains(m, "S")):
			return i, true
		case m == "--":
			i++
			continue
		case m == "-u" || m == "-C" || m == "--unset" || m == "--chdir":
			i += 2
			continue
		case strings.HasPrefix(m, "-"):
			i++
			continue
		}
		name, val, ok := splitAssign(cmd.Args[i])
		if !ok {
			return i, false
		}
		cmd.Assigns = append(cmd.Assigns, Assign{Name: name, Value: val, Form: "env"})
		i++
	}
	return i, false
}

// IsFDPath reports a path through which a program would read a file
// descriptor, its stdin included: /dev/stdin, /dev/fd/N, /proc/PID/fd/N
// (also /proc/self, /proc/thread-self and a $$ written in), after the
// path is cleaned.
func IsFDPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	p = path.Clean(p)
	if p == "/dev/stdin" || p == "/dev/fd" || strings.HasPrefix(p, "/dev/fd/") {
		return true
	}
	// /proc/PID/fd/N, /proc/PID/task/TID/fd/N.
	parts := strings.Split(p, "/")
	return len(parts) >= 4 && parts[1] == "proc" && slices.Contains(parts[3:], "fd")
}
