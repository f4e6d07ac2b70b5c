package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// typedVocabularies are the types of results whose values are words a
// status, a verdict or a gate says: compared by their constants, never
// by a string literal (issue 22, STYLE 16).
var typedVocabularies = []string{"Status", "GateStatus", "Verdict", "Role"}

// metricNameLiterals are the built-in metric names that may stand as a
// literal outside results, and why: the same word names something else.
var metricNameLiterals = map[string]string{
	"instructions": "also the --instructions flag, a perf profile's sample type and a JSON field",
}

// vocabulary reads results' declarations: the values of the Metric…
// constants (the built-in metric names) and of the constants of
// typedVocabularies.
func vocabulary(t *testing.T, root string) (metrics, words map[string]string) {
	t.Helper()
	metrics, words = map[string]string{}, map[string]string{}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "results", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || len(vs.Values) != len(vs.Names) {
				return true
			}
			typ, _ := vs.Type.(*ast.Ident)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, _ := strconv.Unquote(lit.Value)
				switch {
				case strings.HasPrefix(name.Name, "Metric"):
					metrics[v] = name.Name
				case typ != nil && slices.Contains(typedVocabularies, typ.Name):
					if words[v] != "" {
						words[v] += " or "
					}
					words[v] += typ.Name + " " + name.Name
				}
			}
			return true
		})
	}
	if metrics["tps"] != "MetricTPS" || words["ok"] == "" || words["better"] == "" {
		t.Fatalf("results' vocabulary not found: metrics %v, words %v", metrics, words)
	}
	return metrics, words
}

// templateWord is a quoted word in a template's action ({{if ne .X "ok"}}).
var templateWord = regexp.MustCompile(`\{\{[^}]*"([a-z]+)"[^}]*\}\}`)

// statusLike is an operand that holds a status, verdict or gate status.
var statusLike = regexp.MustCompile(`(?i)status|verdict|gate`)

// TestVocabularyByConstants (issue 22): outside results, no built-in
// metric name is a string literal (`grep -rn '"tps"'` finds only its
// constant; struct tags, which Go cannot take from a constant, aside), no
// status, verdict or gate status is compared with a string literal, in
// Go or in a template, and no SQL compares one with a quoted word.
func TestVocabularyByConstants(t *testing.T) {
	root := filepath.Join("..", "..")
	metrics, words := vocabulary(t, root)
	var sqlWords []string
	for w := range words {
		sqlWords = append(sqlWords, regexp.QuoteMeta(w))
	}
	sqlWord := regexp.MustCompile(`'(` + strings.Join(sqlWords, "|") + `)'`)
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == filepath.Join(root, "results")) && path != root {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".html") || strings.HasSuffix(path, ".tmpl") || strings.HasSuffix(path, ".sql")) {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			for _, m := range templateWord.FindAllStringSubmatch(string(data), -1) {
				if words[m[1]] != "" {
					t.Errorf("%s: the template compares with %q: give it a field or method that says what it needs", rel, m[1])
				}
			}
			if m := sqlWord.FindString(string(data)); m != "" {
				t.Errorf("%s: SQL compares with %s: pass results' constant as a parameter", rel, m)
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checkVocabulary(t, fset, f, metrics, words, sqlWord)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkVocabulary reports f's literals that spell results' vocabulary.
func checkVocabulary(t *testing.T, fset *token.FileSet, f *ast.File, metrics, words map[string]string, sqlWord *regexp.Regexp) {
	t.Helper()
	at := func(n ast.Node) string {
		p := fset.Position(n.Pos())
		return filepath.ToSlash(strings.TrimPrefix(p.Filename, "../../")) + ":" + strconv.Itoa(p.Line)
	}
	word := func(e ast.Expr) (string, bool) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return "", false
		}
		v, err := strconv.Unquote(lit.Value)
		return v, err == nil
	}
	// Struct tags and import paths are literals no constant can replace.
	skip := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if n.Tag != nil {
				skip[n.Tag] = true
			}
		case *ast.ImportSpec:
			skip[n.Path] = true
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			v, ok := word(n)
			if !ok || skip[n] {
				return true
			}
			if c, ok := metrics[v]; ok && metricNameLiterals[v] == "" {
				t.Errorf("%s: %q is a metric name: use results.%s", at(n), v, c)
			}
			if m := sqlWord.FindString(v); m != "" {
				t.Errorf("%s: SQL compares with %s: pass results' constant as a parameter", at(n), m)
			}
		case *ast.BinaryExpr:
			if n.Op != token.EQL && n.Op != token.NEQ {
				return true
			}
			for _, pair := range [][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
				if v, ok := word(pair[0]); ok && words[v] != "" && statusLike.MatchString(operand(pair[1])) {
					t.Errorf("%s: %s compared with %q: use results' %s", at(n), operand(pair[1]), v, words[v])
				}
			}
		case *ast.SwitchStmt:
			if n.Tag == nil || !statusLike.MatchString(operand(n.Tag)) {
				return true
			}
			for _, s := range n.Body.List {
				for _, e := range s.(*ast.CaseClause).List {
					if v, ok := word(e); ok && words[v] != "" {
						t.Errorf("%s: case %q on %s: use results' %s", at(e), v, operand(n.Tag), words[v])
					}
				}
			}
		}
		return true
	})
}

// operand is the source-like text of a simple operand (x.Status,
// string(v.Verdict), row["verdict"]): what statusLike looks at.
func operand(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return operand(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		var args []string
		for _, a := range e.Args {
			args = append(args, operand(a))
		}
		return operand(e.Fun) + "(" + strings.Join(args, ", ") + ")"
	case *ast.IndexExpr:
		return operand(e.X) + "[" + operand(e.Index) + "]"
	case *ast.BasicLit:
		return e.Value
	case *ast.StarExpr:
		return "*" + operand(e.X)
	case *ast.ParenExpr:
		return operand(e.X)
	}
	return ""
}
