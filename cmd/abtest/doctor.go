package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/doctor"
)

func doctorCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:         "doctor",
		Usage:        "host checks that decide whether numbers can be trusted",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			runAsFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := loadConfig(cmd, env)
			if err != nil {
				return err
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
