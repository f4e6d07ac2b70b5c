package main

import (
	"context"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/suggest"
	abversion "github.com/pgabtest/abtest/internal/version"
	"github.com/pgabtest/abtest/workload"
)

// examples is one runnable example per built-in command, by its full
// name; helpTest checks that every command has one.
var examples = map[string]string{
	"switch":       "abtest switch -c master -w base && abtest switch -w base -b release && abtest switch -w base -m 5000 -p 5433",
	"status":       "abtest status --json | jq '.clusters[] | select(.running)'",
	"env":          "eval \"$(abtest env -w base)\"; psql -c 'select version()'",
	"bench":        "abtest bench -T 30 -c 64 -j 8 -w churn -h /tmp -p 5433",
	"demo":         "abtest demo -d 5 -r 5",
	"analyze":      "abtest analyze ~/pg/results/abtest_* --format text --fail-on-regression",
	"perf":         "abtest perf record -p 5433 -d 10 -o lfu.pb.gz && abtest perf report lfu.pb.gz",
	"perf record":  "abtest perf record -w lfu -d 10 -o lfu.pb.gz",
	"perf report":  "abtest perf report lfu.pb.gz --top 30 --cum",
	"perf compare": "abtest perf compare base.pb.gz lfu.pb.gz --per-tx 1200000,1180000",
	"perf view":    "abtest perf view lfu.pb.gz --diff-base base.pb.gz",
	"doctor":       "abtest doctor --json",
	"nightly":      "abtest nightly --config nightly.toml",
	"bisect":       "abtest bisect --good REL_16_0 --bad master -w churn -c 64 --metric tps",
	"store":        "abtest store import ~/pg/results/abtest_*",
	"store import": "abtest store import --store postgres://bench@db/abtest /shared/results/*",
	"history":      "abtest history --metric tps --config select1/c16 --since 30d",
	"annotate":     `abtest annotate --commit 1a2b3c4 --metric tps --config churn/c64 --note "expected: new lock"`,
	"dashboard":    "abtest dashboard -o site && xdg-open site/index.html",
	"serve":        "abtest serve --addr 127.0.0.1:8080",
	"matrix":       "abtest matrix -k master,mine=master+my.patch -w select1,churn -c 1,16 -r 8",
}

// pgbenchLetters says, in the help of the commands that run pgbench,
// where a letter means something else than pgbench's.
const pgbenchLetters = `Letters that differ from pgbench's: -d is the duration (pgbench's -T, also
accepted), -S the think time in ms (pgbench: select-only), -C the CPU count
(pgbench: connect per transaction).`

// configure sets, on cmd and every subcommand: no comma splitting of
// slice flags (the root's setting does not reach the subcommands: --set
// GUC=V1,V2 is one axis of two values, and --set search_path=a,b one
// setting), usage errors as exit 2 with a suggestion, an unknown
// subcommand as exit 2, and the command's example in its help.
func configure(cmd *cli.Command, path string) {
	cmd.DisableSliceFlagSeparator = true
	cmd.OnUsageError = usageError
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = groupAction
	}
	if ex, ok := examples[path]; ok && !strings.Contains(cmd.UsageText+cmd.Description, "Example") {
		cmd.Description = strings.TrimSpace(cmd.Description + "\n\nExample:\n  " + ex)
	}
	switch path {
	case "bench", "matrix", "bisect":
		cmd.Description += "\n\n" + pgbenchLetters
	}
	for _, sub := range cmd.Commands {
		configure(sub, strings.TrimSpace(path+" "+sub.Name))
	}
}

// groupAction is the action of abtest and of every command made of
// subcommands: help without arguments, `help [COMMAND]`, and exit 2 with
// a suggestion for anything else.
func groupAction(ctx context.Context, cmd *cli.Command) error {
	args := cmd.Args().Slice()
	if len(args) == 0 && cmd.Root() == cmd {
		return cli.ShowRootCommandHelp(cmd)
	}
	if len(args) == 0 {
		return cli.ShowSubcommandHelp(cmd)
	}
	if args[0] == "help" && cmd.Root() == cmd {
		if len(args) == 1 {
			return cli.ShowRootCommandHelp(cmd)
		}
		if cmd.Command(args[1]) == nil {
			return unknownCommand(cmd, args[1])
		}
		return cli.ShowCommandHelp(ctx, cmd, args[1])
	}
	return unknownCommand(cmd, args[0])
}

func unknownCommand(cmd *cli.Command, name string) error {
	var names []string
	for _, c := range cmd.VisibleCommands() {
		names = append(names, c.Names()...)
	}
	prefix := strings.TrimPrefix(cmd.FullName()+" ", "abtest ")
	return exitcode.BadInputf("unknown command %q%s; %s --help lists the commands", strings.TrimSpace(prefix+" "+name), suggest.DidYouMean(name, names, false), "abtest "+strings.TrimSpace(prefix))
}

// usageError is every command's OnUsageError: exit 2, and for an unknown
// flag the nearest flag name.
func usageError(_ context.Context, cmd *cli.Command, err error, _ bool) error {
	const undefined = "flag provided but not defined: -"
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, undefined); ok {
		var names []string
		for _, f := range cmd.VisibleFlags() {
			names = append(names, f.Names()...)
		}
		dashes := "--"
		if len(name) == 1 {
			dashes = "-"
		}
		return exitcode.BadInputf("%s: unknown flag %s%s%s; abtest %s --help lists the flags",
			cmd.Name, dashes, name, suggest.DidYouMean(name, names, true), strings.TrimPrefix(cmd.FullName(), "abtest "))
	}
	return exitcode.BadInput(err)
}

// buildVersion is the version make links in, else the VCS revision Go
// recorded in the binary (go build, go install), else "dev".
func buildVersion(linked string) string { return abversion.Binary(linked) }

// allWorkloads is the Action of -w flags: the bash harness's -w all is
// every built-in workload.
func allWorkloads(_ context.Context, cmd *cli.Command, list string) error {
	return cmd.Set("workloads", workload.ExpandAll(list))
}
