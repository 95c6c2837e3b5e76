package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// serverOnly are the packages a build without the server must not link:
// their initialisation is what it saves every other command.
var serverOnly = []string{
	"github.com/ironvise/ironvise/internal/server",
	"github.com/ironvise/ironvise/internal/mcpserver",
	"github.com/ironvise/ironvise/internal/mcpproxy",
	"github.com/prometheus/client_golang/prometheus",
	"github.com/modelcontextprotocol/go-sdk/mcp",
	"google.golang.org/protobuf/proto",
}

// TestNoServerImportGraph: built with the noserver tag, ironvise links
// none of the server's packages; built without it, all of them (so that
// this test notices a package renamed away from the list).
func TestNoServerImportGraph(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the imports with")
	}
	deps := func(tags string) map[string]bool {
		t.Helper()
		cmd := exec.Command(goTool, "list", "-tags", tags, "-deps", ".")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q -deps: %v", tags, err)
		}
		m := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			m[p] = true
		}
		return m
	}
	lite, full := deps("noserver"), deps("")
	for _, p := range serverOnly {
		if lite[p] {
			t.Errorf("the build without the server links %s", p)
		}
		if !full[p] {
			t.Errorf("the full build does not link %s: update serverOnly", p)
		}
	}
}

// TestNoServerBuildHandsServeOn builds ironvise as make build does (without
// the server) with ironvise-server beside it: serve reaches the server's
// own command, exec runs in the lighter program, and without the server
// installed serve fails closed saying what to install.
func TestNoServerBuildHandsServeOn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	if runtime.GOOS != "linux" {
		t.Skip("builds with scripts/build-ironvise.sh, as make build does on Linux")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool to build with")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lite, server := filepath.Join(dir, "ironvise"), filepath.Join(dir, "ironvise-server")
	buildWithScript(t, root, lite, "noserver")
	buildWithScript(t, root, server, "")

	run := func(bin string, env []string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(append(os.Environ(), "ECTO_DATA_DIR="+t.TempDir()), env...)
		cmd.Dir = t.TempDir()
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s %v: %v", bin, args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String()
	}
	// serve's own help, with its flags, came from ironvise-server.
	if code, out, errOut := run(lite, nil, "serve", "--help"); code != 0 || !strings.Contains(out, "--verify-full") {
		t.Fatalf("serve --help through the build without the server: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(lite, nil, "mcp", "proxy", "--help"); code != 0 || !strings.Contains(out, "--name") {
		t.Fatalf("mcp proxy --help through the build without the server: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := run(lite, nil, "exec", "--no-daemon", "--", "echo ran"); code != 0 || out != "ran\n" {
		t.Fatalf("exec in the build without the server: exit %d, stdout %q\n%s", code, out, errOut)
	}

	// Alone, with no ironvise-server on PATH either.
	alone := filepath.Join(t.TempDir(), "ironvise")
	b, err := os.ReadFile(lite)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(alone, []string{"PATH=/nonexistent"}, "serve")
	if code != 2 || out != "" || !strings.Contains(errOut, "serve runs in ironvise-server, which was not found beside this program or on PATH; nothing was run") {
		t.Fatalf("serve without ironvise-server: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
