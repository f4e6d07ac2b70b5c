package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/demo"
	"github.com/pgabtest/abtest/internal/exitcode"
)

// demoRoot is where the demo keeps worktrees, installs, clusters and
// results unless the environment says otherwise: outside root's private
// home when root, so that the postgres account can reach the installs.
func demoRoot(env *Env) string {
	if d := env.Getenv("ABTEST_DEMO_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/tmp/abtest-demo"
	}
	return filepath.Join(env.Home, ".cache", "abtest-demo")
}

func demoCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "the built-in A/B run: a PostgreSQL tree against itself with pg_stat_statements' USAGE_DEALLOC_PERCENT raised from 5 to 20",
		UsageText: `abtest demo [--source DIR]

Builds the source's HEAD twice (as is, and with the patch shipped inside
abtest), then runs select1 and churn with pg_stat_statements.max = 1000 at
2 and 8 clients, 5 repeats, and prints the report. make demo prepares a
source tree from Debian's PostgreSQL package when PG_SOURCE_DIR is unset.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			sourceFlag(),
			&cli.IntFlag{Name: "duration", Aliases: []string{"d"}, Value: 5, Usage: "measured `SECONDS` per cell"},
			// Five: with fewer, the U-test cannot reach p < 0.01 and every
			// cell would read "too few samples".
			&cli.IntFlag{Name: "repeats", Aliases: []string{"r"}, Value: 5, Usage: "`N` repeats"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			source := cmd.String("source")
			if source == "" {
				source = env.Getenv("PG_SOURCE_DIR")
			}
			if source == "" {
				return exitcode.BadInputf("demo: no PostgreSQL source: pass --source DIR or set PG_SOURCE_DIR (make demo prepares one from Debian's source package)")
			}
			root := demoRoot(env)
			// The patch must exist for -k to read it; under -n it goes to
			// a temporary directory, so that a dry run changes nothing.
			patchDir := root
			if cmd.Bool("dry-run") {
				tmp, err := os.MkdirTemp("", "abtest-demo-")
				if err != nil {
					return exitcode.Failure(err)
				}
				defer os.RemoveAll(tmp)
				patchDir = tmp
			} else if err := os.MkdirAll(root, 0o755); err != nil {
				return exitcode.Failure(err)
			}
			patch := filepath.Join(patchDir, demo.PatchName)
			if err := os.WriteFile(patch, demo.Patch, 0o644); err != nil {
				return exitcode.Failure(err)
			}
			// The demo's own directories, unless the user's environment
			// names them.
			vars := map[string]string{
				"PG_WORKTREES_DIR":  filepath.Join(root, "worktrees"),
				"PG_INSTALL_DIR":    filepath.Join(root, "install"),
				"PG_DATA_DIR":       filepath.Join(root, "data"),
				"BENCH_RESULTS_DIR": filepath.Join(root, "results"),
			}
			denv := *env
			denv.Getenv = func(k string) string {
				if v := env.Getenv(k); v != "" {
					return v
				}
				return vars[k]
			}
			fmt.Fprintf(env.Stdout, "abtest demo: %s HEAD against HEAD + %s, in %s\n", source, demo.PatchName, root)
			args := []string{"abtest", "matrix",
				"--source", source,
				"-k", "base=HEAD,patch=HEAD+" + patch,
				"-W", "demo-%c",
				"-w", "select1,churn", "-c", "2,8", "-m", "1000",
				"-d", fmt.Sprint(cmd.Int("duration")), "-r", fmt.Sprint(cmd.Int("repeats")), "--warmup", "2",
			}
			if cmd.Bool("dry-run") {
				args = append([]string{"abtest", "-n"}, args[1:]...)
			}
			return newApp(&denv).Run(ctx, args)
		},
	}
}
