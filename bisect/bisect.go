// Package bisect finds the first commit that changed a metric, by binary
// search over the first-parent history between a good and a bad commit.
//
// Every step runs a matrix of one configuration with three arms — good,
// the step's commit, bad — interleaved, and calls the step like-good or
// like-bad with the analysis' statistics; an inconclusive step is
// repeated with twice the repeats up to MaxRepeats, then the bisect stops
// and reports the range. State is kept in Dir/bisect.json; a bisect with
// the same Identity resumes from it.
package bisect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/pipeline"
	"github.com/pgabtest/abtest/results"
)

// Verdict is a step's answer.
type Verdict string

const (
	LikeGood     Verdict = "like-good"
	LikeBad      Verdict = "like-bad"
	Inconclusive Verdict = "inconclusive"
)

// Request is a bisection. Matrix is the template of every step: one
// workload and client count, and the durations, settings and build; its
// commits and repeats are the bisect's.
type Request struct {
	Good, Bad string
	Metric    string
	// Threshold is the minimum change in percent; zero means the metric's
	// own.
	Threshold  float64
	Repeats    int
	MaxRepeats int
	Matrix     matrix.Request
	// Reuse are prefixes of the user's install names whose builds a step
	// runs on when one holds its tree (bisect --reuse; ReuseFrom).
	Reuse []string
	// Dir holds bisect.json and one results directory per step.
	Dir string
}

// BuildPrefix names the steps' builds: b-<short sha>.
const BuildPrefix = "b-"

// ReuseFrom is the steps' build.Options.ReuseFrom: b-<sha> is bisect's
// name, no worktree's to switch to, so another b-<sha> install of the
// same source serves, and so does one of the names Reuse lists.
func (r *Request) ReuseFrom() []string {
	return append([]string{BuildPrefix}, r.Reuse...)
}

// Identity is what makes a bisect.json the state of this bisection: a
// resume with any other identity is refused.
type Identity struct {
	Good      string  `json:"good"`
	Bad       string  `json:"bad"`
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold_pct"`
	Config    string  `json:"config"`
	DurationS float64 `json:"duration_s"`
	WarmupS   float64 `json:"warmup_s"`
	Protocol  string  `json:"protocol"`
	Build     string  `json:"build"`
}

// State is Dir/bisect.json.
type State struct {
	Identity Identity `json:"identity"`
	Commits  []Rev    `json:"commits"`
	Lo       int      `json:"lo"`
	Hi       int      `json:"hi"`
	Steps    []Step   `json:"steps"`
	// Result is the first bad commit's index, or -1.
	Result int    `json:"result"`
	Note   string `json:"note,omitempty"`
}

// Rev is one first-parent commit.
type Rev struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// Step is one measured step.
type Step struct {
	Index   int     `json:"index"`
	SHA     string  `json:"sha"`
	Repeats int     `json:"repeats"`
	Dir     string  `json:"dir"`
	Verdict Verdict `json:"verdict"`
	Good    float64 `json:"good"`
	Step    float64 `json:"step"`
	Bad     float64 `json:"bad"`
	VsGood  string  `json:"vs_good"`
	VsBad   string  `json:"vs_bad"`
}

// Deps are the matrix's dependencies and where progress goes.
type Deps struct {
	Matrix *matrix.Deps
	Out    io.Writer
	// Err receives what Execute says besides its error (a store that
	// failed after the bisection did); nil discards it.
	Err io.Writer
	// Record stores the steps' results directories (Execute), saying so
	// on Out; nil stores nothing.
	Record pipeline.Recorder
}

// Check validates the request without touching anything.
func (r *Request) Check() error {
	if r.Good == "" || r.Bad == "" {
		return exitcode.BadInputf("bisect: --good REF and --bad REF are required")
	}
	def, ok := results.Builtin.Get(r.Metric)
	if !ok {
		return exitcode.BadInputf("--metric %q: unknown metric", r.Metric)
	}
	// An exact metric (instructions_per_tx) repeats to a few parts per
	// million: one repeat per step calls it; a noisy one needs two at
	// least for any test.
	least := 2
	if def.Tier == results.TierExact {
		least = 1
	}
	if r.Repeats < least || r.MaxRepeats < r.Repeats {
		return exitcode.BadInputf("-r %d --max-repeats %d: want %d ≤ -r ≤ --max-repeats", r.Repeats, r.MaxRepeats, least)
	}
	step := r.step("good", "step", "bad", r.Repeats)
	_, err := oneConfig(step)
	return err
}

// step is the matrix request of one step.
func (r *Request) step(good, sha, bad string, repeats int) matrix.Request {
	m := r.Matrix
	m.Commits = []matrix.Commit{{Label: "good", Ref: good}, {Label: "step", Ref: sha}, {Label: "bad", Ref: bad}}
	m.NameTemplate, m.Repeats, m.Order = BuildPrefix+"%s", repeats, matrix.ABBA
	if r.instructions() {
		// Only instruction cells: timing cells would cost time and say
		// nothing about this metric. Each runs the step's repeats, with
		// no confirmation run: good and bad differ by design (a
		// confirmation doubled every step's cells), and the next step
		// measures them again.
		m.Axes = maps.Clone(m.Axes)
		m.Axes["clients"] = []string{"1"}
		delete(m.Axes, "cpus")
		m.InstructionsOnly = true
		m.InstrRepeats, m.NoInstrConfirm = repeats, true
	}
	return m
}

// instructions says whether the metric is counted by instruction cells.
func (r *Request) instructions() bool {
	return r.Metric == results.MetricInstructionsPerTx || r.Metric == results.MetricInstructions
}

// threshold is the request's threshold, or the metric's own.
func (r *Request) threshold() float64 {
	if r.Threshold > 0 {
		return r.Threshold
	}
	def, _ := results.Builtin.Get(r.Metric)
	return def.ThresholdPct
}

// Identify resolves the request's refs into its identity.
func Identify(deps *Deps, r *Request) (Identity, error) {
	good, err := deps.Matrix.Worktrees.Resolve(r.Good)
	if err != nil {
		return Identity{}, err
	}
	bad, err := deps.Matrix.Worktrees.Resolve(r.Bad)
	if err != nil {
		return Identity{}, err
	}
	// The one configuration a step measures, as the matrix plans it.
	p, err := oneConfig(r.step(good.SHA, good.SHA, bad.SHA, r.Repeats))
	if err != nil {
		return Identity{}, err
	}
	return Identity{
		Good: good.SHA, Bad: bad.SHA, Metric: r.Metric, Threshold: r.threshold(), Config: p.Configs[0].ID(),
		DurationS: r.Matrix.Duration.Seconds(), WarmupS: r.Matrix.Warmup.Seconds(), Protocol: r.Matrix.Protocol, Build: string(r.Matrix.Build),
	}, nil
}

// Plan returns the bisect's identity and its first-parent commits, good
// first, and the most steps it can take: what -n prints.
func Plan(deps *Deps, r *Request) (Identity, []Rev, int, error) {
	if err := r.Check(); err != nil {
		return Identity{}, nil, 0, err
	}
	id, err := Identify(deps, r)
	if err != nil {
		return id, nil, 0, err
	}
	repo, err := deps.Matrix.Worktrees.Repo()
	if err != nil {
		return id, nil, 0, err
	}
	revs, err := firstParents(repo.CommitObject, id.Good, id.Bad)
	if err != nil {
		return id, nil, 0, err
	}
	return id, revs, int(math.Ceil(math.Log2(float64(len(revs) - 1)))), nil
}

// Run bisects, resuming from Dir/bisect.json when it holds the same
// identity, and returns the final state.
func Run(ctx context.Context, deps *Deps, r *Request) (*State, error) {
	id, revs, steps, err := Plan(deps, r)
	if err != nil {
		return nil, err
	}
	st, err := load(r.Dir, id, revs)
	if err != nil {
		return nil, err
	}
	if len(st.Steps) > 0 || st.Result >= 0 {
		fmt.Fprintf(deps.Out, "bisect: resuming from %s (%d steps done, range %d..%d)\n", statePath(r.Dir), len(st.Steps), st.Lo, st.Hi)
	}
	if err := safefile.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, exitcode.Failure(err)
	}
	fmt.Fprintf(deps.Out, "bisect: %d commits between %s (good) and %s (bad); about %d steps\n", len(revs)-1, text.Short(id.Good), text.Short(id.Bad), steps)
	for st.Result < 0 && st.Hi-st.Lo > 1 {
		mid := (st.Lo + st.Hi) / 2
		step, err := bisectStep(ctx, deps, r, st, mid, steps)
		if err != nil {
			return st, err
		}
		switch step.Verdict {
		case LikeGood:
			st.Lo = mid
		case LikeBad:
			st.Hi = mid
		default:
			st.Note = fmt.Sprintf("step %s stayed inconclusive at %d repeats: the change lies between %s and %s", text.Short(step.SHA), r.MaxRepeats, text.Short(st.Commits[st.Lo].SHA), text.Short(st.Commits[st.Hi].SHA))
			_ = save(r.Dir, st)
			PrintEvidence(deps.Out, st)
			return st, exitcode.Failure(errors.New("bisect: " + st.Note))
		}
	}
	st.Result = st.Hi
	if err := save(r.Dir, st); err != nil {
		return st, exitcode.Failure(err)
	}
	PrintEvidence(deps.Out, st)
	c := st.Commits[st.Result]
	fmt.Fprintf(deps.Out, "first bad commit: %s %s\n", c.SHA, c.Subject)
	return st, nil
}

// bisectStep measures commit mid, doubling the repeats while it is
// inconclusive, up to MaxRepeats.
func bisectStep(ctx context.Context, deps *Deps, r *Request, st *State, mid, steps int) (Step, error) {
	var step Step
	for n := r.Repeats; ; n *= 2 {
		n = min(n, r.MaxRepeats)
		var err error
		step, err = measure(ctx, deps, r, st, mid, n)
		if err != nil {
			_ = save(r.Dir, st)
			return step, err
		}
		st.Steps = append(st.Steps, step)
		if err := save(r.Dir, st); err != nil {
			return step, exitcode.Failure(err)
		}
		fmt.Fprintf(deps.Out, "step %d/%d: %s %s: %s (good %.4g, step %.4g, bad %.4g; vs good %s, vs bad %s; %d repeats)\n",
			len(st.Steps), steps, text.Short(step.SHA), st.Commits[mid].Subject, step.Verdict, step.Good, step.Step, step.Bad, step.VsGood, step.VsBad, n)
		if step.Verdict != Inconclusive || n >= r.MaxRepeats {
			return step, nil
		}
	}
}

func statePath(dir string) string { return filepath.Join(dir, "bisect.json") }

// load reads the state of the bisection id from dir, or starts one.
func load(dir string, id Identity, revs []Rev) (*State, error) {
	st := &State{Identity: id, Commits: revs, Hi: len(revs) - 1, Result: -1}
	data, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	var prev State
	if err := json.Unmarshal(data, &prev); err != nil {
		return nil, exitcode.BadInputf("-o %s: %s: %v; use another -o", dir, statePath(dir), err)
	}
	if prev.Identity != id {
		p := prev.Identity
		return nil, exitcode.BadInputf("-o %s holds another bisect (%s..%s, %s on %s, %gs); use another -o", dir, text.Short(p.Good), text.Short(p.Bad), p.Metric, p.Config, p.DurationS)
	}
	return &prev, nil
}

func save(dir string, st *State) error {
	return results.WriteJSON(dir, filepath.Base(statePath(dir)), st)
}

// measure runs one step through the pipeline: good, the step's commit
// and bad, interleaved, resuming the step's results directory when it
// exists; its report (against good) is written there, and the step's
// decision is the pipeline's last hook. The steps are recorded once the
// bisection ends (Execute).
func measure(ctx context.Context, deps *Deps, r *Request, st *State, mid, repeats int) (Step, error) {
	sha := st.Commits[mid].SHA
	dir := filepath.Join(r.Dir, fmt.Sprintf("step-%s-r%d", text.Short(sha), repeats))
	s := Step{Index: mid, SHA: sha, Repeats: repeats, Dir: dir}
	var plan *results.Plan
	var err error
	if _, serr := os.Stat(filepath.Join(dir, results.PlanFile)); serr == nil {
		plan, err = results.ReadPlan(dir)
	} else {
		plan, _, err = pipeline.Prepare(ctx, deps.Matrix, r.step(st.Identity.Good, sha, st.Identity.Bad, repeats), dir, "")
	}
	if err != nil {
		return s, err
	}
	judged := false
	o := pipeline.RunOptions{
		Analysis: stepOptions(r.Metric, r.threshold(), "good"), Out: deps.Out, Err: deps.Err,
		Hooks: pipeline.Hooks{
			Started: func(*results.Plan, string, []analysis.Reach) {},
			// Not matrix --resume: the same bisect command resumes.
			Failed:  func(err error) error { return err },
			Summary: func(*analysis.Report) {},
			Done: func(_ context.Context, vsGood *analysis.Report, _ error) error {
				judged = true
				s, err = judge(s, vsGood, r.Metric, r.threshold())
				return err
			},
		},
	}
	if o.Err == nil {
		o.Err = io.Discard
	}
	if err := pipeline.Run(ctx, deps.Matrix, plan, dir, o); err != nil || judged {
		return s, err
	}
	return s, exitcode.Failure(fmt.Errorf("bisect: no report of %s (see above)", dir))
}

// stepOptions are a step's analysis: the metric alone, against baseline.
func stepOptions(metric string, threshold float64, baseline string) analysis.Options {
	return analysis.Options{Metrics: []string{metric}, Thresholds: map[string]float64{metric: threshold}, Baseline: baseline}
}

// judge compares the step with good (vsGood, the step's report) and
// with bad.
func judge(s Step, vsGood *analysis.Report, metric string, threshold float64) (Step, error) {
	in, err := analysis.LoadSummaries(s.Dir)
	if err != nil {
		return s, err
	}
	vsBad, err := analysis.Analyze(in, stepOptions(metric, threshold, "bad"))
	if err != nil {
		return s, err
	}
	g, _ := pick(vsGood, "good")
	b, _ := pick(vsGood, "bad")
	sg, ok1 := pick(vsGood, "step")
	sb, ok2 := pick(vsBad, "step")
	if !ok1 || !ok2 {
		return s, exitcode.Failure(fmt.Errorf("bisect: no %s values in %s (did the cells fail? see its report)", metric, s.Dir))
	}
	s.Good, s.Bad, s.Step = g.Median, b.Median, sg.Median
	s.VsGood, s.VsBad = string(sg.Verdict), string(sb.Verdict)
	s.Verdict = verdict(sg.Verdict, sb.Verdict)
	return s, nil
}

// verdict: like-bad when the step differs from good and not from bad,
// like-good the other way round, else inconclusive.
func verdict(vsGood, vsBad results.Verdict) Verdict {
	changed := func(v results.Verdict) bool {
		return v == results.Better || v == results.Worse || v == results.Higher || v == results.Lower
	}
	switch {
	case changed(vsGood) && !changed(vsBad):
		return LikeBad
	case !changed(vsGood) && changed(vsBad):
		return LikeGood
	}
	return Inconclusive
}

func pick(r *analysis.Report, commit string) (analysis.Stat, bool) {
	for _, row := range r.Rows {
		for _, x := range row.Stats {
			if x.Commit == commit {
				return x, true
			}
		}
	}
	return analysis.Stat{}, false
}

// firstParents lists good and the first-parent commits after it up to bad,
// oldest first.
func firstParents(get func(plumbing.Hash) (*object.Commit, error), good, bad string) ([]Rev, error) {
	var chain []Rev
	h := plumbing.NewHash(bad)
	for i := 0; ; i++ {
		c, err := get(h)
		if err != nil {
			return nil, exitcode.Failure(err)
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		chain = append(chain, Rev{SHA: c.Hash.String(), Subject: strings.TrimSpace(subject)})
		if c.Hash.String() == good {
			break
		}
		if c.NumParents() == 0 || i > 100000 {
			return nil, exitcode.BadInputf("bisect: %s is not a first-parent ancestor of %s", text.Short(good), text.Short(bad))
		}
		h = c.ParentHashes[0]
	}
	if len(chain) < 2 {
		return nil, exitcode.BadInputf("bisect: good and bad are the same commit")
	}
	slices.Reverse(chain)
	return chain, nil
}

// PrintEvidence prints every step's medians and verdicts.
func PrintEvidence(w io.Writer, st *State) {
	fmt.Fprintf(w, "\nevidence (%s, medians):\n", st.Identity.Metric)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "step\tcommit\tsubject\tgood\tstep\tbad\tvs good\tvs bad\tverdict\trepeats")
	for i, s := range st.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.4g\t%.4g\t%.4g\t%s\t%s\t%s\t%d\n", i+1, text.Short(s.SHA), st.Commits[s.Index].Subject, s.Good, s.Step, s.Bad, s.VsGood, s.VsBad, s.Verdict, s.Repeats)
	}
	tw.Flush()
}
