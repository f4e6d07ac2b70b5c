package analysis

// The gate: the run's answer as an error with its exit code, and a
// night's status from it.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// Errors of Gate, for errors.Is.
var (
	// ErrRegression: a gated metric got worse (exit 1).
	ErrRegression = errors.New("analysis: regression")
	// ErrIncomplete: the run could not answer for some gated
	// configuration (exit 3).
	ErrIncomplete = errors.New("analysis: incomplete")
	// ErrUnanswered: every cell is there, but the primary's answer is
	// unknown: the run could not have seen a regression of the size
	// asked about (exit 3; --allow-unknown accepts it).
	ErrUnanswered = errors.New("analysis: could not answer")
)

// Gate is the run's answer as an error, for --fail-on-regression and
// nightly: nil when the primary answered and no gated test regressed;
// an ErrRegression with exit code 1 when a gated metric got worse (a
// regression is an answer, so it wins); an ErrIncomplete with exit code
// 3 when cells, repeats or a gated metric are missing, failed or
// saturated; an ErrUnanswered with exit code 3 when a primary's
// run-level answer (its pooled test, or the configuration's own where
// it has none) is unknown.
func (r *Report) Gate() error {
	if len(r.Regressions) > 0 {
		var names []string
		for _, c := range r.Regressions {
			names = append(names, fmt.Sprintf("%s %s %s %s", c.Commit, r.shownConfig(c.Config), c.Metric, pct(c.DeltaPct)))
		}
		return exitcode.Regressed(fmt.Errorf("%w: %d in gated metrics: %s", ErrRegression, len(names), strings.Join(names, "; ")))
	}
	var names []string
	for _, in := range r.Incomplete {
		if in.Gated {
			n := strings.TrimSpace(in.Commit + " " + r.shownConfig(in.Config))
			if in.Metric != "" {
				n += " " + in.Metric
			}
			names = append(names, fmt.Sprintf("%s (%d of %d: %s)", n, in.Usable, in.Planned, in.Why))
		}
	}
	if len(names) > 0 {
		return exitcode.Failure(fmt.Errorf("%w: the run could not answer for %d: %s", ErrIncomplete, len(names), strings.Join(names, "; ")))
	}
	if len(r.Unanswered) > 0 {
		return exitcode.Failure(fmt.Errorf("%w: %s", ErrUnanswered, strings.Join(r.Unanswered, "; ")))
	}
	return nil
}

// GateStatus names a night by its report's gate (Report.Gate): a
// regression (exit 1), unanswered when the primary's answer was unknown,
// failed when the run could not answer for missing cells (exit 3, never
// a baseline), else ok. Nightly and the store both call it, so a night's
// status is the one rule.
func GateStatus(gate error) results.GateStatus {
	switch {
	case gate == nil:
		return results.GateOK
	case errors.Is(gate, ErrRegression):
		return results.GateRegression
	case errors.Is(gate, ErrUnanswered):
		return results.GateUnanswered
	}
	return results.GateFailed
}
