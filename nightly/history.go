package nightly

import (
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/jsonl"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// Night is one night of the job: a run of the results store under
// root/runs (fromStore turns one into a night, without Subject, Expected
// or Medians), or the line a night appends to history.jsonl, the export.
type Night struct {
	// Date is the night's day (UTC; day).
	Date     string `json:"date"`
	SHA      string `json:"sha"`
	Subject  string `json:"subject,omitempty"`
	Baseline string `json:"baseline,omitempty"`
	Run      string `json:"run"`
	// Status is analysis.GateStatus of the night's gate.
	Status      results.GateStatus `json:"status"`
	Regressions []string           `json:"regressions,omitempty"`
	// Expected are the night's regressions an annotation explains
	// (abtest annotate): shown, not gated.
	Expected []string `json:"expected,omitempty"`
	// Medians maps configuration → metric → the head's median and its
	// confidence interval that night.
	Medians map[string]map[string]Interval `json:"medians"`
}

// Interval is a median with its confidence interval (null bounds when
// too few values for one).
type Interval struct {
	Median float64  `json:"median"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
}

// day is a night's date: the UTC day it started (history.jsonl's dates,
// the trend's labels and the summary line all use it).
func day(t time.Time) string { return t.UTC().Format("2006-01-02") }

// label names a night in the trend section: its date and short sha.
func label(date, sha string) string { return date + " " + text.Short(sha) }

// medians summarises the report's commit label for the history.
func medians(r *analysis.Report, commit string) map[string]map[string]Interval {
	out := map[string]map[string]Interval{}
	for _, row := range r.Rows {
		for _, st := range row.Stats {
			if st.Commit != commit || st.N == 0 {
				continue
			}
			if out[row.Config] == nil {
				out[row.Config] = map[string]Interval{}
			}
			out[row.Config][row.Metric] = Interval{Median: st.Median, Lo: analysis.Finite(st.Lo), Hi: analysis.Finite(st.Hi)}
		}
	}
	return out
}

// AppendHistory appends one night, fsynced.
func AppendHistory(path string, n Night) error { return jsonl.Append(path, n) }
