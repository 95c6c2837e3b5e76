package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRegexpCompiledAtInit: no package of the binary compiles a regexp
// while it is initialised. Go initialises every package the binary links
// before main runs, whatever the command, so a package-level
// regexp.MustCompile costs every process: a standalone exec, a hook, each
// launcher that is not a ready one. Three in the sandbox package's error
// explanations took 0.27 ms of every start (GODEBUG=inittrace=1). Compile on
// first use instead (sync.OnceValue). Packages only tests import (their
// names end in "test") are exempt.
func TestNoRegexpCompiledAtInit(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" || strings.HasSuffix(d.Name(), "test") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
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
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
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
