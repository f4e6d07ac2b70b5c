package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/usage"
)

// commands is every built-in command by its full name, without the
// program name.
func commands(t *testing.T) map[string]*cli.Command {
	t.Helper()
	out := map[string]*cli.Command{}
	var walk func(c *cli.Command, path string)
	walk = func(c *cli.Command, path string) {
		for _, sub := range c.Commands {
			if sub.Name == "help" {
				continue
			}
			p := strings.TrimSpace(path + " " + sub.Name)
			out[p] = sub
			walk(sub, p)
		}
	}
	walk(newApp(&Env{Getenv: func(string) string { return "" }}), "")
	return out
}

// TestHelpEveryCommandHasExample: `abtest CMD --help` exits 0 and shows
// a DESCRIPTION with two runnable examples of CMD for every built-in
// command, no line wider than usage.Width, and every flag of a command
// with more than eight in a category; no help is kept for a command
// that no longer exists.
func TestHelpEveryCommandHasExample(t *testing.T) {
	t.Parallel()
	cmds := commands(t)
	for path, c := range cmds {
		code, out, stderr := abtest(t, nil, append(strings.Fields(path), "--help")...)
		if code != 0 || stderr != "" {
			t.Errorf("abtest %s --help: exit %d, stderr %q", path, code, stderr)
		}
		_, ex, ok := strings.Cut(out, "\n   Examples:\n")
		if lines := strings.SplitN(ex, "\n", 3); !ok || !strings.Contains(out, "DESCRIPTION:") || len(lines) < 3 ||
			!isExample(lines[0], path) || !isExample(lines[1], path) {
			t.Errorf("abtest %s --help has no DESCRIPTION with two examples of abtest %s:\n%s", path, path, out)
		}
		for _, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > usage.Width {
				t.Errorf("abtest %s --help: a line of %d columns: %q", path, n, l)
			}
		}
		if len(c.Flags) > 8 {
			for _, f := range c.VisibleFlags() {
				if cf, ok := f.(cli.CategorizableFlag); ok && cf.GetCategory() == "" && f.Names()[0] != "help" {
					t.Errorf("abtest %s --%s: no category", path, f.Names()[0])
				}
			}
		}
	}
	for path := range usage.Commands {
		if cmds[path] == nil {
			t.Errorf("help for %q, which is not a command", path)
		}
	}
}

// isExample says whether line runs abtest's command path (abtest's own
// flags such as -n may come between).
func isExample(line, path string) bool {
	_, rest, ok := strings.Cut(line, "abtest ")
	return ok && strings.Contains(" "+rest+" ", " "+path+" ")
}

// TestHelpFlagUsage: no hand-written "(default: …)" beside the one the
// flag library prints, and every flag that takes a value names it (a
// backquoted NAME), so help never shows a bare "string" or "int".
func TestHelpFlagUsage(t *testing.T) {
	t.Parallel()
	for path, c := range commands(t) {
		for _, f := range c.Flags {
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				continue
			}
			usage := df.GetUsage()
			if strings.Contains(usage, "(default") {
				t.Errorf("%s --%s: usage %q writes its own default; use DefaultText", path, f.Names()[0], usage)
			}
			if df.TakesValue() && !strings.Contains(usage, "`") {
				t.Errorf("%s --%s: usage %q names no `VALUE`", path, f.Names()[0], usage)
			}
		}
	}
}

// TestHelpExitCodes: help is success, and a typo is bad input (exit 2)
// with the nearest name.
func TestHelpExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 0, "matrix"},
		{[]string{"help"}, 0, "matrix"},
		{[]string{"--help"}, 0, "matrix"},
		{[]string{"help", "matrix"}, 0, "Example"},
		{[]string{"matrix", "--help"}, 0, "Example"},
		{[]string{"perf"}, 0, "record"},
		{[]string{"bench", "--help"}, 0, "--host HOST"},
		{[]string{"bench", "-h"}, 0, "--host HOST"},
		{[]string{"mtrix"}, 2, "did you mean matrix?"},
		{[]string{"help", "mtrix"}, 2, "did you mean matrix?"},
		{[]string{"perf", "recrod"}, 2, "did you mean record?"},
		{[]string{"matrix", "--comits", "a,b"}, 2, "did you mean --commits?"},
		{[]string{"bench", "--hots", "/tmp"}, 2, "did you mean --host?"},
		{[]string{"matrix", "--zzzzzzzz"}, 2, "unknown flag --zzzzzzzz;"},
	} {
		code, out, stderr := abtest(t, nil, tc.args...)
		got := out
		if tc.code != 0 {
			got = stderr
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("%v: stderr %q, want one line", tc.args, stderr)
			}
		}
		if code != tc.code || !strings.Contains(got, tc.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", tc.args, code, got, tc.code, tc.want)
		}
	}
}
