package shell

import (
	"slices"
	"strings"
	"testing"
)

func TestSimpleArgv(t *testing.T) {
	argv := []struct {
		script string
		want   []string
	}{
		{"ls -la", []string{"ls", "-la"}},
		{"git status", []string{"git", "status"}},
		{"/bin/true", []string{"/bin/true"}},
		{"  ls\t-l  ", []string{"ls", "-l"}},
		{"ls;", []string{"ls"}},
		{"grep 'a b' file", []string{"grep", "a b", "file"}},
		{`grep "a b" file`, []string{"grep", "a b", "file"}},
		{`ls 'a'"b"c`, []string{"ls", "abc"}},
		{`ls ''`, []string{"ls", ""}},
		{`ls '*.go' "~" "{a,b}"`, []string{"ls", "*.go", "~", "{a,b}"}},
		{"make CC=gcc", []string{"make", "CC=gcc"}},
		{"/bin/echo hi", []string{"/bin/echo", "hi"}},
		{"ls a#b", []string{"ls", "a#b"}},
		{"ls # comment", []string{"ls"}},
		{"ls " + strings.Repeat("x", 100000), []string{"ls", strings.Repeat("x", 100000)}},
	}
	for _, c := range argv {
		got, ok := SimpleArgv(c.script)
		if !ok || !slices.Equal(got, c.want) {
			t.Errorf("SimpleArgv(%.40q) = %q, %v; want %q", c.script, got, ok, c.want)
		}
	}
	shell := []string{
		"", "   ", "ls | wc", "echo $HOME", "ls *.go", "ls a?", "ls [ab]", "a=1 b", "cd x && ls",
		"echo ~", "ls ~/x", "true; false", "ls\nls", "cat <<EOF\nx\nEOF", "ls `pwd`", "ls $(pwd)",
		`ls\ -la`, `ls "$x"`, `ls "a\b"`, `ls $'a'`, `ls $"a"`, "ls {a,b}", "ls >out", "ls 2>&1",
		"ls <in", "(ls)", "{ ls; }", "! ls", "ls &", "if true; then ls; fi", "f() { ls; }",
		"echo 'a b'", "echo hi", "printf x", "true", "false", "test -f x", "[ -f x ]", "pwd",
		"kill 1", "cd /", "exec ls", "command ls", "type ls", "time ls", "eval ls", ". ./x",
		"source x", "'' x", `""`, "ls\x00-la", "ls\u00a0-la", "ls\u2003x", "ls\rx", "ls é",
		"ls &&", "ls 'unterminated", "for i in a; do ls; done", "ls ]",
	}
	for _, s := range shell {
		if got, ok := SimpleArgv(s); ok {
			t.Errorf("SimpleArgv(%q) = %q, true; want the shell", s, got)
		}
	}
}

func FuzzSimpleArgv(f *testing.F) {
	for _, s := range []string{"ls -la", "echo 'a b'", `ls "a"'b'`, "ls *", "a=1 b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		argv, ok := SimpleArgv(s)
		if !ok {
			return
		}
		// Whatever is accepted is plain text a shell passes unchanged.
		if len(argv) == 0 || argv[0] == "" {
			t.Fatalf("SimpleArgv(%q) = %q", s, argv)
		}
		for _, a := range argv {
			if strings.ContainsAny(a, "$`\\\n\x00") {
				t.Fatalf("SimpleArgv(%q) = %q", s, argv)
			}
		}
	})
}
