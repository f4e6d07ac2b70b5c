// Package lint holds checks of the code base itself.
package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// MaxLines is the longest a non-test function may be. Composite
// literals (flag tables, templates) do not count: a table is read, not
// followed.
const MaxLines = 80

// known are the functions over MaxLines when this check came, in
// packages being reworked by their owners: each may only shrink, and is
// to leave this list when it is split.
var known = map[string]int{
	"analysis/trend.go WriteTrend": 85,
	"build/build.go Build":         112,
	"cluster/cluster.go Start":     97,
	"doctor/doctor.go Check":       142,
	"workload/run.go Run":          156,
}

// TestNoLongFunctions walks every non-test Go file of the module and
// reports each function longer than MaxLines, table literals excluded.
func TestNoLongFunctions(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			if n := bodyLines(fset, fn.Body); n > max(MaxLines, known[rel+" "+fn.Name.Name]) {
				t.Errorf("%s:%d: %s is %d lines (tables excluded); split it into named steps (at most %d)", rel, fset.Position(fn.Pos()).Line, fn.Name.Name, n, MaxLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bodyLines counts the lines of a function body less the lines of its
// multi-line composite literals.
func bodyLines(fset *token.FileSet, body *ast.BlockStmt) int {
	n := fset.Position(body.End()).Line - fset.Position(body.Pos()).Line + 1
	ast.Inspect(body, func(x ast.Node) bool {
		lit, ok := x.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if l := fset.Position(lit.End()).Line - fset.Position(lit.Pos()).Line; l > 0 {
			n -= l
		}
		return false
	})
	return n
}
