package store

import (
	"cmp"
	"context"
	"slices"

	"github.com/pgabtest/abtest/results"
)

// Answer is one commit's answer against its run's baseline as the
// report's summary counts it (analysis.Summary, cached by history), and
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

// addAnswers adds to the runs their commits' answers of analysis
// version, in plan order.
func (s *Store) addAnswers(ctx context.Context, runs []Run, index map[string]int, version string) error {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT t.run_id, t.commit_label, t.better, t.worse, t.same, t.unknown, t.incomplete, t.higher, t.lower, t.behind,
		t.no_change_pct, t.detectable_pct, t.line FROM run_answers t`+judgedAs+` ORDER BY t.run_id, t.commit_label`), version)
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

// Answer returns the cached answer of commit, or false when the run has
// no judgement of the version read or commit is its baseline.
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
