package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

func analyzeCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "analyze",
		Usage:     "statistics, verdicts and the report of one or more results directories (shards merge)",
		ArgsUsage: "DIR…",
		UsageText: `abtest analyze DIR… [-o FILE] [--format md|text|json|bench] [--baseline LABEL] [--alpha 0.01]
               [--threshold METRIC=PCT]… [--gate METRIC]… [--fail-on-regression]
abtest analyze --store URL --run ID|seed:N [options]   (a run's shards from the results store)`,
		OnUsageError: usageError,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to `FILE`", DefaultText: "stdout; plots go beside it"},
			&cli.StringFlag{Name: "format", Value: "md", Usage: "`FORMAT`: md, text (plain, for a terminal or a mail), json, or bench (benchstat -col commit; with -o DIR/, one file per commit for plain benchstat)"},
			&cli.StringFlag{Name: "baseline", Usage: "commit `LABEL` to compare against", DefaultText: "the first of -k"},
			&cli.FloatFlag{Name: "alpha", Value: 0.01, Usage: "significance `LEVEL`"},
			&cli.StringSliceFlag{Name: "threshold", Usage: "minimum effect `METRIC=PCT` (repeatable)"},
			storeFlag(),
			&cli.StringFlag{Name: "run", Usage: "analyse the stored run `ID` (or a prefix of it, or seed:N) from the store instead of directories"},
		}, gateFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			dirs := cmd.Args().Slice()
			switch {
			case len(dirs) == 0 && !cmd.IsSet("run"):
				return exitcode.BadInputf("analyze: give at least one results directory, or --run ID for a run in the store")
			case len(dirs) > 0 && cmd.IsSet("run"):
				return exitcode.BadInputf("analyze: give results directories or --run ID, not both")
			}
			o, err := analysisOptions(cmd)
			if err != nil {
				return err
			}
			format := cmd.String("format")
			if format != "md" && format != "text" && format != "json" && format != "bench" {
				return exitcode.BadInputf("--format %q: use md, text, json or bench", format)
			}
			// Big result sets (10⁵ cells) are mostly garbage from JSON
			// decoding: a soft limit makes the GC keep the peak down.
			debug.SetMemoryLimit(400 << 20)
			in, err := loadInput(ctx, cmd, env, dirs)
			if err != nil {
				return err
			}
			rep, err := analysis.Analyze(in, o)
			if err != nil {
				return err
			}
			out := cmd.String("output")
			if format == "bench" && isDir(out) {
				paths, err := rep.WriteBenchFiles(out)
				if err != nil {
					return exitcode.Failure(err)
				}
				fmt.Fprintf(env.Stderr, "benchstat %s\n", strings.Join(paths, " "))
				return gate(rep, cmd.Bool("fail-on-regression"))
			}
			if out != "" {
				if err := results.CheckOutput(out); err != nil {
					return err
				}
			}
			var w io.Writer = env.Stdout
			var buf bytes.Buffer
			if out != "" {
				w = &buf
				if format == "md" {
					if err := rep.WritePlots(filepath.Join(filepath.Dir(out), "plots"), filepath.Dir(out)); err != nil {
						return exitcode.Failure(err)
					}
				}
			}
			switch format {
			case "json":
				err = rep.WriteJSON(w)
			case "bench":
				err = rep.WriteBench(w)
			case "text":
				err = rep.WriteText(w)
			default:
				err = rep.WriteMarkdown(w)
			}
			if err != nil {
				return exitcode.Failure(err)
			}
			if out != "" {
				if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
					return exitcode.Failure(err)
				}
				fmt.Fprintf(env.Stderr, "report: %s\n", out)
			}
			return gate(rep, cmd.Bool("fail-on-regression"))
		},
	}
}

// loadInput reads the results directories, or with --run the run from
// the store.
func loadInput(ctx context.Context, cmd *cli.Command, env *Env, dirs []string) (*analysis.Input, error) {
	if !cmd.IsSet("run") {
		return analysis.Load(dirs...)
	}
	s, err := openStore(ctx, cmd, env)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Input(ctx, cmd.String("run"))
}

func analysisOptions(cmd *cli.Command) (analysis.Options, error) {
	o := analysis.Options{Baseline: cmd.String("baseline"), Alpha: cmd.Float("alpha"), Thresholds: map[string]float64{}, Gate: cmd.StringSlice("gate")}
	for _, t := range cmd.StringSlice("threshold") {
		name, v, ok := strings.Cut(t, "=")
		n, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if !ok || err != nil || n < 0 {
			return o, exitcode.BadInputf("--threshold %q: want METRIC=PCT, e.g. tps=3", t)
		}
		o.Thresholds[name] = n
	}
	return o, nil
}

// isDir: -o DIR/ (a trailing slash) or an existing directory.
func isDir(out string) bool {
	if out == "" {
		return false
	}
	st, err := os.Stat(out)
	return strings.HasSuffix(out, "/") || err == nil && st.IsDir()
}
