package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/doctor"
	"github.com/pgabtest/abtest/internal/exitcode"
)

func doctorCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:         "doctor",
		Usage:        "host checks that decide whether numbers can be trusted",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			&cli.BoolFlag{Name: "fix", Usage: "as root, set the CPU governor to performance, turbo off and THP to madvise; writes an undo script into the results directory"},
			runAsFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := loadConfig(cmd, env)
			if err != nil {
				return err
			}
			if cmd.Bool("fix") {
				if err := doctorFix(env, cfg.ResultsDir); err != nil {
					return err
				}
			}
			fs := doctor.Check(doctor.Live(cfg.RunAs))
			if cmd.Bool("json") {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(fs)
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			for _, f := range fs {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Status, f.Check, f.Value)
			}
			tw.Flush()
			for _, f := range fs {
				if f.Status != doctor.OK {
					fmt.Fprintf(env.Stdout, "\n%s: %s\n  why: %s\n  fix: %s\n", f.Check, f.Value, f.Why, f.Fix)
				}
			}
			fmt.Fprintf(env.Stdout, "\noverall: %s\n", doctor.Worst(fs))
			return nil
		},
	}
}

// doctorFix applies doctor's safe, reversible fixes and records how to
// undo them; -n prints them only.
func doctorFix(env *Env, resultsDir string) error {
	fixes := doctor.Fixes("/")
	if len(fixes) == 0 {
		fmt.Fprintln(env.Stdout, "doctor --fix: nothing to change (or the knobs are not exposed, as on a VM)")
		return nil
	}
	if os.Geteuid() != 0 {
		return exitcode.BadInputf("doctor --fix: %d settings to change need root; run it as root", len(fixes))
	}
	undo := filepath.Join(resultsDir, "doctor-undo-"+time.Now().UTC().Format("20060102T150405Z")+".sh")
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	done, err := doctor.Apply("/", fixes)
	if werr := os.WriteFile(undo, []byte(doctor.UndoScript("/", done)), 0o755); werr != nil && err == nil {
		err = werr
	}
	for _, f := range done {
		fmt.Fprintf(env.Stdout, "doctor --fix: %s: %s → %s (/%s)\n", f.Check, f.From, f.To, f.Path)
	}
	if len(done) > 0 {
		fmt.Fprintf(env.Stdout, "doctor --fix: to undo: sh %s\n", undo)
	}
	return exitcode.Failure(err)
}
