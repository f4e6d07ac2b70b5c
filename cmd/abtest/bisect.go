package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

func bisectCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "bisect",
		Usage: "find the first commit that changed a metric, by binary search over first-parent history",
		UsageText: `abtest bisect --good REF --bad REF [-w WORKLOAD] [-c CLIENTS] [-C CPUS] [--set GUC=V]… [--metric tps]
              [--threshold PCT] [-r REPEATS] [--max-repeats N] [-m N] [-d S] [-M PROTO] [-b TYPE] [-o DIR] [-n]

Every step runs the step's commit interleaved with good and bad (one
configuration, -r repeats) and calls it like-good or like-bad with the
analysis' statistics; an inconclusive step is repeated with twice the
repeats up to --max-repeats, then the bisect stops and reports the range.
State is kept in DIR/bisect.json: run the same command again to resume.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "good", Usage: "a `REF` without the change"},
			&cli.StringFlag{Name: "bad", Usage: "a `REF` with it"},
			&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1", Usage: "the `WORKLOAD`"},
			&cli.IntFlag{Name: "clients", Aliases: []string{"c"}, Value: 64, Usage: "`CLIENTS`"},
			&cli.IntFlag{Name: "cpus", Aliases: []string{"C"}, Usage: "server `CPUS` (default: not pinned)"},
			&cli.StringSliceFlag{Name: "set", Usage: "server setting `GUC=VALUE` (repeatable)"},
			&cli.StringFlag{Name: "metric", Value: "tps", Usage: "the `METRIC` that changed"},
			&cli.FloatFlag{Name: "threshold", Usage: "minimum change in `PCT` (default: the metric's own)"},
			&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: 5, Usage: "`N` repeats per step (5 is the least for p < 0.01)"},
			&cli.IntFlag{Name: "max-repeats", Value: 20, Usage: "give up an inconclusive step after `N` repeats"},
			&cli.IntFlag{Name: "pgss-max", Aliases: []string{"m"}, Value: 5000, Usage: "pg_stat_statements.max `N`"},
			&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: 10, Usage: "`SECONDS` per cell"},
			&cli.IntFlag{Name: "warmup", Value: 2, Usage: "warm-up `SECONDS`"},
			&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "`PROTOCOL`"},
			&cli.StringFlag{Name: "build", Aliases: []string{"b"}, Value: "release", Usage: "build `TYPE`"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "state and results `DIR` (default: $BENCH_RESULTS_DIR/bisect_GOOD_BAD)"},
			sourceFlag(),
			runAsFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runBisect(ctx, cmd, env) },
	}
}

// bisectState is DIR/bisect.json.
type bisectState struct {
	Good    string       `json:"good"`
	Bad     string       `json:"bad"`
	Metric  string       `json:"metric"`
	Options []string     `json:"options"`
	Commits []bisectRev  `json:"commits"`
	Lo      int          `json:"lo"`
	Hi      int          `json:"hi"`
	Steps   []bisectStep `json:"steps"`
	// Result is the first bad commit's index, or -1.
	Result int    `json:"result"`
	Note   string `json:"note,omitempty"`
}

type bisectRev struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

type bisectStep struct {
	Index   int     `json:"index"`
	SHA     string  `json:"sha"`
	Repeats int     `json:"repeats"`
	Dir     string  `json:"dir"`
	Verdict string  `json:"verdict"` // like-good, like-bad, inconclusive
	Good    float64 `json:"good"`
	Step    float64 `json:"step"`
	Bad     float64 `json:"bad"`
	VsGood  string  `json:"vs_good"`
	VsBad   string  `json:"vs_bad"`
}

func runBisect(ctx context.Context, cmd *cli.Command, env *Env) error {
	if cmd.String("good") == "" || cmd.String("bad") == "" {
		return exitcode.BadInputf("bisect: --good REF and --bad REF are required")
	}
	metric := cmd.String("metric")
	def, ok := workload.Metrics.Get(metric)
	if !ok {
		return exitcode.BadInputf("--metric %q: unknown metric", metric)
	}
	if _, err := workload.ResolveList(cmd.String("workloads")); err != nil {
		return err
	}
	r0, rmax := int(cmd.Int("repeats")), int(cmd.Int("max-repeats"))
	if r0 < 2 || rmax < r0 {
		return exitcode.BadInputf("-r %d --max-repeats %d: want 2 ≤ -r ≤ --max-repeats", r0, rmax)
	}
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	wt := worktrees(cfg, runner(cmd, env))
	good, err := wt.Resolve(cmd.String("good"))
	if err != nil {
		return err
	}
	bad, err := wt.Resolve(cmd.String("bad"))
	if err != nil {
		return err
	}
	repo, err := wt.Repo()
	if err != nil {
		return err
	}
	revs, err := firstParents(repo.CommitObject, good.SHA, bad.SHA)
	if err != nil {
		return err
	}
	opts := []string{"-w", cmd.String("workloads"), "-c", strconv.Itoa(int(cmd.Int("clients"))), "-m", strconv.Itoa(int(cmd.Int("pgss-max"))),
		"-d", strconv.Itoa(int(cmd.Int("duration"))), "--warmup", strconv.Itoa(int(cmd.Int("warmup"))),
		"-M", cmd.String("protocol"), "-b", cmd.String("build")}
	if c := cmd.Int("cpus"); c > 0 {
		opts = append(opts, "-C", strconv.Itoa(int(c)))
	}
	for _, s := range cmd.StringSlice("set") {
		opts = append(opts, "--set", s)
	}
	if cmd.IsSet("run-as") {
		opts = append(opts, "--run-as", cmd.String("run-as"))
	}
	dir := cmd.String("output")
	if dir == "" {
		dir = filepath.Join(cfg.ResultsDir, "bisect_"+good.SHA[:8]+"_"+bad.SHA[:8])
	}
	steps := int(math.Ceil(math.Log2(float64(len(revs) - 1))))
	if cmd.Bool("dry-run") {
		fmt.Fprintf(env.Stdout, "# bisect %s (good) .. %s (bad): %d first-parent commits, at most %d steps of %d cells (good, step, bad × %d repeats), metric %s; state in %s\n",
			good.SHA[:12], bad.SHA[:12], len(revs)-1, steps, 3*r0, r0, metric, dir)
		for i, r := range revs {
			fmt.Fprintf(env.Stdout, "%3d %s %s\n", i, r.SHA[:12], r.Subject)
		}
		return nil
	}
	st := &bisectState{Good: good.SHA, Bad: bad.SHA, Metric: metric, Options: opts, Commits: revs, Lo: 0, Hi: len(revs) - 1, Result: -1}
	statePath := filepath.Join(dir, "bisect.json")
	if data, err := os.ReadFile(statePath); err == nil {
		var prev bisectState
		if json.Unmarshal(data, &prev) == nil {
			if prev.Good != st.Good || prev.Bad != st.Bad || prev.Metric != metric || strings.Join(prev.Options, " ") != strings.Join(opts, " ") {
				return exitcode.BadInputf("-o %s holds another bisect (%s..%s, %s %s); use another -o", dir, prev.Good[:12], prev.Bad[:12], prev.Metric, strings.Join(prev.Options, " "))
			}
			st = &prev
			fmt.Fprintf(env.Stdout, "bisect: resuming from %s (%d steps done, range %d..%d)\n", statePath, len(st.Steps), st.Lo, st.Hi)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	save := func() error {
		data, _ := json.MarshalIndent(st, "", "  ")
		tmp := statePath + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, statePath)
	}
	fmt.Fprintf(env.Stdout, "bisect: %d commits between %s (good) and %s (bad); about %d steps\n", len(revs)-1, good.SHA[:12], bad.SHA[:12], steps)
	th := def.ThresholdPct
	if cmd.IsSet("threshold") {
		th = cmd.Float("threshold")
	}
	for st.Result < 0 && st.Hi-st.Lo > 1 {
		mid := (st.Lo + st.Hi) / 2
		var step bisectStep
		for r := r0; ; r *= 2 {
			r = min(r, rmax)
			step, err = bisectRun(ctx, env, cmd.String("source"), st, mid, r, opts, dir, metric, th)
			if err != nil {
				_ = save()
				return err
			}
			st.Steps = append(st.Steps, step)
			if err := save(); err != nil {
				return exitcode.Failure(err)
			}
			fmt.Fprintf(env.Stdout, "step %d/%d: %s %s: %s (good %.4g, step %.4g, bad %.4g; vs good %s, vs bad %s; %d repeats)\n",
				len(st.Steps), steps, step.SHA[:12], st.Commits[mid].Subject, step.Verdict, step.Good, step.Step, step.Bad, step.VsGood, step.VsBad, r)
			if step.Verdict != "inconclusive" || r >= rmax {
				break
			}
		}
		switch step.Verdict {
		case "like-good":
			st.Lo = mid
		case "like-bad":
			st.Hi = mid
		default:
			st.Note = fmt.Sprintf("step %s stayed inconclusive at %d repeats: the change lies between %s and %s", step.SHA[:12], rmax, st.Commits[st.Lo].SHA[:12], st.Commits[st.Hi].SHA[:12])
			_ = save()
			printEvidence(env, st)
			return exitcode.Failure(errors.New("bisect: " + st.Note))
		}
	}
	st.Result = st.Hi
	if err := save(); err != nil {
		return exitcode.Failure(err)
	}
	printEvidence(env, st)
	c := st.Commits[st.Result]
	fmt.Fprintf(env.Stdout, "first bad commit: %s %s\n", c.SHA, c.Subject)
	return nil
}

// bisectRun runs one step: good, the step's commit and bad, interleaved.
func bisectRun(ctx context.Context, env *Env, source string, st *bisectState, mid, repeats int, opts []string, dir, metric string, th float64) (bisectStep, error) {
	sha := st.Commits[mid].SHA
	run := filepath.Join(dir, fmt.Sprintf("step-%s-r%d", sha[:8], repeats))
	s := bisectStep{Index: mid, SHA: sha, Repeats: repeats, Dir: run}
	args := []string{"abtest", "matrix", "-k", "good=" + st.Good + ",step=" + sha + ",bad=" + st.Bad, "-W", "b-%s", "-r", strconv.Itoa(repeats), "--quiet"}
	if source != "" {
		args = append(args, "--source", source)
	}
	args = append(args, opts...)
	if _, err := os.Stat(filepath.Join(run, "plan.json")); err == nil {
		args = []string{"abtest", "matrix", "--resume", run, "--quiet"}
	} else {
		args = append(args, "-o", run)
	}
	if err := newApp(env).Run(ctx, args); err != nil {
		return s, err
	}
	in, err := analysis.Load(run)
	if err != nil {
		return s, err
	}
	o := analysis.Options{Metrics: []string{metric}, Thresholds: map[string]float64{metric: th}}
	o.Baseline = "good"
	vsGood, err := analysis.Analyze(in, o)
	if err != nil {
		return s, err
	}
	o.Baseline = "bad"
	vsBad, err := analysis.Analyze(in, o)
	if err != nil {
		return s, err
	}
	pick := func(r *analysis.Report, commit string) (analysis.Stat, bool) {
		for _, row := range r.Rows {
			for _, x := range row.Stats {
				if x.Commit == commit {
					return x, true
				}
			}
		}
		return analysis.Stat{}, false
	}
	g, _ := pick(vsGood, "good")
	b, _ := pick(vsGood, "bad")
	sg, ok1 := pick(vsGood, "step")
	sb, ok2 := pick(vsBad, "step")
	if !ok1 || !ok2 {
		return s, exitcode.Failure(fmt.Errorf("bisect: no %s values in %s (did the cells fail? see its report)", metric, run))
	}
	s.Good, s.Bad, s.Step = g.Median, b.Median, sg.Median
	s.VsGood, s.VsBad = string(sg.Verdict), string(sb.Verdict)
	changed := func(v results.Verdict) bool {
		return v == results.Better || v == results.Worse || v == results.Higher || v == results.Lower
	}
	switch {
	case changed(sg.Verdict) && !changed(sb.Verdict):
		s.Verdict = "like-bad"
	case !changed(sg.Verdict) && changed(sb.Verdict):
		s.Verdict = "like-good"
	default:
		s.Verdict = "inconclusive"
	}
	return s, nil
}

// firstParents lists good and the first-parent commits after it up to bad,
// oldest first.
func firstParents(get func(plumbing.Hash) (*object.Commit, error), good, bad string) ([]bisectRev, error) {
	var chain []bisectRev
	h := plumbing.NewHash(bad)
	for i := 0; ; i++ {
		c, err := get(h)
		if err != nil {
			return nil, exitcode.Failure(err)
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		chain = append(chain, bisectRev{SHA: c.Hash.String(), Subject: strings.TrimSpace(subject)})
		if c.Hash.String() == good {
			break
		}
		if c.NumParents() == 0 || i > 100000 {
			return nil, exitcode.BadInputf("bisect: %s is not a first-parent ancestor of %s", good[:12], bad[:12])
		}
		h = c.ParentHashes[0]
	}
	if len(chain) < 2 {
		return nil, exitcode.BadInputf("bisect: good and bad are the same commit")
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, nil
}

func printEvidence(env *Env, st *bisectState) {
	fmt.Fprintf(env.Stdout, "\nevidence (%s, medians):\n", st.Metric)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "step\tcommit\tsubject\tgood\tstep\tbad\tvs good\tvs bad\tverdict\trepeats")
	for i, s := range st.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%.4g\t%.4g\t%.4g\t%s\t%s\t%s\t%d\n", i+1, s.SHA[:12], st.Commits[s.Index].Subject, s.Good, s.Step, s.Bad, s.VsGood, s.VsBad, s.Verdict, s.Repeats)
	}
	tw.Flush()
}
