package analysis

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testenv"
)

// The analysis reads only result files: it must not import anything that
// builds, starts servers, runs workloads or profilers, or talks to
// PostgreSQL, so results copied from another host analyse the same way.
func TestImportsNothingThatRuns(t *testing.T) {
	testenv.RequireTools(t, "go")
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"build", "cluster", "worktree", "workload", "perf", "matrix", "internal/proc"}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/jackc/pgx") {
			t.Errorf("analysis depends on %s", dep)
		}
		rest, ok := strings.CutPrefix(dep, "github.com/pgabtest/abtest/")
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rest == f {
				t.Errorf("analysis depends on %s", dep)
			}
		}
	}
}

// Results written before the results package (schema version 1) still
// analyse.
func TestAnalyzeVersion1Results(t *testing.T) {
	in, err := Load("../results/testdata/v1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) == 0 || len(r.Metrics) == 0 || len(r.Commits) != 2 {
		t.Fatalf("report of the v1 fixture: %d rows, metrics %v, commits %v", len(r.Rows), r.Metrics, r.Commits)
	}
}
