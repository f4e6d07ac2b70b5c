package analysis

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// sweepInput is a sweep of two commits at offered rates 500, 1000 and
// 4000 with batch=1 and 10; at 4000 every cell is saturated (both
// commits, as on a 2-core machine).
func sweepInput(t *testing.T, mustNotSaturate bool) *Input {
	t.Helper()
	p := &results.Plan{
		Version: results.Version, Baseline: "base", Metrics: results.Builtin,
		Commits: []results.Commit{{Label: "base", Install: "/x", Build: "base"}, {Label: "patch", Install: "/y", Build: "patch"}},
		Options: results.PlanOpts{Workloads: []string{"file:ping.sql"}, Clients: []int{4}, Rates: []float64{500, 1000, 4000},
			Vars: []results.Axis{{Name: "batch", Values: []string{"1", "10"}}}, MustNotSaturate: mustNotSaturate, Repeats: 3, DurationS: 5, Order: "abba"},
	}
	for _, batch := range []string{"1", "10"} {
		for _, rate := range p.Options.Rates {
			c := results.Config{Workload: "file:ping.sql", Clients: 4, Rate: rate, Vars: map[string]string{"batch": batch}}
			p.Configs = append(p.Configs, c)
			for rep := 1; rep <= 3; rep++ {
				for _, commit := range []string{"base", "patch"} {
					p.Cells = append(p.Cells, results.Cell{ID: fmt.Sprintf("%s/r%d/%s", c.ID(), rep, commit), Seq: len(p.Cells) + 1, Commit: commit, Repeat: rep, Config: c})
				}
			}
		}
	}
	in := &Input{Plan: p}
	for _, c := range p.Cells {
		committed, sat := c.Rate, false
		if c.Rate == 4000 {
			committed, sat = 2600, true
		}
		rec := results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: c.Config, Repeat: c.Repeat, Status: results.StatusOK, DurationS: 5,
			Metrics:   results.ValuesOf(map[string]float64{"tps": committed * (1 + 0.001*float64(c.Repeat)), "latency_p50_ms": 1, "latency_p95_ms": 2, "latency_p99_ms": 3 + c.Rate/1000, "tup_ins_per_tx": 1}),
			Saturated: sat,
		}
		if sat {
			rec.Saturation = &results.Saturation{OfferedTPS: c.Rate, CommittedTPS: committed, BacklogS: 6, BoundS: 5, Saturated: true, Reason: "committed 2600 of the 4000 tx/s offered (65 %, below 90 %)"}
		}
		in.Records = append(in.Records, rec)
	}
	return in
}

// TestSweepReport: the point table has every point of every commit in
// order (variables, then rate), the saturated points marked with their
// reason; they are reported, not incomplete, unless the plan says no
// point may saturate; the latency-vs-rate plot is drawn.
func TestSweepReport(t *testing.T) {
	r, err := Analyze(sweepInput(t, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sweeps) != 1 || len(r.Sweeps[0].Points) != 12 || r.Sweeps[0].Series != "file:ping.sql/c4/cpuall" {
		t.Fatalf("sweeps %+v", r.Sweeps)
	}
	var order []string
	for _, pt := range r.Sweeps[0].Points {
		order = append(order, pt.Point+" "+pt.Commit)
		if want := pt.OfferedTPS == 4000; (pt.Saturated == 3) != want || pt.Cells != 3 {
			t.Errorf("%s %s: %d of %d saturated", pt.Point, pt.Commit, pt.Saturated, pt.Cells)
		}
	}
	if got := strings.Join(order[:4], "; "); got != "r500 :batch=1 base; r500 :batch=1 patch; r1000 :batch=1 base; r1000 :batch=1 patch" {
		t.Errorf("order %s", got)
	}
	if len(r.Incomplete) != 0 {
		t.Errorf("saturated sweep points made the run incomplete: %+v", r.Incomplete)
	}
	var md strings.Builder
	r.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "## Sweep: ping.sql/c4/cpuall") || !strings.Contains(md.String(), "| r4000 :batch=10 | patch | 4000 | 2605 |") ||
		!strings.Contains(md.String(), "**yes** (3 of 3)") || !strings.Contains(md.String(), "saturated (committed 2600 of the 4000 tx/s offered") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var txt strings.Builder
	r.WriteText(&txt)
	if !strings.Contains(txt.String(), "Sweep ping.sql/c4/cpuall") || !strings.Contains(txt.String(), "YES 3/3") {
		t.Errorf("text report has no sweep:\n%s", txt.String())
	}
	for _, l := range strings.Split(txt.String(), "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("text line over 80 columns: %q", l)
		}
	}
	dir := t.TempDir()
	if err := r.WritePlots(filepath.Join(dir, "plots"), dir); err != nil {
		t.Fatal(err)
	}
	drawn := 0
	for _, p := range r.Plots {
		if strings.HasPrefix(filepath.Base(p), "latency-vs-rate-") {
			svg, _ := os.ReadFile(filepath.Join(dir, p))
			if paths, _ := svgLines(string(svg)); paths < 4 {
				t.Errorf("%s: %d lines", p, paths)
			}
			drawn++
		}
	}
	if drawn != 1 {
		t.Errorf("latency-vs-rate plots %d, want 1: %v %v", drawn, r.Plots, r.PlotNotes)
	}

	strict, err := Analyze(sweepInput(t, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(strict.Incomplete) != 4 {
		t.Errorf("--must-not-saturate: %d incomplete, want the 2 saturated points × 2 commits: %+v", len(strict.Incomplete), strict.Incomplete)
	}
}

// TestSweepOneArmSaturated: where only the candidate saturated every
// cell of a point, its metrics have no value to compare: a warning says
// so (three cells against three cannot make it a change), its rows say
// unknown and why, and nothing
// compares an empty arm (a counter exact on the baseline's cells made
// the analysis panic: an open-loop run resumed in a loaded suite,
// TestKilledRunRestoresUserCluster, saturated its one candidate cell).
func TestSweepOneArmSaturated(t *testing.T) {
	in := sweepInput(t, false)
	point := "file:ping.sql/c4/cpuall/r1000/:batch=1"
	for i := range in.Records {
		rec := &in.Records[i]
		if rec.Commit == "patch" && rec.Config.ID() == point {
			rec.Saturated = true
			rec.Saturation = &results.Saturation{OfferedTPS: 1000, CommittedTPS: 700, BacklogS: 6, BoundS: 5, Saturated: true, Reason: "committed 700 of the 1000 tx/s offered (70 %, below 90 %)"}
		}
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 3 of 3 saturated against 0 of 3 is Fisher p 0.1: at three
	// repeats a point's saturation is said, never gated as a change.
	for _, c := range r.Regressions {
		if c.Config == point && c.Metric == "rate" {
			t.Errorf("3 of 3 against 0 of 3 called a change: %+v", c)
		}
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, point) && strings.Contains(w, "saturated in 3 of 3") }) {
		t.Errorf("the saturated point is not said: %q", r.Warnings)
	}
	rows := 0
	for _, row := range r.Rows {
		if row.Config != point {
			continue
		}
		for _, st := range row.Stats {
			if st.Commit != "patch" {
				continue
			}
			rows++
			if st.Verdict != results.Unknown || !strings.Contains(st.Note, "saturated") {
				t.Errorf("%s %s: %s (%q), want unknown saying the cells saturated", row.Config, row.Metric, st.Verdict, st.Note)
			}
		}
	}
	if rows == 0 {
		t.Errorf("no rows for %s", point)
	}
	// What a reader sees: unknown, with no size it could have detected.
	var txt, md strings.Builder
	r.WriteText(&txt)
	r.WriteMarkdown(&md)
	if out := txt.String() + md.String(); strings.Contains(out, "<0%") || strings.Contains(out, "smaller than 0%") || strings.Contains(out, "< 0%") {
		t.Errorf("the saturated point's rows claim a detectable size of 0:\n%s", out)
	}
	if err := r.WriteJSON(io.Discard); err != nil {
		t.Errorf("report.json: %v", err)
	}
}

// TestSweepMediansAnyOrder: a point whose cells committed 197, 17 and
// 204/s (one stalled) shows 197/s, the sorted median, as issue 40's r200
// point did not; and the records in any order give the same report.
func TestSweepMediansAnyOrder(t *testing.T) {
	in := sweepInput(t, false)
	for i, tps := range map[int]float64{0: 197, 2: 17, 4: 204} {
		in.Records[i].Metrics.Set(results.MetricTPS, tps)
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pt := r.Sweeps[0].Points[0]
	if pt.Point != "r500 :batch=1" || pt.Commit != "base" || pt.Medians[results.MetricTPS] != 197 {
		t.Fatalf("%s %s: committed/s %v, want 197", pt.Point, pt.Commit, pt.Medians[results.MetricTPS])
	}
	var want bytes.Buffer
	if err := r.WriteMarkdown(&want); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3 {
		rng.Shuffle(len(in.Records), func(i, j int) { in.Records[i], in.Records[j] = in.Records[j], in.Records[i] })
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := r.WriteMarkdown(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("the report of shuffled records differs:\n%s\nwant:\n%s", got.String(), want.String())
		}
	}
}
