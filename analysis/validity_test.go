package analysis

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// validityInput is the demo's run (issue 23): select1 and churn at
// pg_stat_statements.max = 1000, 12 repeats, tps unchanged; churn evicts
// in every cell of both commits, fewer times with the patch, and its
// pg_stat_statements counts lost the evicted entries' calls (0.76
// statements per transaction in base, 0.64 in patch, for a workload of
// one statement per transaction). voided(commit, workload) says whether a
// cell was recorded as today's abtest records it (the counts left out,
// Record.Void saying why) rather than with the counts in its metrics.
func validityInput(plan results.Metrics, evicts func(commit, workload string) bool, voided bool) *Input {
	p := &results.Plan{Version: results.Version, Baseline: "base", Metrics: plan,
		Commits: []results.Commit{{Label: "base", Build: "b"}, {Label: "patch", Build: "p"}}, Options: results.PlanOpts{Repeats: 12}}
	in := &Input{Plan: p}
	for _, wl := range []string{"select1", "churn"} {
		cfg := results.Config{Workload: wl, Clients: 8, Settings: map[string]string{"pg_stat_statements.max": "1000"}}
		p.Configs = append(p.Configs, cfg)
		for rep := 1; rep <= 12; rep++ {
			for i, c := range []string{"base", "patch"} {
				deallocs, stmts := 0.0, 1.0
				if evicts(c, wl) {
					deallocs, stmts = []float64{40, 10}[i], []float64{0.76, 0.64}[i]
				}
				m := map[string]float64{"tps": 1000 + float64(rep%3), "pgss_deallocs": deallocs,
					"statements_per_tx": stmts, "rows_per_tx": stmts, "wal_records_per_tx": 0}
				rec := results.Record{Cell: fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c), Commit: c, Config: results.Config{Workload: wl, Clients: 8, Settings: cfg.Settings},
					Repeat: rep, Status: results.StatusOK, Metrics: results.ValuesOf(m), Final: &results.Final{Deallocs: int64(deallocs)}}
				if voided {
					rec.Void = results.Builtin.Apply(m, results.Window{Deallocs: int64(deallocs), DeallocsKnown: true})
				}
				p.Cells = append(p.Cells, results.Cell{ID: rec.Cell, Commit: c, Repeat: rep, Config: cfg})
				in.Records = append(in.Records, rec)
			}
		}
	}
	return in
}

// row returns the row of a metric in a workload's configuration.
func row(r *Report, wl, m string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Metric == m && strings.HasPrefix(r.Rows[i].Config, wl+"/") {
			return &r.Rows[i]
		}
	}
	return nil
}

// TestEvictedCountsNotJudged: the demo's churn called statements_per_tx
// and rows_per_tx "better" (−15.8 %, exact tier) from counts that lost
// the evicted entries' calls. Analysed by their validity they are not
// judged there, whether the cells recorded them (a run of an abtest
// before validity) or left them out with why; select1, which never
// evicts, is judged as before; each metric's warning says it once.
func TestEvictedCountsNotJudged(t *testing.T) {
	churn := func(_, wl string) bool { return wl == "churn" }
	// Without validity the input is the demo's artifact: a verdict.
	plain := append(results.Metrics(nil), results.Builtin...)
	for i := range plain {
		plain[i].Validity = results.ValidAlways
	}
	r, err := Analyze(validityInput(plain, churn, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if row := row(r, "churn", "statements_per_tx"); row == nil || row.Stats[1].Verdict != results.Better {
		t.Fatalf("without validity, churn's statements_per_tx = %+v; want the demo's better", row)
	}
	for _, voided := range []bool{false, true} {
		r, err := Analyze(validityInput(results.Builtin, churn, voided), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"statements_per_tx", "rows_per_tx"} {
			if row := row(r, "churn", m); row != nil {
				t.Errorf("recorded void %v: churn's %s judged: %+v", voided, m, row.Stats)
			}
			for _, ch := range r.Changes {
				if ch.Metric == m {
					t.Errorf("recorded void %v: a change of %s: %+v", voided, m, ch)
				}
			}
			if row := row(r, "select1", m); row == nil || row.Stats[1].Verdict != results.Same {
				t.Errorf("recorded void %v: select1's %s = %+v; want same", voided, m, row)
			}
			var said []string
			for _, w := range r.Warnings {
				if strings.HasPrefix(w, m+" ") {
					said = append(said, w)
				}
			}
			if want := m + " void in 24 of 48 usable cells (" + results.VoidEvicted + ")"; len(said) != 1 || !strings.HasPrefix(said[0], want) {
				t.Errorf("recorded void %v: warnings about %s: %q; want one starting %q", voided, m, said, want)
			}
		}
		if row := row(r, "churn", "pgss_deallocs"); row == nil || row.Stats[1].Verdict != results.Better {
			t.Errorf("recorded void %v: churn's pgss_deallocs = %+v; want better: it describes the eviction", voided, row)
		}
	}
}

// TestVoidCellsIncompleteNotGated: where only the patch's cells evict,
// its counts are void and the baseline's are not: the row shows the
// patch incomplete, with why, never a verdict, and the gap does not
// gate (the source lost data; the run did not fail), while a value
// missing for another reason still does.
func TestVoidCellsIncompleteNotGated(t *testing.T) {
	patchOnly := func(c, wl string) bool { return wl == "churn" && c == "patch" }
	r, err := Analyze(validityInput(results.Builtin, patchOnly, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := row(r, "churn", "statements_per_tx")
	if row == nil || row.Stats[1].Verdict != results.Incomplete || row.Stats[1].Note != "statements_per_tx void in 12 of 12 cells" {
		t.Fatalf("churn's statements_per_tx = %+v; want the patch incomplete, void in 12 of 12 cells", row)
	}
	for _, in := range r.Incomplete {
		if in.Gated {
			t.Errorf("a void count gates: %+v", in)
		}
	}
	if err := r.Gate(); errors.Is(err, ErrIncomplete) {
		t.Errorf("gate: %v", err)
	}
	// A cell whose counts are missing, not void (its probe left out),
	// is the run not answering: that gates.
	in := validityInput(results.Builtin, patchOnly, true)
	for i := range in.Records {
		if rec := &in.Records[i]; rec.Workload == "select1" && rec.Commit == "patch" && rec.Repeat == 3 {
			rec.Metrics.Delete("statements_per_tx")
		}
	}
	if r, err = Analyze(in, Options{}); err != nil {
		t.Fatal(err)
	}
	gated := false
	for _, in := range r.Incomplete {
		gated = gated || in.Gated && in.Why == "statements_per_tx missing in 1 of 12 cells"
	}
	if !gated {
		t.Errorf("a count missing in a cell does not gate: %+v", r.Incomplete)
	}
}
