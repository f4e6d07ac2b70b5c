package nightly

import (
	"bufio"
	"encoding/json"
	"os"
	"sort"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/jsonl"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// Night is one night of the job: a line of history.jsonl, or a run of
// the results store under root/runs (fromStore turns one into a night,
// without Subject, Expected or Medians).
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

// ReadHistory reads history.jsonl; a missing file is an empty history, a
// line that does not parse is skipped.
func ReadHistory(path string) ([]Night, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Night
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var n Night
		if json.Unmarshal(sc.Bytes(), &n) == nil && n.SHA != "" {
			out = append(out, n)
		}
	}
	return out, sc.Err()
}

// AppendHistory appends one night, fsynced.
func AppendHistory(path string, n Night) error { return jsonl.Append(path, n) }

// historyTrends makes the trends of metrics over the last n nights of
// history.jsonl, one per configuration and metric with a value, with
// E-divisive's change points (history.jsonl knows no annotations).
func historyTrends(nights []Night, n int, metrics []string) []analysis.Trend {
	if len(nights) > n {
		nights = nights[len(nights)-n:]
	}
	var out []analysis.Trend
	for _, id := range trendConfigs(nights) {
		for _, m := range metrics {
			t := analysis.Trend{Config: id, Metric: m}
			for _, nt := range nights {
				if iv, ok := nt.Medians[id][m]; ok {
					t.Values = append(t.Values, iv.Median)
					t.Labels = append(t.Labels, label(nt.Date, nt.SHA))
				}
			}
			if len(t.Values) == 0 {
				continue
			}
			for _, cp := range analysis.ChangePoints(t.Values, analysis.ChangePointOptions{Seed: 1}) {
				t.ChangePoints = append(t.ChangePoints, analysis.TrendChange{ChangePoint: cp})
			}
			out = append(out, t)
		}
	}
	return out
}

// trendConfigs are the configurations with a median in any of nights,
// sorted.
func trendConfigs(nights []Night) []string {
	configs := map[string]bool{}
	for _, nt := range nights {
		for c := range nt.Medians {
			configs[c] = true
		}
	}
	ids := make([]string, 0, len(configs))
	for c := range configs {
		ids = append(ids, c)
	}
	sort.Strings(ids)
	return ids
}
