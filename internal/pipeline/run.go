package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// RunOptions are what happens around a matrix run (matrix and demo):
// how it is analysed and gated, where it is recorded and where it
// prints.
type RunOptions struct {
	// Analysis decides the verdicts; its Gate adds metrics to the gate.
	Analysis analysis.Options
	// Fail gates the run (--fail-on-regression): exit 1 on a regression
	// in a gated metric, 3 when the run could not answer. A plan whose
	// primary cannot be answered at its repeats is refused before it
	// runs (analysis.CheckReach).
	Fail bool
	// AllowUnknown (--allow-unknown) accepts a primary whose answer is
	// unknown (analysis.ErrUnanswered) as exit 0, said in one line; a
	// regression or missing cells still fail the gate.
	AllowUnknown bool
	// Record stores the finished run; nil stores nothing.
	Record func(ctx context.Context, dir string) error
	// Out receives the run's lines and summary, Err the warnings.
	Out, Err io.Writer
}

// Run runs plan into dir, then writes its report (report.md,
// report.json, plots), prints its summary, records it and gates it; in a
// dry run (deps.Proc.DryRun) it only prints the plan on o.Out. Either
// way the gate's reach (analysis.PlanReach) is said before the first
// cell, and a gated plan that cannot reach an answer is refused first.
// A report that cannot be made prints the median TPS instead (and fails
// a gated run: no report, no gate); a store that cannot be reached is
// an error, unless the gate has one to return, which wins.
func Run(ctx context.Context, deps *matrix.Deps, plan *results.Plan, dir string, o RunOptions) error {
	if err := analysis.CheckMetrics(plan, o.Analysis); err != nil {
		return err
	}
	if o.Fail {
		if err := analysis.CheckReach(plan, o.Analysis); err != nil {
			return err
		}
	}
	reach := analysis.PlanReach(plan, o.Analysis)
	if deps.Proc != nil && deps.Proc.DryRun {
		matrix.PrintPlan(o.Out, plan, dir, matrix.EstimateBuilds(ctx, deps, plan))
		for _, r := range reach {
			fmt.Fprintf(o.Out, "# %s\n", r)
		}
		return nil
	}
	fmt.Fprintf(o.Out, "matrix: %d cells (%d commits, %d configurations, %d repeats), results in %s\n",
		len(plan.Cells), len(plan.Commits), len(plan.Configs), plan.Options.Repeats, dir)
	for _, r := range reach {
		fmt.Fprintln(o.Out, r)
	}
	if err := matrix.Run(ctx, deps, plan, dir); err != nil {
		if errors.Is(err, matrix.ErrInterrupted) {
			fmt.Fprintf(o.Err, "resume with: abtest matrix --resume %s\n", dir)
		}
		return err
	}
	rep, err := Write(dir, o.Analysis)
	if err != nil {
		fmt.Fprintf(o.Err, "abtest: report: %v\n", err)
		if merr := Medians(o.Out, dir, plan); merr != nil || !o.Fail {
			return merr
		}
		return exitcode.Failure(fmt.Errorf("no report, so no gate: %w", err))
	}
	Summary(o.Out, dir, rep)
	gerr := Gate(rep, o.Fail, o.AllowUnknown, o.Err)
	if o.Record == nil {
		return gerr
	}
	if err := o.Record(ctx, dir); err != nil {
		if gerr != nil {
			// The gate's answer (a regression, say) matters more than
			// the store: say both, exit with the gate's.
			fmt.Fprintf(o.Err, "abtest: store: %v\n", err)
			return gerr
		}
		return err
	}
	return gerr
}

// Gate is the run's answer as an exit code when asked for one (fail):
// analysis.Report.Gate decides, so a candidate whose cells all failed
// exits 3, never 0. Under allowUnknown a primary whose answer is unknown
// (analysis.ErrUnanswered) exits 0 and says so on errOut in one line;
// a regression or an incomplete run is never waived (Report.Gate
// returns those first).
func Gate(rep *analysis.Report, fail, allowUnknown bool, errOut io.Writer) error {
	if !fail {
		return nil
	}
	err := rep.Gate()
	if allowUnknown && errors.Is(err, analysis.ErrUnanswered) {
		fmt.Fprintf(errOut, "abtest: could not answer: %s; exit 0 under --allow-unknown\n", strings.Join(rep.Unanswered, "; "))
		return nil
	}
	return err
}

// GateFlags are the gate's flags as given (matrix, analyze): --gate,
// --primary (repeatable, or comma lists), --fail-on-regression and
// --allow-unknown.
type GateFlags struct {
	Gate, Primary      []string
	Fail, AllowUnknown bool
}

// Options are the analysis options the flags set; --allow-unknown alone
// is refused (there is no gate to waive).
func (f GateFlags) Options() (analysis.Options, error) {
	if f.AllowUnknown && !f.Fail {
		return analysis.Options{}, exitcode.BadInputf("--allow-unknown goes with --fail-on-regression")
	}
	var primary []string
	for _, v := range f.Primary {
		// Slice flags are not split on commas (configure), but a
		// metric's name never holds one.
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				primary = append(primary, name)
			}
		}
	}
	return analysis.Options{Gate: f.Gate, Primary: primary}, nil
}

// BeforeAnalyze checks the report's format before anything is read, and
// sets a soft memory limit: big result sets (10⁵ cells) are mostly
// garbage from JSON decoding, and the limit makes the GC keep the peak
// down.
func BeforeAnalyze(format string) error {
	if err := analysis.CheckFormat(format); err != nil {
		return err
	}
	debug.SetMemoryLimit(400 << 20)
	return nil
}

// RunOptions are the run options the flags set (the analysis and the
// gate); the caller adds where it prints and records.
func (f GateFlags) RunOptions() (RunOptions, error) {
	o, err := f.Options()
	return RunOptions{Analysis: o, Fail: f.Fail, AllowUnknown: f.AllowUnknown}, err
}

// Analyze analyses an input under o, writes its report in format (to
// output, or out), and gates it as the flags ask.
func Analyze(in *analysis.Input, o analysis.Options, f GateFlags, format, output string, out, errOut io.Writer) error {
	rep, err := analysis.Analyze(in, o)
	if err != nil {
		return err
	}
	if err := rep.Output(out, format, output, errOut); err != nil {
		return err
	}
	return Gate(rep, f.Fail, f.AllowUnknown, errOut)
}

// OutputDir is where a new run's results go: dir, or a new
// abtest_TIME directory under resultsDir. A directory that already holds
// a plan is refused (resume it instead), and one another run is writing
// is refused naming that run's pid.
func OutputDir(plan *results.Plan, dir, resultsDir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(resultsDir, "abtest_"+plan.Created.Format("20060102T150405Z"))
	}
	if pid, held := results.Holder(dir); held {
		return "", exitcode.BadInputf("-o %s: %w: another abtest (pid %s) is writing it; wait for it or use another -o", dir, results.ErrLocked, pid)
	}
	if _, err := os.Stat(filepath.Join(dir, results.PlanFile)); err == nil {
		return "", exitcode.BadInputf("-o %s already holds results; use --resume %s, or another -o", dir, dir)
	}
	return dir, nil
}
