package history

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/store"
)

// answers are each commit's answer of rep (its Summaries), as the store
// keeps them.
func answers(rep *analysis.Report) []store.Answer {
	var out []store.Answer
	for _, sm := range rep.Summaries {
		a := store.Answer{Commit: sm.Commit, Better: sm.Better, Worse: sm.Worse, Same: sm.Same, Unknown: sm.Unknown,
			Incomplete: sm.Incomplete, Higher: sm.Higher, Lower: sm.Lower, Behind: sm.Behind, Line: answerLine(rep, sm)}
		if sm.NoChangePct > 0 {
			a.NoChangePct = analysis.Finite(sm.NoChangePct)
		}
		if sm.GatedUnknown > 0 && sm.DetectablePct > 0 {
			a.DetectablePct = analysis.Finite(sm.DetectablePct)
		}
		out = append(out, a)
	}
	return out
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
