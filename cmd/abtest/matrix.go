package main

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/pipeline"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

func matrixFlags() []cli.Flag {
	return append(axisFlags(), []cli.Flag{
		&cli.StringFlag{Name: "commits", Aliases: []string{"k"}, Usage: "`SPEC`[,SPEC…]: REF, LABEL=REF, LABEL=REF+PATCH[+PATCH…] or LABEL=install:DIR; the first is the baseline"},
		&cli.StringFlag{Name: "workloads", Aliases: []string{"w"}, Value: "select1,churn", Usage: "workloads `LIST`: select1, churn, slow_churn, within_max, file:PATH; all", Action: allWorkloads},
		&cli.IntFlag{Name: "duration", Aliases: []string{"d", "T"}, Value: 30, Usage: "measured `SECONDS` per cell"},
		&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: 8, Usage: "`N` repeats of every cell (see Repeats above)"},
		&cli.StringFlag{Name: "pgss-max", Aliases: []string{"m", "max"}, Value: "5000", Usage: "pg_stat_statements.max values `LIST`"},
		&cli.StringSliceFlag{Name: "initdb-opt", Usage: "initdb `OPTION` for every cluster (repeatable), e.g. --initdb-opt=--no-data-checksums to compare PG 18 with 17 on equal terms"},
		&cli.StringFlag{Name: "pgbench", Usage: "the one pgbench `PROGRAM` for every server", DefaultText: "the newest build's"},
		&cli.BoolFlag{Name: "must-not-saturate", Usage: "with -R: a saturated point leaves its configuration incomplete (the gate fails) instead of being reported"},
		&cli.StringFlag{Name: "build", Aliases: []string{"b", "build-type"}, Value: "release", Usage: "build `TYPE`: release, debug, debug_noassert"},
		&cli.StringFlag{Name: "protocol", Aliases: []string{"M"}, Value: "simple", Usage: "`PROTOCOL`: simple, extended, prepared"},
		&cli.IntFlag{Name: "sleep", Aliases: []string{"S"}, Usage: "think time `MS` per transaction"},
		&cli.IntFlag{Name: "warmup", Value: 5, Usage: "warm-up `SECONDS` before each measurement"},
		&cli.IntFlag{Name: "warmup-tx", Usage: "warm-up of `N` transactions per client (pgbench -t) in place of --warmup's seconds"},
		&cli.BoolFlag{Name: "restart-cells", Usage: "restart the server before every timed cell: fresh shared memory, caches and backends"},
		&cli.StringFlag{Name: "order", Value: "abba", Usage: "commit `ORDER` within a block: abba or random"},
		&cli.IntFlag{Name: "seed", Usage: "`N` for --order random", DefaultText: "from the clock, recorded in plan.json"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "results `DIR`", DefaultText: "$BENCH_RESULTS_DIR/abtest_<time>"},
		&cli.StringFlag{Name: "resume", Usage: "run the missing cells of the results `DIR`"},
		&cli.StringFlag{Name: "shard", Usage: "run shard `I/N` of the configurations, or auto from a Kubernetes Indexed Job or Slurm array (with the same --seed on every shard)"},
		&cli.StringFlag{Name: "preset", Usage: "`NAME` of a preset suite: full (the bash harness's full suite)"},
		&cli.StringFlag{Name: "name-template", Aliases: []string{"W"}, Value: "%c", Usage: "worktree/build/cluster name `TEMPLATE`: %c the label, %s the short sha"},
		&cli.BoolFlag{Name: "perf", Usage: "record a CPU profile in the middle of every cell (perf → pprof)"},
		&cli.IntFlag{Name: "perf-window", Value: 10, Usage: "`SECONDS` each --perf profile covers (at most -d)"},
		&cli.IntFlag{Name: "instr-repeats", Value: 1, Usage: "with --instructions: runs of each instruction cell (`N`; a count repeats to 0.001 %), plus one confirmation where commits differ beyond the threshold"},
		instrTransactionsFlag(),
		&cli.BoolFlag{Name: "instructions", Usage: "add an instruction cell per commit, workload and settings: instructions per transaction of one client under valgrind (or perf stat), with a per-function diff; -c and -C apply to the timed cells only"},
		&cli.BoolFlag{Name: "instructions-only", Usage: "instruction cells alone, no timed cells: a CPU-cost verdict in a few minutes (-r does not apply; see --instr-repeats)"},
		&cli.BoolFlag{Name: "quiet", Usage: "print only errors and the result (for cron)"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		// The build options of switch -b, with the same meaning.
		buildFlag("profiling"), buildFlag("meson-opt"), buildFlag("configure-opt"), buildFlag("force"), buildFlag("extension"),
		&cli.StringSliceFlag{Name: "preload", Usage: "preload `LIB` in every cluster beside pg_stat_statements (repeatable, or a list)"},
		&cli.StringFlag{Name: "setup-sql", Usage: "run `FILE` on every cluster's database before its cells; ${NAME} is the cell's --set or --var value, and it runs again when that changes"},
		&cli.DurationFlag{Name: "sample-every", Value: 5 * time.Second, Usage: "live sampler `INTERVAL`"},
		&cli.BoolFlag{Name: "until-decided", Usage: "after the planned repeats, run more blocks of the undecided configurations"},
		&cli.IntFlag{Name: "max-repeats", Usage: "with --until-decided: at most `N` repeats per configuration", DefaultText: "twice -r"},
		&cli.DurationFlag{Name: "budget", Usage: "with --until-decided: wall time `DURATION` for the extra blocks"},
		sourceFlag(),
		runAsFlag(),
	}...)
}

// axisFlags are the flags of the axes (results.Axes) but those named
// in skip (axis names); axisValues reads them.
func axisFlags(skip ...string) (out []cli.Flag) {
	for _, d := range results.Axes {
		if f := d.Flag; f.Each && !slices.Contains(skip, d.Name) {
			out = append(out, &cli.StringSliceFlag{Name: f.Name, Aliases: f.Aliases, Usage: f.Usage})
		} else if f.Name != "" && !slices.Contains(skip, d.Name) {
			out = append(out, &cli.StringFlag{Name: f.Name, Aliases: f.Aliases, Value: f.Value, Usage: f.Usage})
		}
	}
	return out
}
func matrixCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "matrix",
		Usage: "A/B benchmark: commits × workloads × clients × CPUs × settings, interleaved and resumable",
		UsageText: `abtest matrix -k SPEC[,SPEC…] [-c LIST] [-C LIST] [-w LIST] [-d S] [-r N] [-m LIST] [options]
abtest matrix --resume DIR`,
		Flags: append(append(matrixFlags(), gateFlagSet()...), storeFlag()),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runMatrix(ctx, cmd, env)
		},
	}
}

// matrixOptions are cmd's flags as matrix.Options (bisect's too: a flag
// it does not declare reads as its zero value), which Request checks;
// everything the flags cannot say wrong is checked by matrix.Prepare.
func matrixOptions(cmd *cli.Command, env *Env) matrix.Options {
	return matrix.Options{
		Commits: env.Getwd.Specs(cmd.String("commits")), Workloads: env.Getwd.Items(cmd.String("workloads")),
		PgssMax: cmd.String("pgss-max"), MustNotSaturate: cmd.Bool("must-not-saturate"), InstrRepeats: int(cmd.Int("instr-repeats")), InstructionsOnly: cmd.Bool("instructions-only"),
		InstrTransactions: int(cmd.Int("instr-transactions")), InitdbOpts: cmd.StringSlice("initdb-opt"), Pgbench: env.Getwd.Path(cmd.String("pgbench")),
		Seconds: cmd.Int("duration"), Warmup: cmd.Int("warmup"), WarmupTx: int(cmd.Int("warmup-tx")), RestartCells: cmd.Bool("restart-cells"), PerfWindow: cmd.Int("perf-window"),
		Repeats: int(cmd.Int("repeats")), SleepMS: int(cmd.Int("sleep")), MaxRepeats: int(cmd.Int("max-repeats")),
		Build: cmd.String("build"), Protocol: cmd.String("protocol"), Order: cmd.String("order"),
		NameTemplate: cmd.String("name-template"), Preset: cmd.String("preset"), Shard: cmd.String("shard"),
		Seed: int64(cmd.Int("seed")), Perf: cmd.Bool("perf"), Instructions: cmd.Bool("instructions"),
		UntilDecided: cmd.Bool("until-decided"), Budget: cmd.Duration("budget"),
		Extensions: env.Getwd.Paths(cmd.StringSlice("extension")), Preload: cmd.StringSlice("preload"), SetupSQL: env.Getwd.Path(cmd.String("setup-sql")),
		BuildOptions: build.Options{Profiling: cmd.Bool("profiling"), MesonOpts: cmd.StringSlice("meson-opt"), ConfigureOpts: cmd.StringSlice("configure-opt")},
		Given:        cmd.IsSet, Getenv: env.Getenv, Now: env.Now(), Axes: axisValues(cmd, env),
	}
}

// axisValues are the values of cmd's axis flags by axis name
// (matrix.Options.Axes): file: items made absolute.
func axisValues(cmd *cli.Command, env *Env) map[string][]string {
	out := map[string][]string{}
	for _, d := range results.Axes {
		if f := d.Flag; f.Each {
			out[d.Name] = cmd.StringSlice(f.Name)
		} else if f.Name != "" {
			out[d.Name] = []string{env.Getwd.Items(cmd.String(f.Name))}
		}
	}
	return out
}

func runMatrix(ctx context.Context, cmd *cli.Command, env *Env) error {
	ro, err := gateFlags(cmd).RunOptions()
	if err != nil {
		return err
	}
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
	deps.Decide = pipeline.Undecided(ro.Analysis)
	plan, dir, err := matrixPlan(ctx, cmd, env, cfg, deps)
	if err != nil {
		return err
	}
	return runAndReport(ctx, env, cfg, deps, plan, dir, ro)
}

// runAndReport runs a plan (pipeline.Run), printing on env, recording in cfg's store.
func runAndReport(ctx context.Context, env *Env, cfg *config.Loaded, deps *matrix.Deps, plan *results.Plan, dir string, ro pipeline.RunOptions) error {
	ro.Out, ro.Err, ro.Record = env.Stdout, env.Stderr, recorder(cfg)
	return pipeline.Run(ctx, deps, plan, dir, ro)
}

// recorder stores results directories in cfg's store.
func recorder(cfg *config.Loaded) pipeline.Recorder {
	return func(ctx context.Context, w io.Writer, dirs ...string) error {
		return history.Record(ctx, store.Location(cfg.Store, cfg.ResultsDir), w, dirs...)
	}
}

// matrixPlan is the plan stored in --resume DIR, or a new one from the
// flags, and its directory.
func matrixPlan(ctx context.Context, cmd *cli.Command, env *Env, cfg *config.Loaded, deps *matrix.Deps) (*results.Plan, string, error) {
	if dir := env.Getwd.Path(cmd.String("resume")); dir != "" {
		plan, err := matrix.ResumePlan(dir, cmd.IsSet)
		return plan, dir, err
	}
	req, err := matrixOptions(cmd, env).Request()
	if err != nil {
		return nil, "", err
	}
	return pipeline.Prepare(ctx, deps, req, env.Getwd.Path(cmd.String("output")), cfg.ResultsDir)
}
