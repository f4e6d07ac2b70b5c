package matrix

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// TestShippedSweepsSteady: the shipped seed-000 workloads are in steady
// state from their first cell (issue 40: ping.sql started from an empty
// table, so repeat 1's updates found few rows, upd/op 0.013 at batch 1).
// At batch 1 and 10, every transaction updates exactly :batch rows, and
// heartbeat's indexed deadline makes no update HOT, so its dead tuples
// per transaction are :batch, never negative.
func TestShippedSweepsSteady(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	for _, name := range []string{"ping", "heartbeat"} {
		file, err := filepath.Abs(filepath.Join("..", "examples", name+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Commits: "a=install:" + install, Workloads: "file:" + file, PgssMax: "5000",
			Axes: map[string][]string{"clients": {"2"}, "vars": {"batch=1,10"}, "rate": {"200"}}, Seconds: 1, Repeats: 2, Build: "release", Protocol: "simple", Order: "abba"}
		o.Given = func(f string) bool { return f == "seed" || f == "repeats" || f == "cpus" }
		req, err := o.Request()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Prepare(context.Background(), deps, req)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		deps.Out = &out
		dir := filepath.Join(testenv.SharedTempDir(t), "r")
		if err := Run(context.Background(), deps, plan, dir); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out.String())
		}
		recs, _, err := results.ReadRecords(dir)
		if err != nil || len(recs) != 4 {
			t.Fatalf("%s: %d records (%v)", name, len(recs), err)
		}
		for _, r := range recs {
			if r.Status != results.StatusOK {
				t.Errorf("%s %s: %s %s", name, r.Cell, r.Status, r.Error)
				continue
			}
			var batch float64
			fmt.Sscan(r.Vars["batch"], &batch)
			upd := r.Metrics.Value(results.MetricTupUpdPerTx)
			dead := r.Metrics.Value(results.MetricDeadTupPerTx)
			t.Logf("%s %s: upd/tx %v, dead/tx %v, HOT %v %%", name, r.Cell, upd, dead, r.Metrics.Value(results.MetricHOTUpdatePct))
			if math.Abs(upd-batch) > 1e-9 {
				t.Errorf("%s %s: %v rows updated per transaction, want exactly %v", name, r.Cell, upd, batch)
			}
			if name == "heartbeat" && math.Abs(dead-batch) > 0.05*batch {
				t.Errorf("%s %s: %v dead tuples per transaction, want %v (no HOT)", name, r.Cell, dead, batch)
			}
		}
	}
}
