package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/results"
)

// Answer is one commit's answer against its run's baseline as the
// report's summary counts it (analysis.Summary, stored at import), and
// Line, which names what changed. A page shows these counts rather than
// counting the stored rows again: then the dashboard and report.md
// cannot disagree.
type Answer struct {
	Commit string `json:"commit"`
	// The headline counts of the gated tests, Behind the secondary tests
	// not run, Higher and Lower the report-only rows called.
	Better     int `json:"better"`
	Worse      int `json:"worse"`
	Same       int `json:"same"`
	Unknown    int `json:"unknown"`
	Incomplete int `json:"incomplete"`
	Higher     int `json:"higher"`
	Lower      int `json:"lower"`
	Behind     int `json:"behind_primary"`
	// NoChangePct is set when every gated verdict is same: no gated
	// metric changed by this much or more. DetectablePct is set when a
	// gated verdict is unknown: changes below it could have been missed.
	NoChangePct   *float64 `json:"no_change_pct,omitempty"`
	DetectablePct *float64 `json:"detectable_pct,omitempty"`
	// Line is the answer in words: the called changes, biggest first,
	// then what the gated metrics could say.
	Line string `json:"line"`
}

// maxNamed is how many called changes an answer's line names.
const maxNamed = 3

// answerLine says a commit's answer in one line: "pgss_deallocs −66.6 %
// better on churn/c8; pgss_cold +447 % higher on churn/c8; gated
// metrics: could not detect < 58 %".
func answerLine(rep *analysis.Report, sm analysis.Summary) string {
	var called []analysis.Change
	for _, c := range rep.Changes {
		if c.Commit == sm.Commit {
			called = append(called, c)
		}
	}
	// The gated changes first (they answer), then by size.
	slices.SortStableFunc(called, func(a, b analysis.Change) int {
		if a.Gated != b.Gated {
			if a.Gated {
				return -1
			}
			return 1
		}
		return cmp.Compare(math.Abs(b.DeltaPct), math.Abs(a.DeltaPct))
	})
	var parts []string
	for i, c := range called {
		if i == maxNamed {
			parts = append(parts, fmt.Sprintf("%d more changes", len(called)-maxNamed))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s %s on %s", c.Metric, signedPct(c.DeltaPct), c.Verdict, c.Config))
	}
	switch {
	case sm.Incomplete > 0:
		parts = append(parts, fmt.Sprintf("%d gated tests could not answer (incomplete)", sm.Incomplete))
	case sm.NoChangePct > 0:
		parts = append(parts, fmt.Sprintf("gated metrics: no change ≥ %s", absPct(sm.NoChangePct)))
	case sm.GatedUnknown > 0 && !math.IsInf(sm.DetectablePct, 0) && sm.DetectablePct > 0:
		parts = append(parts, fmt.Sprintf("%d gated unknown: could not detect < %s", sm.GatedUnknown, absPct(sm.DetectablePct)))
	case sm.GatedUnknown > 0:
		parts = append(parts, fmt.Sprintf("%d gated unknown", sm.GatedUnknown))
	case len(called) == 0:
		parts = append(parts, "no change called")
	}
	return strings.Join(parts, "; ")
}

// signedPct is a change as a line says it: "−66.6 %", "+447 %".
func signedPct(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return "from 0"
	}
	s := fmt.Sprintf("%+.3g %%", x)
	if math.Abs(x) >= 1000 {
		s = fmt.Sprintf("%+.0f %%", x)
	}
	return strings.Replace(s, "-", "−", 1)
}

func absPct(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f %%", x)
	}
	return fmt.Sprintf("%.3g %%", x)
}

// putAnswers stores each commit's answer of rep (its Summaries).
func (s *Store) putAnswers(ctx context.Context, tx execer, run string, rep *analysis.Report) error {
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM run_answers WHERE run_id = ?"), run); err != nil {
		return err
	}
	for _, sm := range rep.Summaries {
		var noChange, detect *float64
		if sm.NoChangePct > 0 {
			noChange = analysis.Finite(sm.NoChangePct)
		}
		if sm.GatedUnknown > 0 && sm.DetectablePct > 0 {
			detect = analysis.Finite(sm.DetectablePct)
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_answers (run_id, commit_label, better, worse, same, unknown, incomplete, higher, lower, behind,
			no_change_pct, detectable_pct, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			run, sm.Commit, sm.Better, sm.Worse, sm.Same, sm.Unknown, sm.Incomplete, sm.Higher, sm.Lower, sm.Behind,
			noChange, detect, answerLine(rep, sm)); err != nil {
			return err
		}
	}
	return nil
}

// addAnswers adds to the runs their commits' answers, in plan order.
func (s *Store) addAnswers(ctx context.Context, runs []Run, index map[string]int) error {
	rows, err := s.db.QueryContext(ctx, `SELECT run_id, commit_label, better, worse, same, unknown, incomplete, higher, lower, behind,
		no_change_pct, detectable_pct, line FROM run_answers ORDER BY run_id, commit_label`)
	if err != nil {
		return s.fail("listing runs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var run string
		var a Answer
		if err := rows.Scan(&run, &a.Commit, &a.Better, &a.Worse, &a.Same, &a.Unknown, &a.Incomplete, &a.Higher, &a.Lower, &a.Behind,
			&a.NoChangePct, &a.DetectablePct, &a.Line); err != nil {
			return s.fail("listing runs", err)
		}
		if i, ok := index[run]; ok {
			runs[i].Answers = append(runs[i].Answers, a)
		}
	}
	if err := rows.Err(); err != nil {
		return s.fail("listing runs", err)
	}
	for i := range runs {
		r := &runs[i]
		pos := map[string]int{}
		for k, c := range r.Commits {
			pos[c.Label] = k
		}
		slices.SortStableFunc(r.Answers, func(a, b Answer) int { return cmp.Compare(pos[a.Commit], pos[b.Commit]) })
	}
	return nil
}

// Answer returns the stored answer of commit, or false when the run was
// stored before the store kept answers (schema 7) or commit is its
// baseline.
func (r *Run) Answer(commit string) (Answer, bool) {
	for _, a := range r.Answers {
		if a.Commit == commit {
			return a, true
		}
	}
	return Answer{}, false
}

// Counts are the answer's counts in the order a page lists them, the
// zeros left out: the headline, then the report-only ones.
func (a Answer) Counts() (headline, reportOnly []VerdictCount) {
	for _, c := range []VerdictCount{{results.Worse, a.Worse}, {results.Better, a.Better}, {results.Incomplete, a.Incomplete},
		{results.Unknown, a.Unknown}, {results.Same, a.Same}} {
		if c.N > 0 {
			headline = append(headline, c)
		}
	}
	for _, c := range []VerdictCount{{results.Higher, a.Higher}, {results.Lower, a.Lower}} {
		if c.N > 0 {
			reportOnly = append(reportOnly, c)
		}
	}
	return headline, reportOnly
}

// VerdictCount is how many rows of a verdict an answer counts.
type VerdictCount struct {
	Verdict results.Verdict `json:"verdict"`
	N       int             `json:"n"`
}
