package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// loadFixture is the golden fixture (10 repeats, the patch costs churn
// 5 % TPS), for edits.
func loadFixture(t *testing.T) *Input {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	fixture(t, dir, matrix.Shard{I: 1, N: 1})
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	in.Dirs = []string{"run"}
	return in
}

func edit(in *Input, f func(r *results.Record)) {
	for i := range in.Records {
		f(&in.Records[i])
	}
}

// TestGateIncomplete: a candidate whose every cell failed is incomplete
// everywhere and exits 3, never "unchanged"; one failed cell makes its
// configuration incomplete even beside a real regression elsewhere,
// which still exits 1.
func TestGateIncomplete(t *testing.T) {
	in := loadFixture(t)
	edit(in, func(r *results.Record) {
		if r.Commit == "patch" {
			r.Status, r.Metrics, r.Error = results.StatusFailed, results.Values{}, "server would not start"
		}
	})
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	gerr := r.Gate()
	if exitcode.Code(gerr) != exitcode.Infra || !errors.Is(gerr, ErrIncomplete) || len(r.Incomplete) != 4 {
		t.Errorf("all failed: gate %v, incomplete %+v", gerr, r.Incomplete)
	}
	if s := r.Summaries[0]; s.Same+s.Better+s.Worse != 0 || s.NoChangePct != 0 {
		t.Errorf("all failed: summary %+v", s)
	}

	in = loadFixture(t)
	edit(in, func(r *results.Record) {
		if r.Commit == "patch" && r.Workload == "select1" && r.Clients == 2 && r.Repeat == 3 {
			r.Status, r.Metrics = results.StatusFailed, results.Values{}
		}
	})
	r, err = Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if exitcode.Code(r.Gate()) != exitcode.Regression || len(r.Incomplete) != 1 || r.Incomplete[0].Usable != 9 {
		t.Errorf("one failed cell: gate %v, incomplete %+v", r.Gate(), r.Incomplete)
	}
}

// TestGateRateAndFailures: under -R a candidate that saturates where the
// baseline held the rate regresses when that is beyond chance (every
// repeat against none); one stalled cell among the repeats is a warning,
// not a change (issue 40: an A/A sweep exited 1 on one cell of three).
// One failed transaction where the baseline had none is not a change
// either, although a 5× rate of failures is.
func TestGateRateAndFailures(t *testing.T) {
	in := openLoop(loadFixture(t), 500)
	edit(in, func(r *results.Record) {
		if r.Commit == "patch" && r.Workload == "select1" && r.Repeat == 2 {
			r.Saturated = true
		}
	})
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Regressions {
		if c.Metric == "rate" {
			t.Errorf("one saturated cell of the repeats called a change: %+v", c)
		}
	}
	if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "saturated in 1 of") }) {
		t.Errorf("the stalled cell is not said: %q", r.Warnings)
	}
	in = openLoop(loadFixture(t), 500)
	edit(in, func(r *results.Record) {
		r.Metrics.Set("failed_tx", 0)
		if r.Commit == "patch" && r.Workload == "select1" {
			r.Saturated = true
		}
		if r.Commit == "patch" && r.Workload == "select1" && r.Clients == 8 && r.Repeat == 4 {
			r.Metrics.Set("failed_tx", 3)
		}
	})
	r, err = Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rate, failed int
	for _, c := range r.Regressions {
		switch c.Metric {
		case "rate":
			rate++
		case "failed_tx":
			failed++
		}
	}
	if rate != 2 || exitcode.Code(r.Gate()) != exitcode.Regression {
		t.Errorf("rate regressions %d, gate %v: %+v", rate, r.Gate(), r.Regressions)
	}
	// select1/c8 is incomplete (a saturated cell), so its failed_tx is
	// not judged there; move the failure to a complete configuration.
	in = loadFixture(t)
	edit(in, func(r *results.Record) {
		r.Metrics.Set("failed_tx", 0)
		if r.Commit == "patch" && r.Workload == "select1" && r.Clients == 8 && r.Repeat == 4 {
			r.Metrics.Set("failed_tx", 3)
		}
	})
	if r, err = Analyze(in, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Regressions {
		if c.Metric == "failed_tx" {
			failed++
		}
	}
	if failed != 0 {
		t.Errorf("3 failures in one of 10 cells (p = 0.25 by the rate test) made %d regressions: %+v", failed, r.Regressions)
	}
	// A 5× rate is a change: 2 failures a cell against 10.
	in = loadFixture(t)
	edit(in, func(r *results.Record) {
		r.Metrics.Set("failed_tx", 0)
		if r.Workload == "select1" && r.Clients == 8 {
			r.Metrics.Set("failed_tx", map[string]float64{"base": 2, "patch": 10}[r.Commit])
		}
	})
	if r, err = Analyze(in, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Regressions {
		if c.Metric == "failed_tx" {
			failed++
		}
	}
	if failed != 1 {
		t.Errorf("a 5× failure rate: failed_tx regressions %d: %+v", failed, r.Regressions)
	}
}

// openLoop makes the fixture's run an open-loop one at rate: every
// configuration, cell and record offered it (-R rate).
func openLoop(in *Input, rate float64) *Input {
	p := *in.Plan
	p.Options.Rates = []float64{rate}
	p.Configs = slices.Clone(p.Configs)
	for i := range p.Configs {
		p.Configs[i].Rate = rate
	}
	p.Cells = slices.Clone(p.Cells)
	for i := range p.Cells {
		p.Cells[i].Config.Rate = rate
	}
	in.Plan = &p
	edit(in, func(r *results.Record) { r.Rate = rate })
	return in
}

// TestClosedLoopSaturatedInvalid (issue 40 item 11): a closed-loop cell
// marked saturated is an invalid cell: its configuration could not
// answer (exit 3, incomplete, saying why), never a rate regression
// (exit 1 "rate n/a"), for every candidate cell of a configuration as
// for one, and for the baseline's.
func TestClosedLoopSaturatedInvalid(t *testing.T) {
	for _, tc := range []struct {
		name string
		sat  func(r *results.Record) bool
	}{
		{"every candidate cell", func(r *results.Record) bool { return r.Commit == "patch" && r.Workload == "select1" }},
		{"one candidate cell", func(r *results.Record) bool {
			return r.Commit == "patch" && r.Workload == "select1" && r.Clients == 8 && r.Repeat == 2
		}},
		{"a baseline cell", func(r *results.Record) bool {
			return r.Commit == "base" && r.Workload == "select1" && r.Clients == 8 && r.Repeat == 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := loadFixture(t)
			in.Plan.Options.Rates = []float64{0, 500} // a plan mixing loops: its closed loop still cannot saturate
			edit(in, func(r *results.Record) { r.Saturated = tc.sat(r) })
			r, err := Analyze(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Regressions {
				if c.Metric == "rate" {
					t.Errorf("a saturated closed-loop cell called a rate change: %+v", c)
				}
			}
			gate := r.Gate()
			if !errors.Is(gate, ErrIncomplete) && !errors.Is(gate, ErrRegression) || !strings.Contains(fmt.Sprint(r.Incomplete), "a closed loop (no -R) has no rate to fall behind") {
				t.Errorf("gate %v, incomplete %+v; want select1 incomplete, saying a closed loop cannot saturate", gate, r.Incomplete)
			}
			if !slices.ContainsFunc(r.Incomplete, func(in Incomplete) bool {
				return in.Commit == "patch" && strings.HasPrefix(in.Config, "select1/") && in.Gated
			}) {
				t.Errorf("incomplete %+v; want patch on select1, gated", r.Incomplete)
			}
		})
	}
	// Without a regression elsewhere the run exits 3.
	in := loadFixture(t)
	edit(in, func(r *results.Record) {
		r.Saturated = r.Commit == "patch" && r.Workload == "select1"
		if r.Commit == "patch" && r.Workload == "churn" {
			r.Metrics.Set("tps", r.Metrics.Value("tps")*1.054) // undo the fixture's −5 %
		}
	})
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if gate := r.Gate(); exitcode.Code(gate) != exitcode.Infra || !errors.Is(gate, ErrIncomplete) {
		t.Errorf("every select1 cell of patch saturated in a closed loop: gate %v; want exit 3, incomplete", gate)
	}
}

// TestDescriptiveAndGate: descriptive metrics say higher/lower and are
// not gated unless named in Options.Gate; an unknown name is bad input.
func TestDescriptiveAndGate(t *testing.T) {
	in := loadFixture(t)
	edit(in, func(r *results.Record) {
		r.Metrics.Set("pgss_entries", 1000)
		if r.Commit == "patch" {
			r.Metrics.Set("pgss_entries", 1200)
		}
	})
	for _, gate := range [][]string{nil, {"pgss_entries"}} {
		r, err := Analyze(in, Options{Gate: gate})
		if err != nil {
			t.Fatal(err)
		}
		var verdicts []results.Verdict
		gated := false
		for _, c := range r.Changes {
			if c.Metric == "pgss_entries" {
				verdicts = append(verdicts, c.Verdict)
			}
		}
		for _, c := range r.Regressions {
			gated = gated || c.Metric == "pgss_entries"
		}
		if len(verdicts) != 4 || verdicts[0] != results.Higher || gated != (gate != nil) {
			t.Errorf("gate %v: verdicts %v, gated %v", gate, verdicts, gated)
		}
	}
	if _, err := Analyze(in, Options{Gate: []string{"nope"}}); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("--gate nope: %v", err)
	}
}

// TestNonFinite (issue 14 item 6): a baseline metric with median 0 and
// one non-zero repeat made the JSON report fail on +Inf. The report is
// written; the JSON has null with a reason, the markdown the change from
// 0 in the metric's unit, never ∞.
func TestNonFinite(t *testing.T) {
	in := loadFixture(t)
	edit(in, func(r *results.Record) {
		r.Metrics.Set("wal_fpi_per_tx", 0)
		r.Metrics.Set("pgss_deallocs", 0)
		if r.Repeat == 1 && r.Commit == "base" {
			r.Metrics.Set("wal_fpi_per_tx", 0.5)
			r.Metrics.Set("pgss_deallocs", 5)
		}
		if r.Commit == "patch" {
			r.Metrics.Set("wal_fpi_per_tx", 0.25)
			r.Metrics.Set("pgss_deallocs", 2)
		}
	})
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var js, md bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatalf("json: %v", err)
	}
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(js.Bytes()) || !strings.Contains(js.String(), `"delta_pct": "the baseline's median is 0: the change has no size"`) {
		t.Errorf("json lacks the reason for a null change")
	}
	if !strings.Contains(md.String(), "| +1.5 (absolute, from 0) | 0.015 | unknown, not gated |") {
		t.Errorf("markdown lacks the change from 0:\n%s", md.String())
	}
	if strings.Contains(md.String(), "∞") {
		t.Errorf("markdown shows ∞:\n%s", md.String())
	}
}

// TestReportSectionsGolden: the report's new sections — incomplete
// first, same, unknown with the detectable change, the number of tests —
// on the fixture with one failed patch cell, one cell missing a metric,
// and a TPS bar of 0.5 % that 10 pairs at 1 % CV cannot settle.
func TestReportSectionsGolden(t *testing.T) {
	in := loadFixture(t)
	edit(in, func(r *results.Record) {
		if r.Commit == "patch" && r.Workload == "churn" && r.Clients == 8 && r.Repeat == 7 {
			r.Status, r.Metrics, r.Error = results.StatusFailed, results.Values{}, "pgbench: connection lost"
		}
		if r.Commit == "patch" && r.Workload == "select1" && r.Clients == 2 && r.Repeat == 5 {
			r.Metrics.Delete("pgss_deallocs")
		}
	})
	r, err := Analyze(in, Options{Thresholds: map[string]float64{"tps": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	var md, js bytes.Buffer
	r.WriteMarkdown(&md)
	r.WriteJSON(&js)
	testenv.Golden(t, "sections.md", md.String())
	testenv.Golden(t, "sections.json", js.String())
	if s := r.Summaries[0]; s.Unknown == 0 || s.Incomplete == 0 || s.Tests == 0 {
		t.Errorf("summary %+v", s)
	}
}

// TestSequentialAPI: the matrix's loop. At the first look (6 pairs, 5 %
// noise) the 1 % change is unknown and its configuration undecided; at
// MaxRepeats nothing is left to extend, whatever the verdict; a step
// without room, or below the plan's repeats, is bad input.
func TestSequentialAPI(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	base, patch := noisy(rng, 10, 50000, 0.05), noisy(rng, 10, 49500, 0.05)
	seq := Options{Sequential: Sequential{Step: 2, MaxRepeats: 10}}
	in := input(base[:6], patch[:6])
	in.Plan.Options.Repeats = 6
	r, err := Analyze(in, seq)
	if err != nil {
		t.Fatal(err)
	}
	if u := r.Undecided(); len(u) != 1 || u[0] != in.Plan.Configs[0].ID() {
		t.Errorf("first look: undecided %v", u)
	}
	in = input(base, patch)
	in.Plan.Options.Repeats = 6
	if r, err = Analyze(in, seq); err != nil || len(r.Undecided()) != 0 {
		t.Errorf("at MaxRepeats: undecided %v, %v", r.Undecided(), err)
	}
	for _, s := range []Sequential{{Step: 0, MaxRepeats: 10}, {Step: 2, MaxRepeats: 4}} {
		if _, err := Analyze(in, Options{Sequential: s}); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%+v: %v", s, err)
		}
	}
}
