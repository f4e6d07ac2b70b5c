package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/results"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/doctor"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/workload"
)

// presetFull is the bash harness's full suite.
var presetFull = struct {
	workloads, clients, cpus, pgssMax string
	duration, repeats                 int
}{"select1,churn,slow_churn,within_max", "1,16,64,128", "2,4,8", "1000,5000", 30, 2}

func matrixFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "commits", Aliases: []string{"k"}, Usage: "`SPEC`[,SPEC…]: REF, LABEL=REF, LABEL=REF+PATCH[+PATCH…] or LABEL=install:DIR; the first is the baseline"},
		&cli.StringFlag{Name: "clients", Aliases: []string{"c"}, Value: "64", Usage: "client counts `LIST`"},
		&cli.StringFlag{Name: "cpus", Aliases: []string{"C"}, Usage: "server CPU counts `LIST` (pgbench gets the other CPUs); default: not pinned"},
		&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1,churn", Usage: "workloads `LIST`: select1, churn, slow_churn, within_max, file:PATH"},
		&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: 30, Usage: "measured `SECONDS` per cell"},
		&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: 3, Usage: "`N` repeats of every cell"},
		&cli.StringFlag{Name: "pgss-max", Aliases: []string{"m"}, Value: "5000", Usage: "pg_stat_statements.max values `LIST`"},
		&cli.StringSliceFlag{Name: "set", Usage: "settings axis `GUC=V1,V2` (repeatable; one value is a fixed setting)"},
		&cli.StringFlag{Name: "build", Aliases: []string{"b"}, Value: "release", Usage: "build `TYPE`: release, debug, debug_noassert"},
		&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "`PROTOCOL`: simple, extended, prepared"},
		&cli.IntFlag{Name: "sleep", Aliases: []string{"S"}, Usage: "think time `MS` per transaction"},
		&cli.IntFlag{Name: "warmup", Value: 5, Usage: "warm-up `SECONDS` before each measurement"},
		&cli.StringFlag{Name: "order", Value: "abba", Usage: "commit order within a block: abba or random"},
		&cli.IntFlag{Name: "seed", Usage: "`N` for --order random (default: from the clock, recorded in plan.json)"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "results `DIR` (default: $BENCH_RESULTS_DIR/abtest_<time>)"},
		&cli.StringFlag{Name: "resume", Usage: "run the missing cells of the results `DIR`"},
		&cli.StringFlag{Name: "shard", Usage: "run shard `I/N` of the configurations"},
		&cli.StringFlag{Name: "preset", Usage: "`NAME` of a preset suite: full (the bash harness's full suite)"},
		&cli.StringFlag{Name: "name-template", Aliases: []string{"W"}, Value: "%c", Usage: "worktree/build/cluster name `TEMPLATE`: %c the label, %s the short sha"},
		&cli.BoolFlag{Name: "perf", Usage: "record a CPU profile in the middle of every cell (perf → pprof)"},
		&cli.IntFlag{Name: "perf-window", Value: 10, Usage: "`SECONDS` each --perf profile covers (at most -d)"},
		&cli.BoolFlag{Name: "quiet", Usage: "print only errors and the result (for cron)"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		&cli.DurationFlag{Name: "sample-every", Value: 5 * time.Second, Usage: "live sampler `INTERVAL`"},
		sourceFlag(),
		runAsFlag(),
	}
}

func matrixCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "matrix",
		Usage: "A/B benchmark: commits × workloads × clients × CPUs × settings, interleaved and resumable",
		UsageText: `abtest matrix -k SPEC[,SPEC…] [-c LIST] [-C LIST] [-w LIST] [-d S] [-r N] [-m LIST] [--set GUC=V1,V2]…
              [-b TYPE] [-M PROTO] [-S MS] [--warmup S] [--order abba|random] [--seed N] [-o DIR]
              [--resume DIR] [--shard I/N] [--preset full] [-n]

Example: abtest matrix -k base=master,patch=master+fix.patch -c 16,64 -w select1,churn -r 3`,
		OnUsageError: usageError,
		Flags:        matrixFlags(),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runMatrix(ctx, cmd, env)
		},
	}
}

func splitInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, exitcode.BadInputf("%s %q: want a comma-separated list of positive numbers", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// matrixOptions turns the flags into plan options with resolved commits.
func matrixOptions(cmd *cli.Command, cfg *config.Loaded, run *proc.Runner, env *Env) (matrix.Options, error) {
	var o matrix.Options
	get := func(name, preset string) string {
		if cmd.String("preset") == "full" && !cmd.IsSet(name) {
			return preset
		}
		return cmd.String(name)
	}
	switch cmd.String("preset") {
	case "", "full":
	default:
		return o, exitcode.BadInputf("--preset %q: the preset is full", cmd.String("preset"))
	}
	var err error
	if o.Workloads, err = workloadNames(get("workloads", presetFull.workloads)); err != nil {
		return o, err
	}
	if o.Clients, err = splitInts("-c", get("clients", presetFull.clients)); err != nil {
		return o, err
	}
	online, _ := cluster.OnlineCPUs()
	if cpus := get("cpus", presetFull.cpus); cpus != "" {
		list, err := splitInts("-C", cpus)
		if err != nil {
			return o, err
		}
		for _, n := range list {
			if n > len(online) {
				if cmd.String("preset") == "full" && !cmd.IsSet("cpus") {
					continue // the preset's larger counts, on a smaller host
				}
				return o, exitcode.BadInputf("-C %d: this host has %d CPUs online", n, len(online))
			}
			o.CPUs = append(o.CPUs, n)
		}
	}
	o.Repeats = int(cmd.Int("repeats"))
	o.Duration = time.Duration(cmd.Int("duration")) * time.Second
	if cmd.String("preset") == "full" {
		if !cmd.IsSet("repeats") {
			o.Repeats = presetFull.repeats
		}
		if !cmd.IsSet("duration") {
			o.Duration = time.Duration(presetFull.duration) * time.Second
		}
	}
	if o.Duration < time.Second {
		return o, exitcode.BadInputf("-d %d: want at least 1 second", cmd.Int("duration"))
	}
	o.Warmup = time.Duration(cmd.Int("warmup")) * time.Second
	o.Perf = cmd.Bool("perf")
	if o.Perf {
		o.PerfWindow = min(time.Duration(cmd.Int("perf-window"))*time.Second, o.Duration)
	}
	o.Protocol, o.SleepMS, o.Order = cmd.String("protocol"), int(cmd.Int("sleep")), cmd.String("order")
	o.Seed = int64(cmd.Int("seed"))
	if !cmd.IsSet("seed") {
		o.Seed = time.Now().UnixNano() % 1_000_000_007
	}
	bt, err := build.ParseType(cmd.String("build"))
	if err != nil {
		return o, err
	}
	o.BuildType = string(bt)
	if o.Shard, err = matrix.ParseShard(cmd.String("shard")); err != nil {
		return o, err
	}
	pgss, err := splitInts("-m", get("pgss-max", presetFull.pgssMax))
	if err != nil {
		return o, err
	}
	ax := results.Setting{Name: "pg_stat_statements.max"}
	for _, n := range pgss {
		if n < 100 {
			return o, exitcode.BadInputf("-m %d: pg_stat_statements.max must be at least 100", n)
		}
		ax.Values = append(ax.Values, strconv.Itoa(n))
	}
	o.Settings = append(o.Settings, ax)
	for _, s := range cmd.StringSlice("set") {
		name, vals, ok := strings.Cut(s, "=")
		if _, err := cluster.ParseSetting(s); !ok || err != nil || vals == "" {
			return o, exitcode.BadInputf("--set %q: want GUC=V1[,V2…]", s)
		}
		st, _ := cluster.ParseSetting(name + "=x")
		o.Settings = append(o.Settings, results.Setting{Name: st.Name, Values: strings.Split(vals, ",")})
	}
	// Check every workload against the protocol before anything runs.
	for _, w := range o.Workloads {
		wl, _ := workload.Resolve(w)
		s := workload.Spec{Workload: wl, Protocol: o.Protocol, Clients: 1}
		if err := s.Check(); err != nil {
			return o, err
		}
	}

	specs := cmd.String("commits")
	if specs == "" {
		return o, exitcode.BadInputf("matrix: -k SPEC[,SPEC…] is required, e.g. -k base,patch")
	}
	wt := worktrees(cfg, run)
	tmpl := cmd.String("name-template")
	builds := map[string]string{} // identity → build name
	for _, s := range strings.Split(specs, ",") {
		c, err := matrix.ParseSpec(strings.TrimSpace(s))
		if err != nil {
			return o, err
		}
		if c.Install == "" {
			rc, err := wt.Resolve(c.Ref)
			if err != nil {
				return o, err
			}
			c.SHA = rc.SHA
		}
		id := c.SHA + "|" + c.Install
		for i, p := range c.Patches {
			data, err := os.ReadFile(p.File)
			if err != nil {
				return o, exitcode.BadInputf("-k %s: %v", s, err)
			}
			sum := sha256.Sum256(data)
			c.Patches[i].SHA256 = hex.EncodeToString(sum[:])
			id += "|" + c.Patches[i].SHA256
		}
		if name, ok := builds[id]; ok {
			c.Build = name // an A/A arm: same binaries
		} else {
			c.Build = strings.NewReplacer("%c", c.Label, "%s", shortSHA(c.SHA)).Replace(tmpl)
			if _, err := wt.Dir(c.Build); err != nil {
				return o, exitcode.BadInputf("-W %q gives %q: %v", tmpl, c.Build, err)
			}
			builds[id] = c.Build
		}
		o.Commits = append(o.Commits, c)
	}
	if len(o.Commits) == 1 && !cmd.IsSet("repeats") {
		return o, exitcode.BadInputf("-k %s: one commit has nothing to compare with; give two (-k base,patch), or pass -r N for a noise run of it alone", o.Commits[0].Label)
	}
	return o, nil
}

// workloadNames checks a -w list and returns its items as typed (file:
// items keep their path, so the cells can resolve them again).
func workloadNames(list string) ([]string, error) {
	if _, err := workload.ResolveList(list); err != nil {
		return nil, err
	}
	var names []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			names = append(names, item)
		}
	}
	return names, nil
}

func shortSHA(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func runMatrix(ctx context.Context, cmd *cli.Command, env *Env) error {
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	run := runner(cmd, env)
	var plan *results.Plan
	dir := cmd.String("output")
	if resume := cmd.String("resume"); resume != "" {
		stored, err := results.ReadPlan(resume)
		if err != nil {
			return err
		}
		plan, dir = stored, resume
		if cmd.IsSet("commits") {
			o, err := matrixOptions(cmd, cfg, run, env)
			if err != nil {
				return err
			}
			o.Seed = stored.Options.Seed
			fresh, err := matrix.NewPlan(o)
			if err != nil {
				return err
			}
			if d := results.Diff(stored, fresh); len(d) > 0 {
				return exitcode.BadInputf("--resume %s: the plan changed (%s); run without the other flags to resume it as it was, or use a new -o", resume, strings.Join(d, "; "))
			}
		}
	} else {
		o, err := matrixOptions(cmd, cfg, run, env)
		if err != nil {
			return err
		}
		if plan, err = matrix.NewPlan(o); err != nil {
			return err
		}
		plan.Host = host.Read("/")
		plan.Doctor = doctor.Check(doctor.Live(cfg.RunAs))
		plan.AbtestVersion = version
		plan.Created = time.Now().UTC()
		if dir == "" {
			dir = filepath.Join(cfg.ResultsDir, "abtest_"+plan.Created.Format("20060102T150405Z"))
		}
		if _, err := os.Stat(filepath.Join(dir, results.PlanFile)); err == nil {
			return exitcode.BadInputf("-o %s already holds results; use --resume %s, or another -o", dir, dir)
		}
	}
	if run.DryRun {
		printPlan(env.Stdout, plan, dir)
		return nil
	}
	cm, err := clusters(cfg, run, env)
	if err != nil {
		return err
	}
	cm.Log = nil
	bo := build.Options{Type: build.Type(plan.Options.BuildType), NoCCache: cmd.Bool("no-ccache") || !cfg.CCache, Contrib: cfg.Contrib}
	if bo.Type == "" {
		bo.Type = build.Release
	}
	out := env.Stdout
	ex := &matrix.Executor{
		Plan: plan, Dir: dir,
		WT:          worktrees(cfg, run),
		B:           &build.Builder{WorktreesRoot: cfg.WorktreesDir, InstallRoot: cfg.InstallDir, Run: run},
		CM:          cm,
		WR:          &workload.Runner{Proc: run, Getenv: func(string) string { return "" }},
		Build:       bo,
		Out:         out,
		Quiet:       cmd.Bool("quiet"),
		SampleEvery: cmd.Duration("sample-every"),
	}
	fmt.Fprintf(out, "matrix: %d cells (%d commits, %d configurations, %d repeats), results in %s\n",
		len(plan.Cells), len(plan.Commits), len(plan.Configs), plan.Options.Repeats, dir)
	if err := ex.Builds(ctx); err != nil {
		return err
	}
	if err := ex.Run(ctx); err != nil {
		if errors.Is(err, matrix.ErrInterrupted) {
			fmt.Fprintf(env.Stderr, "resume with: abtest matrix --resume %s\n", dir)
		}
		return err
	}
	if _, err := writeReport(dir, analysis.Options{}); err != nil {
		fmt.Fprintf(env.Stderr, "abtest: report: %v\n", err)
		return printMedians(out, dir, plan)
	}
	printSummary(out, dir)
	return nil
}

// printPlan is -n: the plan, cell by cell, and how long it will take.
func printPlan(w io.Writer, p *results.Plan, dir string) {
	fmt.Fprintf(w, "# plan: %d cells, shard %s, order %s (seed %d), results in %s\n", len(p.Cells), p.Shard, p.Options.Order, p.Options.Seed, dir)
	for _, c := range p.Commits {
		what := c.Ref + " " + shortSHA(c.SHA)
		if c.Install != "" {
			what = "install " + c.Install
		}
		for _, pa := range c.Patches {
			what += " + " + filepath.Base(pa.File)
		}
		fmt.Fprintf(w, "# commit %s: %s (build %s)\n", c.Label, what, c.Build)
	}
	for _, c := range p.Cells {
		fmt.Fprintf(w, "%4d %s\n", c.Seq, c.ID)
	}
	fmt.Fprintf(w, "# estimate: %s (%.0f s measured + %.0f s warm-up per cell, plus about 3 s of orchestration; builds not counted)\n",
		matrix.Estimate(p, 3*time.Second).Round(time.Second), p.Options.DurationS, p.Options.WarmupS)
}

// printMedians prints the median TPS per configuration and commit.
func printMedians(w io.Writer, dir string, p *results.Plan) error {
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	tps := map[string]map[string][]float64{}
	failed := 0
	for _, r := range recs {
		if r.Status != "ok" || r.Saturated {
			failed++
			continue
		}
		id := r.Config().ID()
		if tps[id] == nil {
			tps[id] = map[string][]float64{}
		}
		tps[id][r.Commit] = append(tps[id][r.Commit], r.Metrics["tps"])
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "configuration\t")
	for _, c := range p.Commits {
		fmt.Fprintf(tw, "%s\t", c.Label)
	}
	fmt.Fprintln(tw)
	for _, cfg := range p.Configs {
		fmt.Fprintf(tw, "%s\t", cfg.ID())
		for _, c := range p.Commits {
			fmt.Fprintf(tw, "%.0f\t", median(tps[cfg.ID()][c.Label]))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(w, "\nmedian TPS:")
	tw.Flush()
	if failed > 0 {
		fmt.Fprintf(w, "%d cells failed or saturated (not in the medians)\n", failed)
	}
	fmt.Fprintf(w, "results: %s\n", dir)
	return nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
