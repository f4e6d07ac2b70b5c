// Package nightly is the unattended regression job: fetch the tracked
// branch, build its head, compare it with the baseline (the previous
// night's head, or a fixed ref) in a matrix run, gate the result, and keep
// a history, a trend and a bounded number of runs and builds.
//
// It builds a matrix.Request from the nightly configuration and runs it
// through pipeline, as the matrix command does, with its own
// verdict, history, trend section and summary line as the pipeline's
// hooks; nothing goes through the CLI.
//
// A night (Night) is defined here and nowhere else: a run the results
// store has under root/runs that ran a head (the store knows runs under
// a directory and their gates, not nights), written out as a line of
// history.jsonl; its date is the UTC day it started (day).
//
// The past nights come from the results store (Deps.Store): the job's
// nights are the stored runs whose results directories lie under
// root/runs, and the baseline, the "nothing new" check and the trend
// section are read from them, with the store's annotations (abtest
// annotate): a regression an annotation explains is shown as expected
// and not gated, and an annotated night starts a new baseline (see
// baselineOf). The store is the only source of the past: a night whose
// store cannot be opened, or has no night of this job while its runs
// directory holds analysed runs (a store created after the job started:
// abtest store import fills it), exits 3 in one line. history.jsonl is
// written every night, a night whose matrix failed included (the store
// never sees those), as the export that scripts and mail read; nothing
// reads it back. Jobs are told apart by their runs directory, so
// two jobs that share a PostgreSQL store need different roots. A dry run
// (-n) reads a store that exists and creates none.
package nightly

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/pipeline"
	"github.com/pgabtest/abtest/results"
)

// ErrRunning: another nightly holds the lock.
var ErrRunning = errors.New("nightly: already running")

// Options are the command's switches.
type Options struct {
	// NoFetch uses the remote-tracking branch as it is.
	NoFetch bool
	// Force runs even when the head has not changed since the last night.
	Force bool
	// DryRun prints the night's plan and changes nothing.
	DryRun bool
}

// Deps are what a night uses: the matrix's dependencies (built on the
// night's configuration) and where the summary goes.
type Deps struct {
	Matrix *matrix.Deps
	Out    io.Writer
	Err    io.Writer
	// Record, when set, stores the night's results directory in the
	// results database once its history line is written.
	Record pipeline.Recorder
	// Store is the results database the past nights are read from (a
	// postgres:// URL or a SQLite file, the one Record writes); empty
	// knows no past nights.
	Store string
}

// BuildPrefix names the nightly builds: n-<short sha>.
const BuildPrefix = "n-"

// ReuseFrom is the nights' build.Options.ReuseFrom: an n-<sha> install
// of the same source serves, and so does one the configuration's
// reuse_from names.
func ReuseFrom(nc *config.Nightly) []string {
	return append([]string{BuildPrefix}, nc.ReuseFrom...)
}

// Request is the matrix a night runs: head against baseline ("" on the
// first night: head alone, a noise run) with the configured axes, by the
// registry's nightly keys (results.Axes), pgss_max first among the
// settings as matrix's -m.
func Request(nc *config.Nightly, head, baseline string, seed int64) matrix.Request {
	m := nc.Matrix
	commits := []matrix.Commit{{Label: HeadLabel, Ref: head}}
	if baseline != "" {
		commits = append([]matrix.Commit{{Label: BaseLabel, Ref: baseline}}, commits...)
	}
	axes := map[string][]string{}
	for _, d := range results.Axes {
		if v, ok := m.Axes[d.TOML]; ok && d.TOML != "" {
			axes[d.Name] = v
		}
	}
	pgss := make([]string, len(m.PgssMax))
	for i, n := range m.PgssMax {
		pgss[i] = strconv.Itoa(n)
	}
	axes["settings"] = append([]string{results.PgssMax + "=" + strings.Join(pgss, ",")}, axes["settings"]...)
	return matrix.Request{
		Commits: commits, NameTemplate: BuildPrefix + "%s", Workloads: m.Workloads, Axes: axes,
		Repeats: m.Repeats, Duration: time.Duration(m.Duration) * time.Second, Warmup: time.Duration(m.Warmup) * time.Second,
		Protocol: "simple", Build: build.Type(m.Build), Order: matrix.ABBA, Seed: seed, Instructions: m.Instructions,
	}
}

// AxisKeys are nightly.toml's keys of the registry's axes, in [matrix].
func AxisKeys() []string {
	var keys []string
	for _, d := range results.Axes {
		if d.TOML != "" {
			keys = append(keys, d.TOML)
		}
	}
	return keys
}

// tip is the tracked branch's head.
type tip struct {
	sha, subject string
	repo         *git.Repository
}

// Run runs one night.
func Run(ctx context.Context, deps *Deps, nc *config.Nightly, o Options) error {
	if !o.DryRun {
		if err := safefile.MkdirAll(filepath.Join(nc.Root, "runs"), 0o755); err != nil {
			return exitcode.Failure(err)
		}
		unlock, err := Lock(nc.Root)
		if err != nil {
			return err
		}
		defer unlock()
	}
	head, err := fetch(ctx, deps, nc, o)
	if err != nil {
		if o.DryRun && exitcode.Code(err) == exitcode.Usage {
			printDesign(deps.Out, nc)
		}
		return err
	}
	p, err := readPast(ctx, deps.Store, nc, o.DryRun)
	if err != nil {
		return err
	}
	defer p.close()
	last := lastGood(p.nights)
	now := deps.Matrix.Clock()
	if last != nil && last.SHA == head.sha && !o.Force {
		fmt.Fprintf(deps.Out, "abtest nightly %s: %s/%s %s unchanged since %s; nothing to do (--force runs anyway)\n", day(now), nc.Remote, nc.Branch, text.Short(head.sha), last.Date)
		return nil
	}
	baseline, err := baselineOf(nc, head, p)
	if err != nil {
		return exitcode.BadInput(err)
	}
	n := &night{deps: deps, nc: nc, head: head, baseline: baseline, past: p, histPath: filepath.Join(nc.Root, "history.jsonl"), now: now,
		dir: filepath.Join(nc.Root, "runs", now.UTC().Format("20060102T150405Z")+"-"+text.Short(head.sha))}
	return n.run(ctx, o.DryRun)
}

// Lock takes root/.nightly.lock, so that nights never overlap.
func Lock(root string) (func(), error) {
	path := filepath.Join(root, ".nightly.lock")
	release, holder, err := flock.Try(path)
	if errors.Is(err, flock.ErrHeld) {
		return nil, exitcode.Failure(fmt.Errorf("%w (pid %s holds %s)", ErrRunning, holder, path))
	}
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	return release, nil
}

// fetch updates the remote-tracking branch and returns its head.
func fetch(ctx context.Context, deps *Deps, nc *config.Nightly, o Options) (tip, error) {
	repo, err := git.PlainOpenWithOptions(nc.SourceDir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return tip{}, exitcode.BadInputf("nightly: source_dir %s is not a git repository: %v", nc.SourceDir, err)
	}
	if !o.NoFetch {
		if o.DryRun {
			fmt.Fprintf(deps.Out, "# fetch %s in %s\n", nc.Remote, nc.SourceDir)
		} else if err := repo.FetchContext(ctx, &git.FetchOptions{RemoteName: nc.Remote}); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return tip{}, exitcode.Failure(fmt.Errorf("nightly: fetching %s: %w", nc.Remote, err))
		}
	}
	ref, err := repo.Reference(plumbing.NewRemoteReferenceName(nc.Remote, nc.Branch), true)
	if err != nil {
		return tip{}, exitcode.BadInputf("nightly: %s/%s not found in %s: %v", nc.Remote, nc.Branch, nc.SourceDir, err)
	}
	t := tip{sha: ref.Hash().String(), repo: repo}
	if c, err := repo.CommitObject(ref.Hash()); err == nil {
		t.subject, _, _ = strings.Cut(c.Message, "\n")
	}
	return t, nil
}

// lastGood is the last night that did not fail: a regression or an
// unanswered night is a baseline (its cells are all there).
func lastGood(history []Night) *Night {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Status != results.GateFailed {
			return &history[i]
		}
	}
	return nil
}

// night is one night's run.
type night struct {
	deps     *Deps
	nc       *config.Nightly
	head     tip
	baseline string
	past     *past
	histPath string
	now      time.Time
	dir      string
	// nt is the night's history line, once gated.
	nt Night
}

func (n *night) run(ctx context.Context, dry bool) error {
	what := "first night: " + text.Short(n.head.sha) + " alone (noise run)"
	if n.baseline != "" {
		what = fmt.Sprintf("%s vs %s", text.Short(n.head.sha), text.Short(n.baseline))
	}
	fmt.Fprintf(n.deps.Out, "abtest nightly: %s/%s %s (%s)\n", n.nc.Remote, n.nc.Branch, what, n.head.subject)
	plan, _, err := pipeline.Prepare(ctx, n.deps.Matrix, Request(n.nc, n.head.sha, n.baseline, n.now.UnixNano()%1_000_000_007), n.dir, "")
	if err != nil {
		return n.failed(err, dry)
	}
	return pipeline.Run(ctx, n.deps.Matrix, plan, n.dir, n.options(dry))
}

// options are the pipeline of a night: always gated (a design whose
// gate cannot answer would run in full every night and end in exit 3,
// so it is refused before it runs, unless allow_unknown), with the
// night's own verdict, history, trend and summary line as its hooks.
func (n *night) options(dry bool) pipeline.RunOptions {
	return pipeline.RunOptions{
		Analysis: gateOptions(n.nc), Fail: true, AllowUnknown: n.nc.Gate.AllowUnknown, RunUnreachable: n.nc.Gate.AllowUnknown,
		Record: n.deps.Record, Out: n.deps.Out, Err: n.deps.Err, Name: "abtest nightly",
		Hooks: pipeline.Hooks{
			Started: func(*results.Plan, string, []analysis.Reach) {},
			Failed:  func(err error) error { return n.failed(err, dry) },
			Gate:    n.gate, Sections: n.trend, Summary: func(*analysis.Report) {}, Done: n.done,
		},
	}
}

// failed is a night whose plan was refused or whose matrix failed: a
// failed line in the history (never a baseline) and the summary line,
// unless a dry run.
func (n *night) failed(err error, dry bool) error {
	if !dry {
		_ = AppendHistory(n.histPath, n.entry(results.GateFailed))
		fmt.Fprintf(n.deps.Out, "abtest nightly %s: %s FAILED: %s\n", day(n.now), text.Short(n.head.sha), err)
	}
	if exitcode.Code(err) == exitcode.Usage {
		return err
	}
	return exitcode.Failure(err)
}

func (n *night) entry(status results.GateStatus) Night {
	return Night{Date: day(n.now), SHA: n.head.sha, Subject: n.head.subject, Baseline: n.baseline, Run: n.dir, Status: status}
}

// judge is the rest of the night once its matrix ran (pipeline.Finish):
// its verdict (analysis.Report.Gate: a regression is exit 1, a run that
// could not answer, such as a head whose cells all failed, exit 3 and a
// failed night, never ok; a primary whose answer is unknown exit 3, or 0
// under allow_unknown, and an unanswered night, never ok) and history
// line, the night stored, the report written with its trend, the
// retention and the summary line.
func (n *night) judge(ctx context.Context) error {
	plan, err := results.ReadPlan(n.dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	return pipeline.Finish(ctx, plan, n.dir, n.options(false))
}

// gate is the night's verdict: the report's gate with the regressions an
// annotation explains set apart as expected; its history line is
// appended before the night is stored.
func (n *night) gate(rep *analysis.Report) (verdict, stop error) {
	n.nt, verdict = n.verdict(rep)
	if err := AppendHistory(n.histPath, n.nt); err != nil {
		return nil, exitcode.Failure(err)
	}
	return verdict, nil
}

// verdict is the night's history line and verdict: the report's gate
// with the regressions an annotation explains set apart as expected.
func (n *night) verdict(rep *analysis.Report) (Night, error) {
	nt := n.entry(results.GateOK)
	nt.Medians = medians(rep, HeadLabel)
	gated := *rep
	gated.Regressions, nt.Expected = n.expected(rep.Regressions)
	verdict := gated.Gate()
	// A failed night is not a baseline for the next (lastGood skips it);
	// an unanswered one is: its cells are all there.
	nt.Status = analysis.GateStatus(verdict)
	if nt.Status == results.GateRegression {
		for _, c := range gated.Regressions {
			nt.Regressions = append(nt.Regressions, c.Line())
		}
	}
	return nt, verdict
}

// trend is the report's trend section, from the store when the night
// read its past there and is stored (the pipeline records the night
// before it writes the report, so the store's trend has it); none
// otherwise.
func (n *night) trend(ctx context.Context, rep *analysis.Report, stored bool) error {
	trends, nights, err := n.trends(ctx, stored)
	if err != nil || trends == nil {
		return err
	}
	rep.Trend = &analysis.TrendSection{Trends: trends, Nights: nights}
	return nil
}

// done ends a night whose report is written: the retention, the old
// builds dropped, and the summary line last (cron mails and `tail -n 1`
// read it).
func (n *night) done(ctx context.Context, rep *analysis.Report, verdict error) error {
	if err := Retain(filepath.Join(n.nc.Root, "runs"), n.nc.Keep); err != nil {
		return exitcode.Failure(err)
	}
	if err := DropOldBuilds(ctx, n.deps.Matrix, []string{n.baseline, n.head.sha}); err != nil {
		fmt.Fprintf(n.deps.Err, "abtest nightly: cleaning old builds: %v\n", err)
	}
	return n.summary(n.nt, verdict, rep.Unanswered)
}

// summary prints the one line for mail or chat and returns the gate's
// verdict (exit 1 for a regression, 3 when the run could not answer:
// cells missing, or unanswered, the primary's answers that were unknown;
// the latter is exit 0 under allow_unknown, the line still saying so).
func (n *night) summary(nt Night, verdict error, unanswered []string) error {
	s := fmt.Sprintf("abtest nightly %s: %s/%s %s %q", day(n.now), n.nc.Remote, n.nc.Branch, text.Short(n.head.sha), n.head.subject)
	if n.baseline != "" {
		s += " vs " + text.Short(n.baseline)
	}
	expected := ""
	if len(nt.Expected) > 0 {
		expected = "; expected: " + strings.Join(nt.Expected, "; ")
	}
	switch {
	case len(nt.Regressions) > 0:
		s += fmt.Sprintf(": %d REGRESSION(S): %s", len(nt.Regressions), strings.Join(nt.Regressions, "; "))
	case nt.Status == results.GateUnanswered:
		s += ": COULD NOT ANSWER: " + strings.Join(unanswered, "; ") + expected
		if n.nc.Gate.AllowUnknown {
			s += " (exit 0 under allow_unknown)"
			verdict = nil
		}
	case verdict == nil && expected != "":
		s += ": ok" + expected
	case verdict != nil:
		s += ": INCOMPLETE (the run could not answer; see the report)"
	default:
		s += ": ok"
	}
	rep := filepath.Join(n.dir, "report.md")
	fmt.Fprintln(n.deps.Out, s+" | report: "+rep)
	if verdict != nil {
		// The wrapped error keeps its exit code.
		return fmt.Errorf("%w (report: %s)", verdict, rep)
	}
	return nil
}

// Retain keeps the newest keep result directories (names sort by time).
func Retain(runs string, keep int) error {
	ents, err := os.ReadDir(runs)
	if err != nil {
		return err
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	slices.Sort(dirs)
	for len(dirs) > keep {
		p := filepath.Join(runs, dirs[0])
		if err := safepath.CheckRemovable(runs, p); err == nil {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
		dirs = dirs[1:]
	}
	return nil
}

// DropOldBuilds removes the n-<sha> worktrees, installs and clusters (the
// matrix's m-n-<sha> too) of
// shas other than keep: every night adds one, and only the last is the
// next baseline.
func DropOldBuilds(ctx context.Context, deps *matrix.Deps, keep []string) error {
	want := map[string]bool{}
	for _, s := range keep {
		if s != "" {
			want[BuildPrefix+text.Short(s)] = true
		}
	}
	ents, _ := os.ReadDir(deps.Worktrees.Root)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, BuildPrefix) || want[name] {
			continue
		}
		for _, c := range []string{name, matrix.ClusterName(name)} {
			if err := deps.Clusters.Remove(ctx, c); err != nil {
				return err
			}
		}
		dir := filepath.Join(deps.Builder.InstallRoot, name)
		if err := safepath.CheckRemovable(deps.Builder.InstallRoot, dir); err != nil {
			return exitcode.BadInput(fmt.Errorf("removing install %s: %w", name, err))
		}
		if err := deps.Proc.RemoveAll(dir); err != nil {
			return exitcode.Failure(err)
		}
		if err := deps.Worktrees.Remove(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// Load reads the nightly configuration at path (required) and the
// abtest configuration it makes, under the environment and the flags'
// overrides; anything wrong is a usage error.
func Load(path, home string, getenv func(string) string, ov []config.Override) (*config.Nightly, *config.Loaded, error) {
	if path == "" {
		return nil, nil, exitcode.BadInputf("nightly: --config nightly.toml is required (see nightly.example.toml)")
	}
	nc, err := config.LoadNightly(path, home, AxisKeys()...)
	if err != nil {
		return nil, nil, exitcode.BadInput(err)
	}
	if err := build.CheckReusePrefixes(nc.ReuseFrom); err != nil {
		return nil, nil, fmt.Errorf("nightly config %s: reuse_from: %w", path, err)
	}
	// The nights' matrix, checked as matrix checks its flags (rates,
	// axes, instruction cells beside rates, size), now and not at night.
	req := Request(nc, "base", "head", 0)
	if _, err := req.Check(); err != nil {
		return nil, nil, exitcode.BadInputf("nightly config %s: [matrix]: %v", path, err)
	}
	cfg, err := nc.Loaded(getenv, ov)
	return nc, cfg, exitcode.BadInput(err)
}

// gateOptions are the analysis options of a night's gate: tonight's
// report and the store's judgement of past nights use the same.
func gateOptions(nc *config.Nightly) analysis.Options {
	return analysis.Options{Alpha: nc.Gate.Alpha, Thresholds: nc.Gate.Thresholds}
}
