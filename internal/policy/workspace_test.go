package policy

import (
	"strings"
	"testing"
)

func TestWorkspaceSection(t *testing.T) {
	p, err := Parse("p.toml", []byte("name = \"x\"\n"), Options{GOOS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Workspace(); ok {
		t.Fatal("a policy without [workspace] reports one")
	}
	src := "name = \"x\"\n[workspace]\nmode = \"overlay\"\nforbidden_paths = [\".git/hooks/**\", \".github/**\", \"**/.env\", \".github/**\"]\n"
	p, err = Parse("p.toml", []byte(src), Options{GOOS: "linux"})
	if err != nil {
		t.Fatal(err)
	}
	w, ok := p.Workspace()
	if !ok || w.Mode != WorkspaceModeOverlay || strings.Join(w.ForbiddenPaths, ",") != ".git/hooks/**,.github/**,**/.env" {
		t.Fatalf("got %+v, %v", w, ok)
	}
}

// A malformed glob or mode is a load error naming the entry: a glob that
// silently matched nothing would let a command write the path.
func TestWorkspaceSectionRejects(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`mode = "rw"`, `unknown mode "rw"`},
		{`forbidden_paths = ["/etc/**"]`, "is absolute"},
		{`forbidden_paths = ["a/[b"]`, "malformed pattern"},
		{`forbidden_paths = ["a/x**"]`, "whole path component"},
		{`forbidden_paths = ["../x"]`, ". or .. component"},
		{`forbidden_paths = [""]`, "must not be empty"},
		{`forbidden_paths = ".env"`, "expected array of strings"},
		{`forbidden = [".env"]`, "forbidden"},
	} {
		_, err := Parse("p.toml", []byte("name = \"x\"\n[workspace]\n"+tc.body+"\n"), Options{GOOS: "linux"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.body, err, tc.want)
		}
	}
}
