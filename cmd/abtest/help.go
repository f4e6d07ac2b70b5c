package main

import (
	"context"
	"io"
	"reflect"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/suggest"
	"github.com/pgabtest/abtest/internal/usage"
	abversion "github.com/pgabtest/abtest/internal/version"
	"github.com/pgabtest/abtest/workload"
)

// configure sets, on cmd and every subcommand: no comma splitting of
// slice flags (the root's setting does not reach the subcommands: --set
// GUC=V1,V2 is one axis of two values, and --set search_path=a,b one
// setting), usage errors as exit 2 with a suggestion, an unknown
// subcommand as exit 2, and the command's description, examples and
// flag categories (internal/usage) in its help.
func configure(cmd *cli.Command, path string) {
	cmd.DisableSliceFlagSeparator = true
	cmd.OnUsageError = usageError
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = groupAction
	}
	if d, ok := usage.Describe(path); ok {
		cmd.Description, cmd.Category = d, usage.CommandCategory(path)
	}
	for _, f := range cmd.Flags {
		if c := reflect.ValueOf(f).Elem().FieldByName("Category"); c.IsValid() {
			c.SetString(usage.Category(f.Names()[0]))
		}
	}
	for _, sub := range cmd.Commands {
		configure(sub, strings.TrimSpace(path+" "+sub.Name))
	}
}

// The help is folded to usage.Width columns.
func init() {
	def := cli.HelpPrinterCustom
	cli.HelpPrinterCustom = func(w io.Writer, templ string, data any, funcs map[string]any) {
		var b strings.Builder
		def(&b, templ, data, funcs)
		_, _ = io.WriteString(w, usage.Wrap(b.String(), usage.Width))
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
