package matrix

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// adaptive runs --until-decided: after the planned repeats (and after
// every look's extra repeats) it asks the Decider which configurations
// are still undecided, and appends the next UntilStep interleaved blocks
// of each as new repeats, written to plan.json before they run, so that
// a resume continues where the run stopped. It ends when everything is decided,
// at the maximum repeats, or when the next blocks would exceed the
// budget.
func (r *run) adaptive(ctx context.Context) error {
	o := r.plan.Options
	if !o.UntilDecided {
		return nil
	}
	if r.deps.Decide == nil {
		return exitcode.Failure(fmt.Errorf("matrix: the plan has --until-decided but the caller gave no decision rule"))
	}
	step := max(1, o.UntilStep)
	for {
		top := maxRepeat(r.plan)
		undecided, err := r.deps.Decide(r.dir, (top-o.Repeats+step-1)/step+1)
		if err != nil {
			return err
		}
		configs := r.configsOf(undecided)
		if len(configs) == 0 && top < o.MaxRepeats {
			r.deps.printf("until-decided: every configuration decided after %d repeats\n", top)
			return nil
		}
		if top >= o.MaxRepeats {
			// At the last look nothing is "undecided" (no look is left
			// to decide it): say where the run stopped, not that it
			// decided.
			if len(configs) == 0 {
				r.deps.printf("until-decided: stopped at --max-repeats %d, the last look; the report has the verdicts\n", o.MaxRepeats)
			} else {
				r.deps.printf("until-decided: %d configuration(s) still undecided at --max-repeats %d\n", len(configs), o.MaxRepeats)
			}
			return nil
		}
		next := min(top+step, o.MaxRepeats)
		if configs, err = r.withinBudget(configs, next-top); err != nil || len(configs) == 0 {
			return err
		}
		r.deps.printf("until-decided: %d configuration(s) undecided after %d repeats: %s\n", len(configs), top, repeatRange(top+1, next))
		first := len(r.plan.Cells)
		for rep := top + 1; rep <= next; rep++ {
			for _, c := range configs {
				appendBlock(r.plan, c, rep)
			}
		}
		if err := results.WritePlan(r.dir, r.plan); err != nil {
			return exitcode.Failure(err)
		}
		if err := r.cells(ctx, r.plan.Cells[first:]); err != nil {
			return err
		}
	}
}

// repeatRange names the repeats a look adds.
func repeatRange(from, to int) string {
	if from == to {
		return fmt.Sprintf("repeat %d", from)
	}
	return fmt.Sprintf("repeats %d–%d", from, to)
}

// withinBudget keeps as many configurations as the budget left for
// their next blocks (blocks each) still fits (all of them without a
// budget).
func (r *run) withinBudget(configs []indexed, blocks int) ([]indexed, error) {
	budget := time.Duration(r.plan.Options.BudgetS * float64(time.Second))
	if budget <= 0 {
		return configs, nil
	}
	recs, _, err := results.ReadRecordsNoProgress(r.dir)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	var spent float64
	for _, rec := range recs {
		if rec.Repeat > r.plan.Options.Repeats {
			spent += rec.WallS
		}
	}
	block := time.Duration(len(r.plan.Commits)*blocks) * cellTime(r.plan)
	left := budget - time.Duration(spent*float64(time.Second))
	n := min(len(configs), int(max(0, left/block)))
	if n == 0 {
		r.deps.printf("until-decided: %d configuration(s) still undecided; the budget of %s is spent\n", len(configs), budget)
	}
	return configs[:n], nil
}

// configsOf returns the plan's configurations with the given IDs, in
// canonical order; IDs the plan does not have are ignored.
func (r *run) configsOf(ids []string) []indexed {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	mine := map[string]bool{}
	for _, c := range r.plan.Configs {
		mine[c.ID()] = true
	}
	var out []indexed
	for _, g := range canonical(r.plan.Options) {
		for _, c := range g {
			if id := c.ID(); want[id] && mine[id] {
				out = append(out, c)
			}
		}
	}
	return out
}

// maxRepeat is the highest repeat of the plan's timed cells (an
// instruction cell's confirmation is not a repeat of the design), or of
// its instruction cells in a plan of those alone.
func maxRepeat(p *results.Plan) int {
	top, instr := 0, 0
	for _, c := range p.Cells {
		if c.Instructions {
			instr = max(instr, c.Repeat)
		} else {
			top = max(top, c.Repeat)
		}
	}
	if top == 0 {
		return instr
	}
	return top
}

// confirmInstructions adds one block of an instruction configuration
// whose commits' counts differ beyond the metric's threshold after its
// planned runs, and runs it: a count repeats to 0.001 %, so a difference
// that comes back is the commit's, and one that does not is a flaw of
// the first run the report shows. A plan from before InstrRepeats (every
// repeat has its instruction cells) is left as it is.
func (r *run) confirmInstructions(ctx context.Context) error {
	o := r.plan.Options
	if !o.Instructions || o.InstrRepeats == 0 || o.NoInstrConfirm {
		return nil
	}
	recs, _, err := results.ReadRecordsNoProgress(r.dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	ids, threshold := instrToConfirm(r.plan, recs)
	configs := r.configsOf(ids)
	if len(configs) == 0 {
		return nil
	}
	rep := o.InstrRepeats + 1
	r.deps.printf("instructions: %d configuration(s) differ beyond %.3g %% after %d run(s); one confirmation run of each (repeat %d)\n", len(configs), threshold, o.InstrRepeats, rep)
	first := len(r.plan.Cells)
	for _, c := range configs {
		appendBlock(r.plan, c, rep)
	}
	if err := results.WritePlan(r.dir, r.plan); err != nil {
		return exitcode.Failure(err)
	}
	return r.cells(ctx, r.plan.Cells[first:])
}

// instrToConfirm are the instruction configurations of p whose commits'
// first counts differ from the baseline's by more than the metric's
// threshold (percent, returned too) and that have no confirmation yet.
func instrToConfirm(p *results.Plan, recs []results.Record) ([]string, float64) {
	threshold := 0.1
	if m, ok := p.Metrics.Get(results.MetricInstructionsPerTx); ok {
		threshold = m.ThresholdPct
	}
	top := map[string]int{}                   // config → highest repeat planned
	counts := map[string]map[string]float64{} // config → commit → the first run's count
	for _, c := range p.Cells {
		top[c.Config.ID()] = max(top[c.Config.ID()], c.Repeat)
	}
	for _, rec := range recs {
		if v, ok := rec.Metrics.Get(results.MetricInstructionsPerTx); ok && rec.Status == results.StatusOK && rec.Repeat == 1 {
			id := rec.Config.ID()
			if counts[id] == nil {
				counts[id] = map[string]float64{}
			}
			counts[id][rec.Commit] = v
		}
	}
	var ids []string
	for id, by := range counts {
		base, ok := by[p.Baseline]
		if top[id] > p.Options.InstrRepeats || !ok || base <= 0 {
			continue
		}
		for _, v := range by {
			if 100*math.Abs(v/base-1) > threshold {
				ids = append(ids, id)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids, threshold
}
