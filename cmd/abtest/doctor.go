package main

import (
	"context"
	"io"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/doctor"
)

func doctorCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "host checks that decide whether numbers can be trusted",
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
				if err := doctor.FixHost(env.Stdout, "/", cfg.ResultsDir, env.Geteuid(), env.Now()); err != nil {
					return err
				}
			}
			fs := doctor.Check(doctor.Live(cfg.RunAs, cfg.ResultsDir))
			return printResult(env, cmd, fs, func(w io.Writer) { doctor.WriteText(w, fs) })
		},
	}
}
