package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// Recorder stores finished results directories in the results store,
// saying what it stored on w (history.Record at a location). Given no
// directories it stores nothing and checks that the store can be
// recorded in (a location that parses, a server that answers): Run asks
// that before the first cell, so a bad --store fails in a second, not
// after the whole run.
type Recorder func(ctx context.Context, w io.Writer, dirs ...string) error

// RunOptions are what happens around a matrix run: how it is analysed
// and gated, where it is recorded and where it prints, and the hooks of
// the callers that differ (nightly, bisect).
type RunOptions struct {
	// Analysis decides the verdicts; its Gate adds metrics to the gate.
	Analysis analysis.Options
	// Fail gates the run (--fail-on-regression): exit 1 on a regression
	// in a gated metric, 3 when the run could not answer. A plan whose
	// primary cannot be answered at its repeats is refused before it
	// runs (analysis.CheckReach), unless RunUnreachable.
	Fail bool
	// AllowUnknown (--allow-unknown) accepts a primary whose answer is
	// unknown (analysis.ErrUnanswered) as exit 0, said in one line; a
	// regression or missing cells still fail the gate.
	AllowUnknown bool
	// RunUnreachable runs a gated plan whose primary cannot be answered
	// (the nightly under allow_unknown, whose answer is then exit 0).
	RunUnreachable bool
	// Record stores the finished run; nil stores nothing.
	Record Recorder
	// Out receives the run's lines and summary, Err the warnings.
	Out, Err io.Writer
	// Name starts the lines said on Err ("abtest" when empty).
	Name  string
	Hooks Hooks
}

// Hooks are the steps a caller does its own way; a nil hook does the
// matrix command's.
type Hooks struct {
	// Started says the run is starting (before the first cell); the
	// matrix command's says the cells, the directory and the gate's
	// reach.
	Started func(plan *results.Plan, dir string, reach []analysis.Reach)
	// Failed sees a plan refused or a matrix run that failed, and
	// returns the error to return; the matrix command's says how to
	// resume an interrupted run.
	Failed func(err error) error
	// Gate is the run's verdict (nil: ok), decided before it is
	// recorded; stop ends the pipeline at once (nothing recorded or
	// written). The matrix command's is the report's gate under Fail and
	// AllowUnknown.
	Gate func(rep *analysis.Report) (verdict, stop error)
	// Sections adds the caller's typed sections to the report before it
	// is written, knowing whether the run was stored (the nightly's
	// trend, which then comes from the store).
	Sections func(ctx context.Context, rep *analysis.Report, stored bool) error
	// Summary prints the written report's summary; the matrix command's
	// is Summary and the line of an unknown answer that AllowUnknown
	// waived.
	Summary func(rep *analysis.Report)
	// Done ends the run once its report is written and the store's lines
	// said, and returns the run's verdict (the nightly's retention and
	// one-line summary, bisect's step decision); nil returns the gate's.
	Done func(ctx context.Context, rep *analysis.Report, verdict error) error
}

// Prepare makes a new run's plan (matrix.Prepare) and decides its
// results directory (OutputDir: out, or a new one under resultsDir; one
// that holds a plan or that another run is writing is refused).
func Prepare(ctx context.Context, deps *matrix.Deps, req matrix.Request, out, resultsDir string) (*results.Plan, string, error) {
	plan, err := matrix.Prepare(ctx, deps, req)
	if err != nil {
		return nil, "", err
	}
	dir, err := OutputDir(plan, out, resultsDir)
	if err != nil {
		return nil, "", err
	}
	plan, err = designed(ctx, deps, req, plan, dir)
	return plan, dir, err
}

// Run runs plan into dir, then analyses it, gates it, records it,
// writes its report (report.md, report.json, plots) and prints its
// summary (Finish); in a dry run (deps.Proc.DryRun) it only prints the
// plan on o.Out. Either way the gate's reach (analysis.PlanReach) is said
// before the first cell, and a gated plan that cannot reach an answer is
// refused first. dir is locked (results.LockRun) from before the first
// cell until Finish returns, the hooks included: a second abtest on the
// same directory is refused until the report is written.
func Run(ctx context.Context, deps *matrix.Deps, plan *results.Plan, dir string, o RunOptions) error {
	failed := o.Hooks.Failed
	if failed == nil {
		failed = func(err error) error {
			if errors.Is(err, matrix.ErrInterrupted) {
				fmt.Fprintf(o.Err, "resume with: abtest matrix --resume %s\n", dir)
			}
			return err
		}
	}
	if err := analysis.CheckMetrics(plan, o.Analysis); err != nil {
		return failed(err)
	}
	if o.Fail && !o.RunUnreachable {
		if err := analysis.CheckReach(plan, o.Analysis); err != nil {
			return failed(err)
		}
	}
	reach := analysis.PlanReach(plan, o.Analysis)
	if deps.Proc != nil && deps.Proc.DryRun {
		matrix.PrintPlan(o.Out, plan, dir, matrix.EstimateBuilds(ctx, deps, plan))
		for _, r := range reach {
			fmt.Fprintf(o.Out, "# %s\n", r)
		}
		if d := designLine(plan, dir, o.Analysis); d != "" {
			fmt.Fprintf(o.Out, "# %s\n", d)
		}
		return nil
	}
	if o.Record != nil {
		if err := o.Record(ctx, io.Discard); err != nil {
			return failed(err)
		}
	}
	held, err := results.LockRun(dir)
	if err != nil {
		return failed(err)
	}
	defer held.Release()
	if o.Hooks.Started != nil {
		o.Hooks.Started(plan, dir, reach)
	} else {
		repeats := plan.Options.Repeats
		if plan.Options.InstructionsOnly {
			repeats = max(1, plan.Options.InstrRepeats)
		}
		fmt.Fprintf(o.Out, "matrix: %s (%s, %s, %s), results in %s\n", text.Count(len(plan.Cells), "cell"),
			text.Count(len(plan.Commits), "commit"), text.Count(len(plan.Configs), "configuration"), text.Count(repeats, "repeat"), dir)
		for _, r := range reach {
			fmt.Fprintln(o.Out, r)
		}
		if o.Fail && !plan.Options.UntilDecided || plan.Options.Design != "" {
			if d := designLine(plan, dir, o.Analysis); d != "" {
				fmt.Fprintln(o.Out, d)
			}
		}
	}
	if err := matrix.RunLocked(ctx, deps, plan, held); err != nil {
		return failed(err)
	}
	return finish(ctx, plan, dir, o)
}

// Finish is what follows the matrix run of plan in dir: analyse, gate,
// record, write the report with the caller's sections, print the
// summary. A run that failed never ends in exit 0, gated or not: a
// report that cannot be made or written prints the median TPS instead
// and is exit 3, as is a store that cannot be recorded in, and a run
// in which every cell of some commit × configuration failed
// (everyCellFailed, whose error Hooks.Done sees as the verdict). Each
// is one line, beside which the gate's own verdict, if any, is said in
// the same line. The store's lines are said after the summary: the run
// is recorded before its report is written so that a section (the
// nightly's trend) can read it back. dir is locked (results.Lock) until
// Finish returns; a directory another run is writing is refused.
func Finish(ctx context.Context, plan *results.Plan, dir string, o RunOptions) error {
	release, err := results.Lock(dir)
	if err != nil {
		return err
	}
	defer release()
	return finish(ctx, plan, dir, o)
}

// finish is Finish in a directory the caller holds.
func finish(ctx context.Context, plan *results.Plan, dir string, o RunOptions) error {
	name := o.Name
	if name == "" {
		name = "abtest"
	}
	noReport := func(err error) error {
		if merr := Medians(o.Out, dir, plan); merr != nil {
			fmt.Fprintf(o.Err, "%s: %v\n", name, merr)
		}
		gate := ""
		if o.Fail {
			gate = ", so no gate"
		}
		return exitcode.Failure(fmt.Errorf("no report%s: %w (the cells are in %s)", gate, err, dir))
	}
	rep, err := analysis.AnalyzeDirs(o.Analysis, dir)
	if err != nil {
		return noReport(err)
	}
	verdict, waived, stop := o.gate(rep)
	if stop != nil {
		return stop
	}
	var stored bytes.Buffer
	var rerr error
	if o.Record != nil {
		rerr = o.Record(ctx, &stored, dir)
	}
	if o.Hooks.Sections != nil {
		if err := o.Hooks.Sections(ctx, rep, o.Record != nil && rerr == nil); err != nil {
			return exitcode.Failure(err)
		}
	}
	if err := Write(dir, rep); err != nil {
		return noReport(err)
	}
	if o.Hooks.Summary != nil {
		o.Hooks.Summary(rep)
	} else {
		Summary(o.Out, dir, rep)
		if waived {
			fmt.Fprintf(o.Err, "%s: could not answer: %s; exit 0 under --allow-unknown\n", name, strings.Join(rep.Unanswered, "; "))
		}
	}
	fmt.Fprint(o.Out, stored.String())
	if failure := everyCellFailed(dir); failure != nil {
		verdict = alongside(failure, verdict)
	}
	if o.Hooks.Done != nil {
		verdict = o.Hooks.Done(ctx, rep, verdict)
	}
	if rerr != nil {
		// The run is not where it should be: exit 3 whatever the gate
		// said, which is said in the same line.
		return alongside(exitcode.Failure(fmt.Errorf("store: %w", rerr)), verdict)
	}
	return verdict
}

// alongside is failure (its exit code) saying the gate's verdict too,
// when there is one.
func alongside(failure, verdict error) error {
	if verdict == nil || errors.Is(failure, verdict) {
		return failure
	}
	return fmt.Errorf("%w; and %v", failure, verdict)
}

// gate is the run's verdict: the caller's (Hooks.Gate), or the report's
// under Fail and AllowUnknown, with waived set when AllowUnknown waived
// an unknown answer.
func (o RunOptions) gate(rep *analysis.Report) (verdict error, waived bool, stop error) {
	if o.Hooks.Gate != nil {
		verdict, stop = o.Hooks.Gate(rep)
		return verdict, false, stop
	}
	verdict, waived = decide(rep, o.Fail, o.AllowUnknown)
	return verdict, waived, nil
}

// decide is Gate without its line.
func decide(rep *analysis.Report, fail, allowUnknown bool) (verdict error, waived bool) {
	if !fail {
		return nil, false
	}
	err := rep.Gate()
	if allowUnknown && errors.Is(err, analysis.ErrUnanswered) {
		return nil, true
	}
	return err, false
}

// Gate is the run's answer as an exit code when asked for one (fail):
// analysis.Report.Gate decides, so a candidate whose cells all failed
// exits 3, never 0. Under allowUnknown a primary whose answer is unknown
// (analysis.ErrUnanswered) exits 0 and says so on errOut in one line;
// a regression or an incomplete run is never waived (Report.Gate
// returns those first).
func Gate(rep *analysis.Report, fail, allowUnknown bool, errOut io.Writer) error {
	err, waived := decide(rep, fail, allowUnknown)
	if waived {
		fmt.Fprintf(errOut, "abtest: could not answer: %s; exit 0 under --allow-unknown\n", strings.Join(rep.Unanswered, "; "))
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

// BeforeAnalyze checks the report's format and output file before
// anything is read, and
// sets a soft memory limit: big result sets (10⁵ cells) are mostly
// garbage from JSON decoding, and the limit makes the GC keep the peak
// down.
func BeforeAnalyze(format, output string) error {
	if err := analysis.CheckOutput(format, output); err != nil {
		return err
	}
	debug.SetMemoryLimit(400 << 20)
	if os.Getenv("GOGC") == "" {
		// A collection at half the live heap again, not all of it:
		// the plan decoding beside the records (analysis.Load) left
		// more live at the collections while loading, and 10⁵ cells
		// peaked at up to 223 MB RSS against 172–181 before.
		debug.SetGCPercent(50)
	}
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
	rep, err := analysis.AnalyzeOutput(in, o, out, format, output, errOut)
	if err != nil {
		return err
	}
	// Once the report is written: a refused run stays one line.
	if output != "" && !analysis.OutputIsDir(output) {
		fmt.Fprintf(errOut, "abtest: deprecated: analyze -o %s: -o names a directory (DIR/report.md with DIR/plots/, report.txt, report.json or the bench files); a file is still written in this release\n", output)
	}
	return Gate(rep, f.Fail, f.AllowUnknown, errOut)
}

// OutputDir is where a new run's results go: dir, or a new
// abtest_TIME directory under resultsDir. A directory that already holds
// a plan is refused (resume it instead), one another run is writing is
// refused naming that run's pid, and one that is not the user's own or
// that others can write to is refused (results.CheckDir). The default
// name is never an existing directory: when abtest_TIME is taken (a
// second run in the same second, or a directory someone made under a
// guessable name) a random suffix is added, and the run makes the
// directory itself (results.LockRun) or refuses one made meanwhile.
func OutputDir(plan *results.Plan, dir, resultsDir string) (string, error) {
	if dir == "" {
		base := filepath.Join(resultsDir, "abtest_"+plan.Created.Format("20060102T150405Z"))
		dir = base
		for i := 0; exists(dir); i++ {
			if i == 100 {
				return "", exitcode.Failure(fmt.Errorf("no free results directory name like %s", base))
			}
			dir = base + "_" + rand.Text()[:8]
		}
		return dir, nil
	}
	if pid, held := results.Holder(dir); held {
		return "", exitcode.BadInputf("-o %s: %w: another abtest (pid %s) is writing it; wait for it or use another -o", dir, results.ErrLocked, pid)
	}
	if _, err := os.Stat(filepath.Join(dir, results.PlanFile)); err == nil {
		return "", exitcode.BadInputf("-o %s already holds results; use --resume %s, or another -o", dir, dir)
	}
	if exists(dir) {
		if err := results.CheckDir(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
