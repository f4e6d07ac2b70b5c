package nightly

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/worktree"
)

// TestNightWhoseHeadFailedIsNotOK: a head whose every cell failed gets
// no verdict, and the night says so: exit 3, history status "failed" (so
// it is never the next baseline), "INCOMPLETE" in the summary line, never
// "ok" (issue 13, item 1).
func TestNightWhoseHeadFailedIsNotOK(t *testing.T) {
	nc := loadNightly(t, "[matrix]\nworkloads = [\"select1\"]\nclients = [4]\npgss_max = [5000]\nrepeats = 3\n")
	nc.Root = t.TempDir()
	head, base := strings.Repeat("b", 40), strings.Repeat("a", 40)
	plan := planOf(t, Request(nc, head, base, 1))
	dir := filepath.Join(nc.Root, "runs", "night")
	os.MkdirAll(dir, 0o755)
	if err := results.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	for i, c := range plan.Cells {
		rec := &results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Workload: c.Workload, Clients: c.Clients, Settings: c.Settings, Repeat: c.Repeat, DurationS: 1}
		if c.Commit == "head" {
			rec.Status, rec.Error = results.StatusFailed, "pgbench: exit 1"
		} else {
			rec.Status, rec.Metrics = results.StatusOK, map[string]float64{"tps": 1000 + float64(i)}
		}
		if err := results.AppendRecord(dir, rec); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	n := &night{
		deps: &Deps{Matrix: &matrix.Deps{Worktrees: &worktree.Manager{Root: t.TempDir()}}, Out: &out, Err: io.Discard},
		nc:   nc, head: tip{sha: head, subject: "s"}, baseline: base, dir: dir, past: &past{},
		histPath: filepath.Join(nc.Root, "history.jsonl"),
	}
	err := n.judge(context.Background())
	if exitcode.Code(err) != exitcode.Infra {
		t.Errorf("judge: %v (exit %d), want exit 3", err, exitcode.Code(err))
	}
	if !strings.Contains(out.String(), "INCOMPLETE") || strings.Contains(out.String(), ": ok") {
		t.Errorf("summary: %q", out.String())
	}
	hist, err := analysis.ReadHistory(n.histPath)
	if err != nil || len(hist) != 1 || hist[0].Status != "failed" {
		t.Errorf("history: %+v %v", hist, err)
	}
	if lastGood(hist) != nil {
		t.Error("the incomplete night would be the next baseline")
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Error(err)
	}
}
