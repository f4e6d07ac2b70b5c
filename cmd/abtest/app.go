package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/abspath"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/internal/usage"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/workspace"
)

// version is set at link time (-X main.version=…) by the Makefile.
var version = "dev"

// Env is the process-level state a command may touch: its output streams,
// the environment, the working directory, the home directory, the clock
// and the effective uid. Tests run whole commands with buffers and a map
// for the environment.
type Env struct {
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  func(string) string
	Getwd   abspath.Getwd // what the path flags are taken against
	Home    string
	Now     func() time.Time
	Geteuid func() int
	// Environ is what child processes start from; nil means this
	// process's environment.
	Environ []string
}

// Main runs abtest with args (args[0] is the program name) and returns the
// exit code. Errors are printed as one line on Stderr.
func Main(ctx context.Context, args []string, env *Env) int {
	app := newApp(env)
	args, notes := usage.RewriteArgs(args)
	// No path or value holds a NUL byte (the kernel would cut it there);
	// Main is also called with strings, by tests and fuzzers.
	err := exitcode.BadInputf("an argument holds a NUL byte: no path or value can hold one")
	if !slices.ContainsFunc(args, func(a string) bool { return strings.ContainsRune(a, 0) }) {
		err = app.Run(ctx, args)
	}
	// The old spellings' notes unless it failed: a refusal is one line.
	usage.PrintNotes(env.Stderr, notes, exitcode.Code(err) == exitcode.OK || exitcode.Code(err) == exitcode.Regression)
	if err == nil {
		return exitcode.OK
	}
	if strings.HasPrefix(err.Error(), "No help topic for ") {
		// urfave's help takes an argument as a topic: `switch -h 0`.
		err = exitcode.BadInputf("%s: see abtest help", err)
	}
	fmt.Fprintf(env.Stderr, "abtest: %s\n", text.OneLine(err.Error()))
	if exitcode.Code(err) == exitcode.Infra {
		proc.WriteTail(env.Stderr, err)
	}
	return exitcode.Code(err)
}

func newApp(env *Env) *cli.Command {
	app := &cli.Command{
		Name: "abtest",
		UsageText: `abtest [-n] [--config FILE] COMMAND [flags]
abtest help [COMMAND]`,
		Usage:   "build PostgreSQL commits and A/B-benchmark them",
		Version: buildVersion(version),
		Writer:  env.Stdout,
		// Errors are printed once, by Main.
		ErrWriter:       env.Stderr,
		ExitErrHandler:  func(context.Context, *cli.Command, error) {},
		HideHelpCommand: true,
		Action:          groupAction,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "TOML config `FILE`", DefaultText: "bench_config.toml in the working directory, if any"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print the commands and files that would run or change, and do nothing"},
		},
		Commands: []*cli.Command{
			switchCommand(env),
			statusCommand(env),
			envCommand(env),
			benchCommand(env),
			matrixCommand(env),
			demoCommand(env),
			analyzeCommand(env),
			perfCommand(env),
			doctorCommand(env),
			nightlyCommand(env),
			bisectCommand(env),
			storeCommand(env), historyCommand(env), annotateCommand(env), dashboardCommand(env), serveCommand(env),
		},
	}
	configure(app, "")
	return app
}

// sourceFlag is --source, the override of PG_SOURCE_DIR. Flags keep parse
// state, so every command gets its own.
func sourceFlag() cli.Flag {
	return &cli.StringFlag{Name: "source", Usage: "PostgreSQL git clone `DIR` (PG_SOURCE_DIR)"}
}

// loadConfig reads the configuration with the flags' overrides.
func loadConfig(cmd *cli.Command, env *Env) (*config.Loaded, error) {
	return loadConfigWith(cmd, env, nil)
}

// loadConfigWith is loadConfig over a use case's own defaults.
func loadConfigWith(cmd *cli.Command, env *Env, defaults *config.Config) (*config.Loaded, error) {
	l, err := config.Load(config.Options{
		File:      cmd.String("config"),
		Getwd:     env.Getwd,
		Home:      env.Home,
		Getenv:    env.Getenv,
		Overrides: flagOverrides(cmd),
		Defaults:  defaults,
	})
	return l, exitcode.BadInput(err)
}

// flagOverrides are the flags that override config keys.
func flagOverrides(cmd *cli.Command) []config.Override {
	var ov []config.Override
	for _, f := range []struct{ flag, key string }{{"source", "source_dir"}, {"store", "store"}, {"run-as", "run_as"}} {
		if cmd.IsSet(f.flag) {
			ov = append(ov, config.Override{Key: f.key, Flag: "--" + f.flag, Value: cmd.String(f.flag)})
		}
	}
	return ov
}

// runner returns the runner for cmd: dry-run under -n, tracing to stdout.
func runner(cmd *cli.Command, env *Env) *proc.Runner {
	return &proc.Runner{DryRun: cmd.Bool("dry-run"), Trace: env.Stdout, Environ: env.Environ}
}

// openWorkspace is the workspace of the configuration, dry-run under -n.
func openWorkspace(cmd *cli.Command, env *Env) (*workspace.Workspace, error) {
	cfg, err := loadConfig(cmd, env)
	if err != nil {
		return nil, err
	}
	return &workspace.Workspace{Config: cfg, Run: runner(cmd, env), Euid: env.Geteuid(), Now: env.Now, Out: env.Stderr, Notes: env.Stderr, Exports: env.Stdout}, nil
}

// newDeps is what a matrix run (and nightly, bisect and the demo, which
// build on it) uses, from the configuration.
func newDeps(env *Env, cfg *config.Loaded, run *proc.Runner) (*matrix.Deps, error) {
	ws := &workspace.Workspace{Config: cfg, Run: run, Euid: env.Geteuid(), Out: env.Stdout, Notes: env.Stderr}
	return ws.MatrixDeps(env.Now, buildVersion(version))
}

// worktreeFlag is --worktree NAME; NAME may also be the first argument.
func worktreeFlag(use string) cli.Flag { return &cli.StringFlag{Name: "worktree", Usage: use} }

// worktreeName is --worktree NAME or the one argument NAME; required
// says whether a command needs it.
func worktreeName(cmd *cli.Command, required bool) (string, error) {
	name, args := cmd.String("worktree"), cmd.Args().Slice()
	switch {
	case len(args) > 1 || (len(args) == 1 && name != "" && args[0] != name):
		return "", exitcode.BadInputf("%s: give one NAME (%q): --worktree NAME or NAME, not both", cmd.Name, args)
	case len(args) == 1:
		name = args[0]
	}
	if name == "" && required {
		return "", exitcode.BadInputf("%s: NAME is required: abtest %s NAME (or --worktree NAME)", cmd.Name, cmd.Name)
	}
	return name, nil
}
