package lint

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testenv"
)

const module = "github.com/pgabtest/abtest/"

// forbidden is the layout table of DESIGN.md as import rules: package →
// what it must not depend on, directly or through another package, in
// its non-test code. A rule ending in "/" forbids a whole module.
var forbidden = map[string][]string{
	// config: import anything else of abtest.
	"config": {module},
	// results: import anything that runs processes.
	"results": {module + "internal/proc", module + "build", module + "cluster", module + "worktree", module + "workload", module + "perf", module + "matrix"},
	// build: start servers.
	"build": {module + "cluster"},
	// analysis reads only result files, so results copied from another
	// host analyse the same way: nothing that builds, starts servers,
	// runs workloads or profilers, or talks to PostgreSQL.
	"analysis": analysisForbidden,
	// the shared renderers and helpers: import a use case.
	"internal/progress": useCases,
	"internal/text":     useCases,
	"internal/suggest":  useCases,
	"internal/version":  useCases,
}

var analysisForbidden = []string{module + "matrix", module + "cluster", module + "build", module + "worktree", module + "workload", module + "perf", module + "internal/proc", "github.com/jackc/pgx/"}

var useCases = []string{module + "matrix", module + "nightly", module + "bisect", module + "workspace", module + "internal/pipeline", module + "internal/demo", module + "cmd/"}

// testHelpers are imported by tests only.
var testHelpers = []string{module + "internal/testpg", module + "internal/testenv", module + "internal/testbuild"}

// analysisTestDebt lists the imports of analysis's tests that break its
// rule today (file → import): the fixtures make plans with
// matrix.PlanFor (internal/gatesim, the gate's simulator, imports
// matrix too).
// The list may only shrink: a new one fails, and so does an entry that is
// gone (delete it).
var analysisTestDebt = map[string][]string{
	"analysis_test.go":     {module + "matrix"},
	"gate_test.go":         {module + "matrix"},
	"gatesim_test.go":      {module + "internal/gatesim"},
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

// TestLayoutImports checks DESIGN.md's import rules: forbidden above;
// only cmd/abtest imports urfave/cli, tests included; no non-test code
// imports the test helpers (internal/testpg, testenv, testbuild), which
// may import each other.
func TestLayoutImports(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, dep := range p.Deps {
			if !p.Test && dep != module+p.Path && matches(dep, forbidden[p.Path]) {
				t.Errorf("%s depends on %s (DESIGN.md's layout forbids it)", p.Path, dep)
			}
			if strings.HasPrefix(dep, "github.com/urfave/cli") && p.Path != "cmd/abtest" {
				t.Errorf("%s (tests: %v) depends on %s: only cmd/abtest turns flags into requests", p.Path, p.Test, dep)
			}
			if !p.Test && slices.Contains(testHelpers, dep) && !slices.Contains(testHelpers, module+p.Path) {
				t.Errorf("non-test code of %s depends on the test helper %s", p.Path, dep)
			}
		}
	}
}

// TestAnalysisTestsImportNothingThatRuns holds analysis's tests to its
// rule too: every import of a test file is neither forbidden nor
// depends on something forbidden, but for analysisTestDebt.
func TestAnalysisTestsImportNothingThatRuns(t *testing.T) {
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
