package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// doorCalls are the os functions that create, append to, truncate or
// rename a file or make a directory: outside internal/safefile, the one
// door for files (DESIGN.md, Running as root), they would follow a link
// another account planted in a root it can write to.
var doorCalls = []string{"WriteFile", "Create", "OpenFile", "MkdirAll", "Rename"}

// doorExempt are the directories whose non-test code may call them, and
// why.
var doorExempt = map[string]string{
	"internal/safefile": "the door itself",
	"internal/testing":  "the test helpers (imported by tests and bench/ only: TestLayoutImports); storetest writes synthetic result directories",
	"bench":             "measurement programs a developer runs by hand, never abtest",
}

// doorAllowed are the remaining sites (file:function), each with the
// reason it is safe without the door.
var doorAllowed = map[string]string{
	"doctor/doctor.go:Apply": "writes kernel tunables under /proc/sys and /sys (a test's root in tests): files the kernel provides, which the door's O_CREAT and truncation would not suit; doctor --fix runs as root on the host's own /proc",
}

// TestOneDoorForFiles fails on a call of os.WriteFile, os.Create,
// os.OpenFile (other than read-only), os.MkdirAll or os.Rename in
// non-test code outside the door (issue 39).
func TestOneDoorForFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	used := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if _, ok := doorExempt[rel]; ok || (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			name := "(package)"
			if ok {
				name = fn.Name.Name
			}
			ast.Inspect(decl, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				pkg, ok := sel.X.(*ast.Ident)
				if !ok || pkg.Name != "os" || !slices.Contains(doorCalls, sel.Sel.Name) {
					return true
				}
				if sel.Sel.Name == "OpenFile" && len(call.Args) > 1 && readOnly(call.Args[1]) {
					return true
				}
				site := filepath.ToSlash(rel) + ":" + name
				if _, ok := doorAllowed[site]; ok {
					used[site] = true
					return true
				}
				t.Errorf("%s: os.%s outside the door: use internal/safefile (or add %s to doorAllowed with the reason it is safe)", fset.Position(call.Pos()), sel.Sel.Name, site)
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for site := range doorAllowed {
		if !used[site] {
			t.Errorf("doorAllowed lists %s, which no longer calls the os functions: delete the entry", site)
		}
	}
}

// readOnly: an open flag made of O_RDONLY and modifiers that do not write.
func readOnly(flag ast.Expr) bool {
	ok := true
	sawRead := false
	ast.Inspect(flag, func(n ast.Node) bool {
		if sel, isSel := n.(*ast.SelectorExpr); isSel {
			switch sel.Sel.Name {
			case "O_RDONLY":
				sawRead = true
			case "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_DIRECTORY", "O_NOCTTY":
			default:
				ok = false
			}
			return false
		}
		return true
	})
	return ok && sawRead
}
