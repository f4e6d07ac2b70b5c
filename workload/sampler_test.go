package workload

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSamplerTPSFromFirstSample: every sample carries the transactions
// per second since the previous one, the first included, although
// pgbench reports its progress only every 5 s (issue 16: "t=5s … tps=0"
// at 22 k TPS).
func TestSamplerTPSFromFirstSample(t *testing.T) {
	st, install := startCluster(t, 5000)
	// within_max runs three statements per transaction.
	for _, name := range []string{"select1", "within_max"} {
		w, _ := Builtin(name)
		s := spec(st, install, w)
		s.Duration = 4 * time.Second
		var out strings.Builder
		r := runner()
		r.Out = &out
		res, err := r.Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Samples) < 2 {
			t.Fatalf("%s: %d samples in 4 s at 1 s intervals", name, len(res.Samples))
		}
		tps := res.Metrics["tps"]
		var sum float64
		for i, smp := range res.Samples {
			if smp.TPS <= 0 {
				t.Errorf("%s: sample %d (t=%.0fs): tps %v, pgbench's overall %v", name, i, smp.T, smp.TPS, tps)
			}
			sum += smp.TPS
		}
		// The samples count transactions, not statements, and not the
		// sampler's own queries: their mean is pgbench's rate, give or
		// take the seconds pgbench spends connecting and ending.
		if mean := sum / float64(len(res.Samples)); mean < tps/2 || mean > 1.5*tps {
			t.Errorf("%s: mean sample tps %v, pgbench's %v", name, mean, tps)
		}
		if strings.Contains(out.String(), "tps=0 ") {
			t.Errorf("%s: a sample line says tps=0:\n%s", name, out.String())
		}
		t.Logf("%s: pgbench %.0f tps; samples %v", name, tps, res.Samples)
	}
}

func TestStatementsPerRun(t *testing.T) {
	for _, name := range Names {
		w, _ := Builtin(name)
		want := 1
		if name == "within_max" {
			want = 3 // BEGIN, the query, COMMIT
		}
		if got := statementsPerRun(w.Script); got != want {
			t.Errorf("%s: %d statements per run, want %d", name, got, want)
		}
	}
	for script, want := range map[string]int{
		"SELECT 1; SELECT ';';\n":             2,
		"SELECT\n  1 -- one; two\n;\n":        1,
		"\\set a 1\nINSERT INTO t VALUES (1)": 1,
		"\\if :a\nSELECT 1;\n\\if :b\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\n\\elif :c\nSELECT 4;\n\\endif\nSELECT 5;\n": 3,
	} {
		if got := statementsPerRun(script); got != want {
			t.Errorf("%q: %d, want %d", script, got, want)
		}
	}
}
