package shell

import (
	"strings"
	"testing"
)

// FuzzAnalyze: no script panics the analysis, and every command it returns
// is well formed.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"ls -la | grep x",                                          // pipeline
		"[ -f x ] && cat x",                                        // [ as a program
		"echo x | xargs -I{} {} id",                                // a hole in the program word
		"find / -name x -exec rm -rf {} +",                         // find's own grammar
		"git -c core.pager='less -R' log",                          // a setting run as a script
		"GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=x git log", // paired variables
		"ssh -o ProxyCommand=x h -o LocalCommand=y",                // ssh's second option pass
		"a(){ b|b& }; b(){ a|a& }; a",                              // forking call cycle
		": ${X:=$(id)} $((Y+=1))",                                  // assignments by expansions
		"tar xzf a.tgz --to-command='sh -c x'",                     // old-style cluster and a script option
		"parallel 'echo {}' ::: a b",                               // a template with a replacement string
		"watch -n1 'sh -c \"sh -c ls\"'",                           // nested scripts through a wrapper
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		a := Analyze(src, Options{})
		if a.ParseError != nil || a.TooComplex != "" {
			if len(a.Commands) != 0 {
				t.Fatalf("commands kept after a failure: %d", len(a.Commands))
			}
			return
		}
		last := -1
		for _, c := range a.Commands {
			if c.Offset < last {
				t.Fatalf("commands out of order: %d after %d", c.Offset, last)
			}
			last = c.Offset
			if c.Dynamic && c.DynamicReason == "" {
				t.Fatalf("dynamic command without a reason: %+v", c)
			}
			if !c.Dynamic && !c.AssignOnly && c.Program == "" {
				t.Fatalf("static command without a program: %+v", c)
			}
		}
	})
}

var fuzzSpecs = []*OptSpec{nil, specCurl, specTar, specSSH, specGitTop, specXargs, specWatch, specParallel, specDate, specNetcat}

// FuzzParseArgs: any argument list splits into options and operands that
// account for each word once.
func FuzzParseArgs(f *testing.F) {
	f.Add(uint8(1), "-d@/etc/shadow -sSo out https://x/") // curl clusters
	f.Add(uint8(2), "czf out.tgz -I sh --to-com=x -- -x") // tar old style, abbreviation, --
	f.Add(uint8(3), "-oProxyCommand=x host -p 22 ls -la") // ssh stops at the host
	f.Add(uint8(5), "-I% -n1 % id")                       // xargs replace string
	f.Add(uint8(0), "--x= -- - -- -")                     // generic edge words
	f.Add(uint8(9), "-lvpe 4444 -e")                      // a value option at the end
	f.Fuzz(func(t *testing.T, which uint8, line string) {
		spec := fuzzSpecs[int(which)%len(fuzzSpecs)]
		var args []Word
		for _, w := range strings.Fields(line) {
			args = append(args, Word{Static: true, Value: w, Match: w})
		}
		p := ParseArgs(args, spec)
		// The operands are a subsequence of the words, in order.
		k := 0
		for _, w := range p.Operands {
			for k < len(args) && args[k].Match != w.Match {
				k++
			}
			if k == len(args) {
				t.Fatalf("operands %v are not a subsequence of %v", p.Operands, args)
			}
			k++
		}
		for _, o := range p.Opts {
			if o.Arg < 0 || o.Arg >= len(args) || !strings.HasPrefix(o.Name, "-") {
				t.Fatalf("bad option %+v", o)
			}
		}
	})
}

// FuzzPathForm: a path form is already clean, and a home form starts with
// "~".
func FuzzPathForm(f *testing.F) {
	for _, s := range []string{`/..`, `$HOME/.`, `"${HOME:?}"/x/../..`, `~alice/./a`, `/tmp/../*`, `a/"b c"/..`, `${HOME%/*}`, `./~0`, `"~"/x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, word string) {
		a := Analyze("rm "+word, Options{})
		if a.ParseError != nil || len(a.Commands) == 0 {
			return
		}
		for _, w := range a.Commands[0].Args {
			p, ok := w.PathForm()
			if !ok || p == "" {
				continue
			}
			if cleanForm(p) != p {
				t.Fatalf("PathForm(%q) = %q is not clean", w.Match, p)
			}
		}
	})
}
