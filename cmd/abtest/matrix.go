package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/results"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/report"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/workload"
)

// presetFull is the bash harness's full suite.
var presetFull = struct {
	workloads, clients, cpus, pgssMax string
	duration, repeats                 int
}{"select1,churn,slow_churn,within_max", "1,16,64,128", "2,4,8", "1000,5000", 30, 8}

func matrixFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "commits", Aliases: []string{"k"}, Usage: "`SPEC`[,SPEC…]: REF, LABEL=REF, LABEL=REF+PATCH[+PATCH…] or LABEL=install:DIR; the first is the baseline"},
		&cli.StringFlag{Name: "clients", Aliases: []string{"c"}, Value: "64", Usage: "client counts `LIST`"},
		&cli.StringFlag{Name: "cpus", Aliases: []string{"C"}, Usage: "server CPU counts `LIST` (pgbench gets the other CPUs); default: not pinned"},
		&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1,churn", Usage: "workloads `LIST`: select1, churn, slow_churn, within_max, file:PATH; all", Action: allWorkloads},
		&cli.IntFlag{Name: "duration", Aliases: []string{"d", "T"}, Value: 30, Usage: "measured `SECONDS` per cell"},
		&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: 8, Usage: "`N` repeats of every cell (8 pairs are the least that can call a change at α = 0.01)"},
		&cli.StringFlag{Name: "pgss-max", Aliases: []string{"m", "max"}, Value: "5000", Usage: "pg_stat_statements.max values `LIST`"},
		&cli.StringSliceFlag{Name: "set", Usage: "settings axis `GUC=V1,V2` (repeatable; one value is a fixed setting)"},
		&cli.StringFlag{Name: "build", Aliases: []string{"b", "build-type"}, Value: "release", Usage: "build `TYPE`: release, debug, debug_noassert"},
		&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "`PROTOCOL`: simple, extended, prepared"},
		&cli.IntFlag{Name: "sleep", Aliases: []string{"S"}, Usage: "think time `MS` per transaction"},
		&cli.IntFlag{Name: "warmup", Value: 5, Usage: "warm-up `SECONDS` before each measurement"},
		&cli.StringFlag{Name: "order", Value: "abba", Usage: "commit `ORDER` within a block: abba or random"},
		&cli.IntFlag{Name: "seed", Usage: "`N` for --order random", DefaultText: "from the clock, recorded in plan.json"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "results `DIR`", DefaultText: "$BENCH_RESULTS_DIR/abtest_<time>"},
		&cli.StringFlag{Name: "resume", Usage: "run the missing cells of the results `DIR`"},
		&cli.StringFlag{Name: "shard", Usage: "run shard `I/N` of the configurations, or auto from a Kubernetes Indexed Job or Slurm array (with the same --seed on every shard)"},
		&cli.StringFlag{Name: "preset", Usage: "`NAME` of a preset suite: full (the bash harness's full suite)"},
		&cli.StringFlag{Name: "name-template", Aliases: []string{"W"}, Value: "%c", Usage: "worktree/build/cluster name `TEMPLATE`: %c the label, %s the short sha"},
		&cli.BoolFlag{Name: "perf", Usage: "record a CPU profile in the middle of every cell (perf → pprof)"},
		&cli.IntFlag{Name: "perf-window", Value: 10, Usage: "`SECONDS` each --perf profile covers (at most -d)"},
		&cli.BoolFlag{Name: "instructions", Usage: "add an instruction cell per commit, workload and settings: instructions per transaction of one client under valgrind (or perf stat), with a per-function diff; -c and -C apply to the timed cells only"},
		&cli.BoolFlag{Name: "quiet", Usage: "print only errors and the result (for cron)"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		// The build options of switch -b, with the same meaning.
		buildFlag("profiling"), buildFlag("meson-opt"), buildFlag("configure-opt"), buildFlag("force"),
		&cli.DurationFlag{Name: "sample-every", Value: 5 * time.Second, Usage: "live sampler `INTERVAL`"},
		&cli.BoolFlag{Name: "until-decided", Usage: "after the planned repeats, run more blocks of the undecided configurations"},
		&cli.IntFlag{Name: "max-repeats", Usage: "with --until-decided: at most `N` repeats per configuration", DefaultText: "twice -r"},
		&cli.DurationFlag{Name: "budget", Usage: "with --until-decided: wall time `DURATION` for the extra blocks"},
		sourceFlag(),
		runAsFlag(),
	}
}

func matrixCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "matrix",
		Usage: "A/B benchmark: commits × workloads × clients × CPUs × settings, interleaved and resumable",
		UsageText: `abtest matrix -k SPEC[,SPEC…] [-c LIST] [-C LIST] [-w LIST] [-d S] [-r N] [-m LIST] [--set GUC=V1,V2]…
              [-b TYPE] [--profiling] [--meson-opt O]… [--configure-opt O]… [--force] [-M PROTO] [-S MS] [--warmup S] [--order abba|random] [--seed N] [-o DIR]
              [--resume DIR] [--shard I/N] [--preset full] [--until-decided [--max-repeats N] [--budget D]] [-n]

Example: abtest matrix -k base=master,patch=master+fix.patch -c 16,64 -w select1,churn -r 3`,
		OnUsageError: usageError,
		Flags:        append(append(matrixFlags(), gateFlags()...), storeFlag()),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runMatrix(ctx, cmd, env)
		},
	}
}

// planFlags are the flags that decide a plan: --resume takes the plan
// from its directory and refuses them.
var planFlags = []string{"commits", "clients", "cpus", "workloads", "duration", "repeats", "pgss-max", "set", "build", "protocol",
	"sleep", "warmup", "order", "seed", "shard", "preset", "name-template", "perf", "perf-window", "until-decided", "max-repeats", "budget", "instructions",
	"profiling", "meson-opt", "configure-opt"}

// splitInts parses a comma-separated list of positive numbers.
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

// seconds is an integer flag of seconds as a duration, bounded so that
// no product overflows.
func seconds(cmd *cli.Command, name, flag string) (time.Duration, error) {
	n, most := cmd.Int(name), int(matrix.MaxDuration/time.Second)
	if n < 0 || n > most {
		return 0, exitcode.BadInputf("%s %d: want 0 to %d seconds", flag, n, most)
	}
	return time.Duration(n) * time.Second, nil
}

// matrixRequest turns the flags into a matrix.Request; everything the
// flags cannot say wrong is checked by matrix.Prepare.
func matrixRequest(cmd *cli.Command, env *Env) (matrix.Request, error) {
	preset := cmd.String("preset")
	if preset != "" && preset != "full" {
		return matrix.Request{}, exitcode.BadInputf("--preset %q: the preset is full", preset)
	}
	get := func(name, value string) string {
		if preset == "full" && !cmd.IsSet(name) {
			return value
		}
		return cmd.String(name)
	}
	r := matrix.Request{
		NameTemplate: cmd.String("name-template"), Protocol: cmd.String("protocol"), SleepMS: int(cmd.Int("sleep")),
		Order: matrix.Order(cmd.String("order")), Seed: int64(cmd.Int("seed")), Perf: cmd.Bool("perf"), Repeats: int(cmd.Int("repeats")),
		Instructions: cmd.Bool("instructions"),
		BuildOptions: build.Options{Profiling: cmd.Bool("profiling"), MesonOpts: cmd.StringSlice("meson-opt"), ConfigureOpts: cmd.StringSlice("configure-opt")},
	}
	if !cmd.IsSet("seed") {
		r.Seed = env.Now().UnixNano() % 1_000_000_007
	}
	var err error
	if r.Commits, err = parseSpecs(cmd.String("commits")); err != nil {
		return r, err
	}
	if r.Workloads, err = workloadNames(get("workloads", presetFull.workloads)); err != nil {
		return r, err
	}
	if r.Clients, err = splitInts("-c", get("clients", presetFull.clients)); err != nil {
		return r, err
	}
	if r.CPUs, err = cpuCounts(cmd, get("cpus", presetFull.cpus)); err != nil {
		return r, err
	}
	if r.Duration, err = seconds(cmd, "duration", "-d"); err != nil {
		return r, err
	}
	if r.Warmup, err = seconds(cmd, "warmup", "--warmup"); err != nil {
		return r, err
	}
	if preset == "full" {
		if !cmd.IsSet("repeats") {
			r.Repeats = presetFull.repeats
		}
		if !cmd.IsSet("duration") {
			r.Duration = time.Duration(presetFull.duration) * time.Second
		}
	}
	if r.Perf {
		pw, err := seconds(cmd, "perf-window", "--perf-window")
		if err != nil {
			return r, err
		}
		r.PerfWindow = min(pw, r.Duration)
	}
	if r.Build, err = build.ParseType(cmd.String("build")); err != nil {
		return r, err
	}
	if r.Shard, err = matrix.ParseShardEnv(cmd.String("shard"), env.Getenv); err != nil {
		return r, err
	} else if r.Shard.N > 1 && !cmd.IsSet("seed") {
		return r, exitcode.BadInputf("--shard %s: give --seed N, the same on every shard, so that the shards make one run", cmd.String("shard"))
	}
	if r.Settings, err = settingsAxes(get("pgss-max", presetFull.pgssMax), cmd.StringSlice("set")); err != nil {
		return r, err
	}
	r.Adaptive = matrix.Adaptive{UntilDecided: cmd.Bool("until-decided"), MaxRepeats: int(cmd.Int("max-repeats")), Budget: cmd.Duration("budget")}
	if len(r.Commits) == 1 && !cmd.IsSet("repeats") {
		return r, exitcode.BadInputf("-k %s: one commit has nothing to compare with; give two (-k base,patch), or pass -r N for a noise run of it alone", r.Commits[0].Label)
	}
	return r, nil
}

func parseSpecs(specs string) ([]matrix.Commit, error) {
	if specs == "" {
		return nil, exitcode.BadInputf("matrix: -k SPEC[,SPEC…] is required, e.g. -k base,patch")
	}
	var out []matrix.Commit
	for _, s := range strings.Split(specs, ",") {
		c, err := matrix.ParseSpec(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// cpuCounts parses -C; the full preset's larger counts are dropped on a
// smaller host.
func cpuCounts(cmd *cli.Command, list string) ([]int, error) {
	if list == "" {
		return nil, nil
	}
	counts, err := splitInts("-C", list)
	if err != nil || cmd.IsSet("cpus") {
		return counts, err
	}
	online, err := cluster.OnlineCPUs()
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	return slices.DeleteFunc(counts, func(n int) bool { return n > len(online) }), nil
}

// settingsAxes are -m and every --set GUC=V1,V2 (one axis each).
func settingsAxes(pgss string, sets []string) ([]results.Setting, error) {
	counts, err := splitInts("-m", pgss)
	if err != nil {
		return nil, err
	}
	ax := results.Setting{Name: "pg_stat_statements.max"}
	for _, n := range counts {
		if n < 100 {
			return nil, exitcode.BadInputf("-m %d: pg_stat_statements.max must be at least 100", n)
		}
		ax.Values = append(ax.Values, strconv.Itoa(n))
	}
	axes := []results.Setting{ax}
	for _, s := range sets {
		st, err := cluster.ParseSetting(s)
		if err != nil || st.Value == "" {
			return nil, exitcode.BadInputf("--set %q: want GUC=V1[,V2…]", s)
		}
		if st.Name == ax.Name {
			return nil, exitcode.BadInputf("--set %s: use -m for pg_stat_statements.max", st.Name)
		}
		axes = append(axes, results.Setting{Name: st.Name, Values: splitValues(st.Value)})
	}
	return axes, nil
}

// splitValues splits a --set value list on commas outside double quotes;
// a value in double quotes keeps its commas and loses the quotes:
// --set 'search_path="a, b",c' is two values, "a, b" and "c".
func splitValues(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ',' && !quoted:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
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

func runMatrix(ctx context.Context, cmd *cli.Command, env *Env) error {
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return err
	}
	run := runner(cmd, env)
	deps, err := newDeps(env, cfg, run)
	if err != nil {
		return err
	}
	deps.BuildOptions.NoCCache = deps.BuildOptions.NoCCache || cmd.Bool("no-ccache")
	deps.BuildOptions.Force = cmd.Bool("force")
	deps.SampleEvery, deps.Quiet = cmd.Duration("sample-every"), cmd.Bool("quiet")
	if deps.SampleEvery <= 0 {
		return exitcode.BadInputf("--sample-every %s: want a positive interval", deps.SampleEvery)
	}
	o := analysis.Options{Gate: cmd.StringSlice("gate")}
	deps.Decide = report.Undecided(o)
	plan, dir, err := matrixPlan(ctx, cmd, env, cfg, deps)
	if err != nil {
		return err
	}
	if run.DryRun {
		matrix.PrintPlan(env.Stdout, plan, dir, matrix.EstimateBuilds(ctx, deps, plan))
		return nil
	}
	return runAndReport(ctx, env, cfg, deps, plan, dir, o, cmd.Bool("fail-on-regression"))
}

// runAndReport runs a plan, then writes and summarises its report,
// records the run in the store, and gates it when fail is set (o.Gate
// adds metrics to the gate).
func runAndReport(ctx context.Context, env *Env, cfg *config.Loaded, deps *matrix.Deps, plan *results.Plan, dir string, o analysis.Options, fail bool) error {
	if err := checkGate(plan, o.Gate); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "matrix: %d cells (%d commits, %d configurations, %d repeats), results in %s\n",
		len(plan.Cells), len(plan.Commits), len(plan.Configs), plan.Options.Repeats, dir)
	if err := matrix.Run(ctx, deps, plan, dir); err != nil {
		if errors.Is(err, matrix.ErrInterrupted) {
			fmt.Fprintf(env.Stderr, "resume with: abtest matrix --resume %s\n", dir)
		}
		return err
	}
	rep, err := report.Write(dir, o)
	if err != nil {
		fmt.Fprintf(env.Stderr, "abtest: report: %v\n", err)
		if merr := report.Medians(env.Stdout, dir, plan); merr != nil || !fail {
			return merr
		}
		return exitcode.Failure(fmt.Errorf("no report, so no gate: %w", err))
	}
	report.Summary(env.Stdout, dir, rep)
	gerr := gate(rep, fail)
	if err := recordRun(ctx, env, cfg, dir); err != nil {
		if gerr != nil {
			// The gate's answer (a regression, say) matters more than
			// the store: say both, exit with the gate's.
			fmt.Fprintf(env.Stderr, "abtest: store: %v\n", err)
			return gerr
		}
		return err
	}
	return gerr
}

// matrixPlan is the plan stored in --resume DIR, or a new one from the
// flags, and its directory.
func matrixPlan(ctx context.Context, cmd *cli.Command, env *Env, cfg *config.Loaded, deps *matrix.Deps) (*results.Plan, string, error) {
	if dir := cmd.String("resume"); dir != "" {
		var given []string
		for _, f := range planFlags {
			if cmd.IsSet(f) {
				given = append(given, "--"+f)
			}
		}
		if len(given) > 0 {
			return nil, "", exitcode.BadInputf("--resume %s runs the plan stored there; drop %s (or start a new run with -o)", dir, strings.Join(given, ", "))
		}
		plan, err := results.ReadPlan(dir)
		return plan, dir, err
	}
	req, err := matrixRequest(cmd, env)
	if err != nil {
		return nil, "", err
	}
	plan, err := matrix.Prepare(ctx, deps, req)
	if err != nil {
		return nil, "", err
	}
	dir := cmd.String("output")
	if dir == "" {
		dir = filepath.Join(cfg.ResultsDir, "abtest_"+plan.Created.Format("20060102T150405Z"))
	}
	if _, err := os.Stat(filepath.Join(dir, results.PlanFile)); err == nil {
		return nil, "", exitcode.BadInputf("-o %s already holds results; use --resume %s, or another -o", dir, dir)
	}
	return plan, dir, nil
}
