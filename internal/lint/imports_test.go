package lint

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
)

const module = "github.com/pgabtest/abtest/"

// rule is one line of docs/ARCHITECTURE.md's Rules: the packages it
// holds (a name, or dir/* for every package under dir) and what they
// must not depend on (a path, or one ending in "/" for a whole tree).
type rule struct {
	line      string
	pkgs      []string
	forbidden []string
}

// holds reports whether the rule applies to package path (module-relative).
func (r rule) holds(path string) bool {
	for _, p := range r.pkgs {
		if p == path || strings.HasSuffix(p, "/*") && strings.HasPrefix(path, strings.TrimSuffix(p, "*")) {
			return true
		}
	}
	return false
}

var ruleLine = regexp.MustCompile("^- (`[^—]*?) must not import (.*?)(?: — .*)?$")
var quoted = regexp.MustCompile("`([^`]+)`")

// architectureRules reads the Rules of docs/ARCHITECTURE.md: the layout
// the code must keep is the one its readers are told.
func architectureRules(t *testing.T) []rule {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatalf("the layering rules live in docs/ARCHITECTURE.md: %v", err)
	}
	var rules []rule
	for line := range strings.Lines(string(doc)) {
		m := ruleLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		r := rule{line: strings.TrimSpace(line)}
		for _, q := range quoted.FindAllStringSubmatch(m[1], -1) {
			r.pkgs = append(r.pkgs, q[1])
		}
		for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
			switch dep := q[1]; {
			case dep == "*":
				r.forbidden = append(r.forbidden, module)
			case strings.Contains(dep, "."):
				r.forbidden = append(r.forbidden, dep) // another module, github.com/…
			default:
				r.forbidden = append(r.forbidden, module+dep)
			}
		}
		if len(r.pkgs) == 0 || len(r.forbidden) == 0 {
			t.Fatalf("docs/ARCHITECTURE.md: a rule with no package or nothing forbidden: %s", r.line)
		}
		rules = append(rules, r)
	}
	if len(rules) < 5 {
		t.Fatalf("docs/ARCHITECTURE.md: %d rules read; its Rules section lost its form", len(rules))
	}
	return rules
}

// forbiddenFor is every dependency the rules forbid path.
func forbiddenFor(rules []rule, path string) []string {
	var out []string
	for _, r := range rules {
		if r.holds(path) {
			out = append(out, r.forbidden...)
		}
	}
	return out
}

// testHelpers is the directory of the test helpers: imported by tests
// (and bench/'s programs) only.
const testHelpers = module + "internal/testing/"

// analysisTestDebt lists the imports of analysis's tests that break its
// rule today (file → import): the fixtures make plans with
// matrix.PlanFor (internal/testing/gatesim, the gate's simulator, imports
// matrix too).
// The list may only shrink: a new one fails, and so does an entry that is
// gone (delete it).
var analysisTestDebt = map[string][]string{
	"analysis_test.go":     {module + "matrix"},
	"gate_test.go":         {module + "matrix"},
	"gatesim_test.go":      {module + "internal/testing/gatesim"},
	"hosts_test.go":        {module + "matrix"},
	"instructions_test.go": {module + "matrix"},
	"plots_test.go":        {module + "matrix"},
}

// pkg is one entry of go list -test: a package, or its variant compiled
// for its tests (Test), with everything it depends on.
type pkg struct {
	Path string
	Test bool
	Deps []string
}

// listPackages runs go list -test over the module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	testenv.RequireTools(t, "go")
	cmd := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}", "./...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		path, deps, _ := strings.Cut(strings.TrimSpace(line), "|")
		test := strings.Contains(path, " [") || strings.HasSuffix(path, ".test")
		path, _, _ = strings.Cut(path, " ")
		path = strings.TrimSuffix(strings.TrimSuffix(path, ".test"), "_test")
		pkgs = append(pkgs, pkg{Path: strings.TrimPrefix(path, module), Test: test, Deps: strings.Fields(deps)})
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

func matches(dep string, rules []string) bool {
	for _, r := range rules {
		if dep == r || strings.HasSuffix(r, "/") && strings.HasPrefix(dep, r) {
			return true
		}
	}
	return false
}

// TestLayoutImports checks docs/ARCHITECTURE.md's import rules;
// only cmd/abtest imports urfave/cli, tests included; no non-test code
// imports the test helpers (internal/testing/…), which may import each
// other, but bench/'s programs; and no package under internal/ but the
// test helpers imports one outside it (leaf helpers import no layer).
func TestLayoutImports(t *testing.T) {
	rules := architectureRules(t)
	for _, p := range listPackages(t) {
		forbidden := forbiddenFor(rules, p.Path)
		for _, dep := range p.Deps {
			if !p.Test && dep != module+p.Path && matches(dep, forbidden) {
				t.Errorf("%s depends on %s (docs/ARCHITECTURE.md's rules forbid it)", p.Path, dep)
			}
			if strings.HasPrefix(dep, "github.com/urfave/cli") && p.Path != "cmd/abtest" {
				t.Errorf("%s (tests: %v) depends on %s: only cmd/abtest turns flags into requests", p.Path, p.Test, dep)
			}
			if !p.Test && strings.HasPrefix(dep, testHelpers) && !strings.HasPrefix(module+p.Path, testHelpers) && !strings.HasPrefix(p.Path, "bench/") {
				t.Errorf("non-test code of %s depends on the test helper %s", p.Path, dep)
			}
			if !p.Test && strings.HasPrefix(p.Path, "internal/") && !strings.HasPrefix(module+p.Path, testHelpers) &&
				strings.HasPrefix(dep, module) && !strings.HasPrefix(dep, module+"internal/") {
				t.Errorf("%s depends on %s: a package under internal/ imports none outside it (docs/ARCHITECTURE.md)", p.Path, dep)
			}
		}
	}
}

// TestAnalysisTestsImportNothingThatRuns holds analysis's tests to its
// rule too: every import of a test file is neither forbidden nor
// depends on something forbidden, but for analysisTestDebt.
func TestAnalysisTestsImportNothingThatRuns(t *testing.T) {
	analysisForbidden := forbiddenFor(architectureRules(t), "analysis")
	deps := map[string][]string{}
	for _, p := range listPackages(t) {
		if !p.Test {
			deps[module+p.Path] = p.Deps
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "analysis", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tests in analysis: %v", err)
	}
	debt := map[string]bool{}
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		for _, spec := range ast.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			bad := slices.Collect(func(yield func(string) bool) {
				for _, d := range append([]string{imp}, deps[imp]...) {
					if matches(d, analysisForbidden) && !yield(d) {
						return
					}
				}
			})
			switch {
			case slices.Contains(analysisTestDebt[name], imp):
				debt[name+" "+imp] = true
			case len(bad) > 0:
				t.Errorf("analysis/%s imports %s, which is or depends on %s: analysis's tests must not run anything either", name, imp, strings.Join(bad[:min(3, len(bad))], ", "))
			}
		}
	}
	for name, imps := range analysisTestDebt {
		for _, imp := range imps {
			if !debt[name+" "+imp] {
				t.Errorf("analysis/%s no longer imports %s: delete it from analysisTestDebt", name, imp)
			}
		}
	}
}

// TestArchitectureRulesRead pins what the lint reads from the doc: a
// leaf helper may not import a layer, analysis not a server or pgx, and
// a package no rule names is free.
func TestArchitectureRulesRead(t *testing.T) {
	rules := architectureRules(t)
	for _, c := range []struct {
		pkg, dep string
		want     bool
	}{
		{"internal/text", module + "results", true},
		{"internal/safefile", module + "matrix", true},
		{"internal/text", module + "internal/exitcode", false},
		{"analysis", "github.com/jackc/pgx/v5", true},
		{"analysis", module + "results", false},
		{"config", module + "internal/text", true},
		{"store", module + "matrix", true},
		{"dashboard", module + "doctor", true},
		{"matrix", module + "cluster", false},
	} {
		if got := matches(c.dep, forbiddenFor(rules, c.pkg)); got != c.want {
			t.Errorf("%s importing %s: forbidden %v, want %v", c.pkg, c.dep, got, c.want)
		}
	}
}
