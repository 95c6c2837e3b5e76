//go:build linux && (amd64 || arm64)

package seccomp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSyscallTableMatchesXSys checks both columns of sysnum.txt against
// golang.org/x/sys/unix's SYS_ constants for amd64 and arm64, read from the
// module's source (its generated zsysnum files), so that each
// architecture's numbers are checked whichever one the test runs on: a
// wrong number would make a rule allow or refuse some other syscall.
func TestSyscallTableMatchesXSys(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	if err != nil {
		t.Fatalf("locate golang.org/x/sys: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "unix")
	amd64, arm64 := sysConstants(t, filepath.Join(dir, "zsysnum_linux_amd64.go")), sysConstants(t, filepath.Join(dir, "zsysnum_linux_arm64.go"))
	table, err := syscallTable()
	if err != nil {
		t.Fatal(err)
	}
	if len(table) < 200 {
		t.Fatalf("only %d syscalls in the table", len(table))
	}
	for name, got := range table {
		c := "SYS_" + strings.ToUpper(name)
		want := archNums{amd64: lookupNumber(amd64, c), arm64: lookupNumber(arm64, c)}
		if want.amd64 == none && want.arm64 == none {
			t.Errorf("%q: no such syscall on amd64 or arm64", name)
			continue
		}
		if got != want {
			t.Errorf("sysnum.txt has %q, x/sys wants %q", tableRow(name, got), tableRow(name, want))
		}
	}
	// The native map holds exactly the names this architecture has.
	nums := nativeSysnums(t)
	for name, n := range table {
		nr, ok := nums[name]
		if want := nativeNumber(n); ok != (want != none) || (ok && int64(nr) != want) {
			t.Errorf("sysnums()[%q] = %d, %v; want %s", name, nr, ok, numberText(want))
		}
	}
}

// sysConstants reads the SYS_ constants of one of x/sys's zsysnum files.
func sysConstants(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]int64{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || !strings.HasPrefix(vs.Names[0].Name, "SYS_") {
				continue
			}
			n, err := strconv.ParseInt(lit.Value, 0, 32)
			if err != nil {
				t.Fatalf("%s: %s = %s: %v", path, vs.Names[0].Name, lit.Value, err)
			}
			consts[vs.Names[0].Name] = n
		}
	}
	if len(consts) < 250 {
		t.Fatalf("%s: only %d SYS_ constants", path, len(consts))
	}
	return consts
}

func lookupNumber(consts map[string]int64, name string) int64 {
	if n, ok := consts[name]; ok {
		return n
	}
	return none
}

func numberText(n int64) string {
	if n == none {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

// tableRow is name's line in sysnum.txt.
func tableRow(name string, n archNums) string {
	return name + " " + numberText(n.amd64) + " " + numberText(n.arm64)
}

// nativeSysnums is sysnums for a test: the table must parse.
func nativeSysnums(t *testing.T) map[string]uint32 {
	t.Helper()
	nums, err := sysnums()
	if err != nil {
		t.Fatal(err)
	}
	return nums
}
