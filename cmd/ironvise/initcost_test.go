package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRegexpCompiledAtInit: no package of the binary compiles a regexp
// while it is initialised. Go initialises every package the binary links
// before main runs, whatever the command, so a package-level
// regexp.MustCompile costs every process: a standalone exec, a hook, each
// launcher that is not a ready one. Three in the sandbox package's error
// explanations took 0.07–0.27 ms of every start (GODEBUG=inittrace=1). Compile on
// first use instead (sync.OnceValue). The packages are the module's own that
// `go list -deps` says the binary links; every source file of each is
// checked, those of other systems included.
func TestNoRegexpCompiledAtInit(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("listing the binary's packages needs the go tool")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{.Dir}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	fset := token.NewFileSet()
	var found []string
	dirs := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(path, "github.com/ironvise/ironvise/") {
			continue
		}
		dirs++
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					for _, v := range spec.(*ast.ValueSpec).Values {
						if call := compileAtInit(v); call != nil {
							found = append(found, fset.Position(call.Pos()).String())
						}
					}
				}
			}
		}
	}
	if dirs < 20 {
		t.Fatalf("go list named %d of the module's packages; want the binary's (output %q)", dirs, out)
	}
	if len(found) > 0 {
		t.Fatalf("regexps compiled while packages are initialised (wrap them in sync.OnceValue):\n%s", strings.Join(found, "\n"))
	}
}

// compileAtInit returns a call of regexp.Compile or regexp.MustCompile
// that evaluating e runs, outside any function literal (which runs later,
// if ever).
func compileAtInit(e ast.Expr) *ast.CallExpr {
	var hit *ast.CallExpr
	ast.Inspect(e, func(n ast.Node) bool {
		if hit != nil {
			return false
		}
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "regexp" && (sel.Sel.Name == "MustCompile" || sel.Sel.Name == "Compile" || sel.Sel.Name == "MustCompilePOSIX" || sel.Sel.Name == "CompilePOSIX") {
					hit = n
					return false
				}
			}
		}
		return true
	})
	return hit
}
