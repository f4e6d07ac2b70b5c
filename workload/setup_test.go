package workload

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// TestWorkloadFileSections: a file's setup, script and declared metrics;
// a file without markers is all script; bad declarations are refused in
// one line (exit 2).
func TestWorkloadFileSections(t *testing.T) {
	w, err := Resolve("file:../examples/queue.sql")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.Setup, "CREATE TABLE") || !strings.Contains(w.Script, "INSERT INTO queue") || strings.Contains(w.Script, "percentile_cont") {
		t.Errorf("sections: setup %q, script %q", w.Setup, w.Script)
	}
	if len(w.Metrics) != 2 {
		t.Fatalf("metrics %+v", w.Metrics)
	}
	m := w.Metrics[0].Metric
	if m.Name != "delivery_p99_ms" || m.Unit != "ms" || m.Direction != results.LowerIsBetter || m.ThresholdPct != 10 || m.Tier != results.TierBand || !strings.HasPrefix(w.Metrics[0].Query, "SELECT percentile_cont") {
		t.Errorf("declared %+v", w.Metrics[0])
	}
	if d := w.Metrics[1].Metric; d.Direction != results.Descriptive || d.Tier != results.TierReport {
		t.Errorf("declared %+v", d)
	}
	if w, err := parseFile("x", "SELECT 1;\n"); err != nil || w.Script != "SELECT 1;\n" {
		t.Errorf("plain script: %q, %v", w.Script, err)
	}
	for _, bad := range []string{
		"-- abtest:metric tps\nSELECT 1\n-- abtest:script\nSELECT 1;\n",
		"-- abtest:metric Bad-Name\nSELECT 1\n-- abtest:script\nSELECT 1;\n",
		"-- abtest:metric m direction=sideways\nSELECT 1\n-- abtest:script\nSELECT 1;\n",
		"-- abtest:metric m threshold=-1\nSELECT 1\n-- abtest:script\nSELECT 1;\n",
		"-- abtest:metric m colour=red\nSELECT 1\n-- abtest:script\nSELECT 1;\n",
		"-- abtest:script\nSELECT 1;\n-- abtest:metric m\n",
		"-- abtest:setup\nCREATE TABLE t ();\n",
		"-- abtest:teardown\nSELECT 1;\n",
	} {
		if _, err := parseFile("x", bad); exitcode.Code(err) != exitcode.Usage || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v; want one line, exit 2", bad, err)
		}
	}
}

// TestDeclaredMetricsRead: the queue workload's setup runs, its declared
// metrics are read after the window into the result; a query that fails
// fails the run naming the metric. Open-loop at plumbingRate: a queue
// at 500 tx/s still delivers (its delivery latency is no figure here);
// alone 2.7 CPU-s against 6.5 closed-loop, 5-6 s of wall (load 2.7-3.3).
func TestDeclaredMetricsRead(t *testing.T) {
	t.Parallel()
	st, install := startCluster(t, 5000)
	w, err := Resolve("file:../examples/queue.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := spec(st, install, w)
	s.Duration, s.OutDir, s.Rate = 2e9, filepath.Join(t.TempDir(), "q"), plumbingRate
	res, err := runner().Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if p99 := res.Metrics["delivery_p99_ms"]; !(p99 > 0) || !(res.Metrics["delivered_per_tx"] > 0.5) {
		t.Errorf("declared metrics %v", res.Metrics)
	}
	bad := filepath.Join(t.TempDir(), "bad.sql")
	os.WriteFile(bad, []byte("-- abtest:script\nSELECT 1;\n-- abtest:metric broken\nSELECT nosuch FROM nowhere\n"), 0o644)
	if w, err = Resolve("file:" + bad); err != nil {
		t.Fatal(err)
	}
	s = spec(st, install, w)
	s.Duration, s.OutDir, s.Rate = 1e9, filepath.Join(t.TempDir(), "b"), plumbingRate
	if _, err := runner().Run(context.Background(), s); err == nil || !strings.Contains(err.Error(), "metric broken") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a failing metric query: %v", err)
	}
}
