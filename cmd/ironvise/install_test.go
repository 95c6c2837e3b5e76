//go:build !windows

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The tests here run what a new user runs: `make install`, the installed
// binary, and the completion scripts it prints loaded by the real shells.

// makeEnv is the environment make runs with: this process's, without the
// variables an enclosing `make test` hands down (its command-line
// variables travel in MAKEFLAGS) and without GOBIN, plus extra.
func makeEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GOBIN":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// makeCmd is `make -C <repository> ARGS...`; it skips the test where
// there is no make.
func makeCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	makeTool, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make here")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(makeTool, append([]string{"-C", root}, args...)...)
}

// makeInstall runs `make TARGET BIN=build DESTDIR=dest ARGS...` in the
// repository with env.
func makeInstall(t *testing.T, target, build, dest string, env []string, args ...string) {
	t.Helper()
	cmd := makeCmd(t, append([]string{target, "BIN=" + build, "DESTDIR=" + dest}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s %v: %v\n%s", target, args, err, out)
	}
}

// installed lists the files under dest, relative to it.
func installed(t *testing.T, dest string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dest, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dest, p)
			files = append(files, "/"+filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMakeInstall: `make install` puts the executables ironvise,
// ironvise-exec and ironvise-server side by side into $GOBIN when it is
// set, else /usr/local/bin; PREFIX and BINDIR choose another place, DESTDIR
// roots all of them, and `make uninstall` takes them away. The installed
// ironvise-exec finds the ironvise beside it, and the installed ironvise
// (built without the server) the ironvise-server beside it.
func TestMakeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary with make")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build with")
	}
	// With GOBIN unset, `go env GOBIN` may still name one (go env -w).
	goEnv := exec.Command(goTool, "env", "GOBIN")
	goEnv.Env = makeEnv()
	out, err := goEnv.Output()
	if err != nil {
		t.Fatal(err)
	}
	defaultDir := strings.TrimSpace(string(out))
	if defaultDir == "" {
		defaultDir = "/usr/local/bin"
	}
	build := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", nil, nil, defaultDir + "/ironvise"},
		{"GOBIN", []string{"GOBIN=/opt/go/bin"}, nil, "/opt/go/bin/ironvise"},
		{"GOBIN on the command line", nil, []string{"GOBIN=/opt/go/bin"}, "/opt/go/bin/ironvise"},
		{"PREFIX wins over GOBIN", []string{"GOBIN=/opt/go/bin"}, []string{"PREFIX=/usr"}, "/usr/bin/ironvise"},
		{"BINDIR", nil, []string{"BINDIR=/srv/tools"}, "/srv/tools/ironvise"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := t.TempDir()
			env := makeEnv(tc.env...)
			makeInstall(t, "install", build, dest, env, tc.args...)
			if got, want := installed(t, dest), []string{tc.want, tc.want + "-exec", tc.want + "-server"}; !slices.Equal(got, want) {
				t.Fatalf("installed %q; want only %q", got, want)
			}
			bin := filepath.Join(dest, tc.want)
			for _, f := range []string{bin, bin + "-exec", bin + "-server"} {
				if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o755 {
					t.Fatalf("%s: %v %v; want mode 0755", f, st, err)
				}
			}
			if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "ironvise ") {
				t.Fatalf("%s version: %v %s", bin, err, out)
			}
			// ironvise-exec hands what no daemon takes to the ironvise
			// beside it: here exec's help, with no PATH to find another.
			help := exec.Command(bin+"-exec", "--help")
			help.Env = []string{"HOME=" + t.TempDir()}
			if out, err := help.CombinedOutput(); err != nil || !strings.Contains(string(out), "ironvise exec [flags]") {
				t.Fatalf("%s-exec --help: %v %s", bin, err, out)
			}
			// ironvise hands serve to the ironvise-server beside it.
			serve := exec.Command(bin, "serve", "--help")
			serve.Env = []string{"HOME=" + t.TempDir()}
			if out, err := serve.CombinedOutput(); err != nil || !strings.Contains(string(out), "--verify-full") {
				t.Fatalf("%s serve --help: %v %s", bin, err, out)
			}
			makeInstall(t, "uninstall", build, dest, env, tc.args...)
			if got := installed(t, dest); len(got) != 0 {
				t.Fatalf("after uninstall: %q", got)
			}
		})
	}
	t.Run("shells", func(t *testing.T) { testCompletionScripts(t, build) })
}

// testCompletionScripts loads the script `ironvise completion SHELL` prints
// in each shell that is installed, with the binary installed by make on
// PATH, and asks it for the completions of "ironvise verify-s".
func testCompletionScripts(t *testing.T, build string) {
	dest := t.TempDir()
	makeInstall(t, "install", build, dest, makeEnv(), "BINDIR=/bin")
	path := filepath.Join(dest, "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	for _, tc := range []struct {
		shell  string
		script string
		want   string
	}{
		// The brief's check, then a completion as bash would ask for it;
		// cobra's bash script needs the bash-completion package.
		{"bash", `source <(ironvise completion bash) && complete -p ironvise &&
			for f in /usr/share/bash-completion/bash_completion /etc/bash_completion; do [ -f "$f" ] && source "$f" && break; done
			if declare -F _get_comp_words_by_ref >/dev/null; then
				COMP_WORDS=(ironvise verify-s) COMP_CWORD=1 COMP_LINE="ironvise verify-s" COMP_POINT=17
				__start_ironvise ironvise verify-s ironvise 2>/dev/null
				echo "offered: ${COMPREPLY[*]}"
			fi`, "complete -o default -F __start_ironvise ironvise"},
		{"zsh", `autoload -U compinit && compinit -u && source <(ironvise completion zsh) && print -r -- "registered $_comps[ironvise]"`, "registered _ironvise"},
		{"fish", `ironvise completion fish | source; complete -C "ironvise verify-s"`, "verify-session\tVerify a session's"},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			sh, err := exec.LookPath(tc.shell)
			if err != nil {
				t.Skipf("no %s here", tc.shell)
			}
			args := []string{"-c", tc.script}
			switch tc.shell {
			case "bash":
				args = append([]string{"--norc", "--noprofile"}, args...)
			case "zsh":
				args = append([]string{"-f"}, args...)
			case "fish":
				args = append([]string{"--no-config"}, args...)
			}
			cmd := exec.Command(sh, args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("%s: %v\n%s\nwant %q", tc.shell, err, out, tc.want)
			}
			if tc.shell == "bash" && strings.Contains(string(out), "offered:") && !strings.Contains(string(out), "offered: verify-session\n") {
				t.Fatalf("bash offered the wrong completions:\n%s", out)
			}
		})
	}
}

// TestHintsOfTheInstalledBinary: the hints of a real process name the path
// it was run by when the ironvise on PATH is another one, and say just
// "ironvise" when PATH finds this one.
func TestHintsOfTheInstalledBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary with make")
	}
	build := t.TempDir()
	dest := t.TempDir()
	makeInstall(t, "install", build, dest, makeEnv(), "BINDIR=/bin")
	bin := filepath.Join(dest, "bin", "ironvise")
	other := filepath.Join(t.TempDir(), "ironvise")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for pathDir, want := range map[string]string{
		filepath.Dir(bin):   "Run 'ironvise --help' for usage.",
		filepath.Dir(other): "Run '" + bin + " --help' for usage.",
	} {
		cmd := exec.Command(bin, "--bogus")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "PATH="+pathDir, "ECTO_DATA_DIR="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), want) {
			t.Fatalf("PATH=%s: %s\nwant %q", pathDir, out, want)
		}
	}
}
