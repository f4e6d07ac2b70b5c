package demo

import (
	"testing"

	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// TestRequestPlan: the demo's matrix is HEAD against HEAD + the patch,
// select1 and churn at 8 clients, 12 repeats of 3 s, one pg_stat_statements.max; its
// directories are its own, under root.
func TestRequestPlan(t *testing.T) {
	req := Request("/r/"+PatchName, Duration, Repeats, 1)
	commits := []results.Commit{{Label: "base", Ref: "HEAD", SHA: "aa", Build: "demo-base"},
		{Label: "patch", Ref: "HEAD", SHA: "aa", Build: "demo-patch", Patches: []results.Patch{{File: "/r/" + PatchName, SHA256: "ff"}}}}
	p, err := matrix.PlanFor(req, commits)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Configs) != 2 || len(p.Cells) != 2*2*12 || p.Baseline != "base" || p.Options.WarmupS != 1 || p.Options.DurationS != 3 {
		t.Errorf("plan: %d configurations, %d cells, baseline %s, warm-up %v", len(p.Configs), len(p.Cells), p.Baseline, p.Options.WarmupS)
	}
	if req.Commits[1].Patches[0] != "/r/"+PatchName || req.NameTemplate != "demo-%c" {
		t.Errorf("request %+v", req)
	}
	d := Defaults("/h", "/r")
	if d.DataDir != "/r/data" || d.ResultsDir != "/r/results" || d.SourceDir != "/h/pg/source" {
		t.Errorf("defaults %+v", d)
	}
	if Root(true, "/h") != "/var/tmp/abtest-demo" || Root(false, "/h") != "/h/.cache/abtest-demo" {
		t.Error("root")
	}
}
