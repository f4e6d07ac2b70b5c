package nightly

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

func TestRetain(t *testing.T) {
	runs := t.TempDir()
	for _, d := range []string{"20260101T000000Z-a", "20260102T000000Z-b", "20260103T000000Z-c", "20260104T000000Z-d"} {
		os.MkdirAll(filepath.Join(runs, d), 0o755)
	}
	if err := Retain(runs, 2); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(runs)
	if len(ents) != 2 || ents[0].Name() != "20260103T000000Z-c" {
		t.Errorf("kept %v", ents)
	}
}

func loadNightly(t *testing.T, toml string) *config.Nightly {
	t.Helper()
	f := filepath.Join(t.TempDir(), "nightly.toml")
	os.WriteFile(f, []byte(toml), 0o644)
	nc, err := config.LoadNightly(f, "/h", AxisKeys()...)
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// planOf is the plan of a night's request with refs standing for shas.
func planOf(t *testing.T, req matrix.Request) *results.Plan {
	t.Helper()
	var commits []results.Commit
	for _, c := range req.Commits {
		commits = append(commits, results.Commit{Label: c.Label, Ref: c.Ref, SHA: c.Ref, Build: BuildPrefix + text.Short(c.Ref)})
	}
	p, err := matrix.PlanFor(req, commits)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRequestOfConfig: the matrix of a night is the configuration's, with
// the baseline first and head second; the first night is head alone.
func TestRequestOfConfig(t *testing.T) {
	nc := loadNightly(t, `[matrix]
workloads = ["select1", "churn"]
clients = [4, 16]
pgss_max = [1000, 5000]
repeats = 3
duration = 7
warmup = 1
build = "debug"
`)
	head, base := strings.Repeat("b", 40), strings.Repeat("a", 40)
	req := Request(nc, head, base, 42)
	if want := []matrix.Commit{{Label: "base", Ref: base}, {Label: "head", Ref: head}}; !reflect.DeepEqual(req.Commits, want) {
		t.Errorf("commits = %+v", req.Commits)
	}
	if req.NameTemplate != "n-%s" || req.Duration != 7*time.Second || req.Warmup != time.Second || req.Build != "debug" || req.Seed != 42 {
		t.Errorf("request = %+v", req)
	}
	p := planOf(t, req)
	if len(p.Configs) != 2*2*2 || len(p.Cells) != 8*2*3 || p.Baseline != "base" {
		t.Errorf("plan: %d configurations, %d cells, baseline %s", len(p.Configs), len(p.Cells), p.Baseline)
	}
	if id := p.Configs[0].ID(); id != "select1/c4/cpuall/pgss.max=1000" {
		t.Errorf("first configuration %s", id)
	}

	first := Request(nc, head, "", 1)
	if len(first.Commits) != 1 || first.Commits[0].Label != "head" {
		t.Errorf("first night commits = %+v", first.Commits)
	}
	if p := planOf(t, first); len(p.Cells) != 8*3 {
		t.Errorf("first night: %d cells", len(p.Cells))
	}
	// rates: open-loop points of every configuration.
	nc.Matrix.Axes["rates"] = []string{"500"}
	if p := planOf(t, Request(nc, head, base, 1)); len(p.Configs) != 8 || p.Configs[0].ID() != "select1/c4/cpuall/r500/pgss.max=1000" {
		t.Errorf("rates = [500]: %d configurations, the first %s", len(p.Configs), p.Configs[0].ID())
	}
	delete(nc.Matrix.Axes, "rates")
	nc.Matrix.Repeats = 1
	one := Request(nc, head, "", 1)
	if _, err := one.Check(); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("a first night of one repeat: %v, want exit 2", err)
	}
}
