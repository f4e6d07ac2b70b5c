package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestAANoUsableCells: an A/A run whose cells all failed, or whose
// candidate's did, states no noise and no detectable change ("could have
// detected only a TPS change of 0% or more" was said of zero usable
// cells): it says it has no usable cells, nothing detectable (null in
// JSON).
func TestAANoUsableCells(t *testing.T) {
	cfg := results.Config{Workload: "select1", Clients: 1, Settings: map[string]string{}}
	p := &results.Plan{Version: results.Version, Baseline: "a", Metrics: results.Builtin, Configs: []results.Config{cfg},
		Commits: []results.Commit{{Label: "a", Build: "one"}, {Label: "b", Build: "one"}}, Options: results.PlanOpts{Repeats: 2}}
	for rep := 1; rep <= 2; rep++ {
		for _, c := range []string{"a", "b"} {
			p.Cells = append(p.Cells, results.Cell{ID: fmt.Sprintf("%s/r%d/%s", cfg.ID(), rep, c), Seq: len(p.Cells) + 1, Commit: c, Repeat: rep, Config: cfg})
		}
	}
	for _, tc := range []struct {
		failed []string
		want   string
	}{
		{[]string{"a", "b"}, "a and b run on one build, but this run has no usable cells: it says nothing about their noise, and could have detected no TPS change of any size."},
		{[]string{"b"}, "but no configuration has usable cells of both"},
	} {
		in := &Input{Plan: p}
		for _, c := range p.Cells {
			rec := results.Record{Cell: c.ID, Seq: c.Seq, Commit: c.Commit, Config: c.Config, Repeat: c.Repeat, Status: results.StatusOK,
				Metrics: results.ValuesOf(map[string]float64{"tps": 1000})}
			for _, f := range tc.failed {
				if c.Commit == f {
					rec.Status, rec.Metrics, rec.Error = results.StatusFailed, results.Values{}, "cluster: server did not start"
				}
			}
			in.Records = append(in.Records, rec)
		}
		r, err := Analyze(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.AA == nil || !strings.Contains(r.AA.Note, tc.want) || strings.Contains(r.AA.Note, "0%") || !math.IsInf(r.AA.DetectablePct, 1) {
			t.Errorf("failed %v: A/A %+v; want %q", tc.failed, r.AA, tc.want)
		}
		var txt, js bytes.Buffer
		r.WriteText(&txt)
		r.WriteJSON(&js)
		if strings.Contains(txt.String(), "could have detected only") {
			t.Errorf("failed %v: the text report states a detectable change:\n%s", tc.failed, txt.String())
		}
		var rep struct {
			AA map[string]any `json:"aa"`
		}
		if err := json.Unmarshal(js.Bytes(), &rep); err != nil || rep.AA["detectable_pct"] != nil {
			t.Errorf("failed %v: JSON aa %v (%v); want detectable_pct null", tc.failed, rep.AA, err)
		}
	}
}

// TestAAMetricOfOpenLoop: an A/A of open-loop configurations is judged
// on their primary (latency_p99_ms), not on TPS, which is the offered
// rate there; a closed loop, or a mix of primaries, stays on TPS.
func TestAAMetricOfOpenLoop(t *testing.T) {
	rows := []Row{{Metric: results.MetricTPS}, {Metric: results.MetricLatencyP99}}
	open := &results.Plan{Configs: []results.Config{{Workload: "select1", Clients: 2, Rate: 300}, {Workload: "select1", Clients: 2, Rate: 3000}}}
	if got := (&Report{Plan: open, Rows: rows}).aaMetric(); got != results.MetricLatencyP99 {
		t.Errorf("open loop: %s, want %s", got, results.MetricLatencyP99)
	}
	mixed := &results.Plan{Configs: []results.Config{{Workload: "select1", Clients: 2, Rate: 300}, {Workload: "select1", Clients: 2}}}
	if got := (&Report{Plan: mixed, Rows: rows}).aaMetric(); got != results.MetricTPS {
		t.Errorf("mixed loops: %s, want tps", got)
	}
}
