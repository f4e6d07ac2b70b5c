package analysis

import (
	"testing"
)

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
