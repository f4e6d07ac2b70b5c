package usage

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWrap: no line is left wider than the width (a word wider than a
// line too is cut), a flag line's continuation hangs under its usage
// column, and short lines and blank lines are kept as they are.
func TestWrap(t *testing.T) {
	flag := "   --rate LIST, -R LIST  " + strings.Repeat("offered rates ≥ 0 a second ", 10)
	long := "   " + strings.Repeat("x", 150)
	in := "NAME:\n\n" + flag + "\n" + long + "\n   short\n"
	out := Wrap(in, 60)
	lines := strings.Split(out, "\n")
	for _, l := range lines {
		if utf8.RuneCountInString(l) > 60 {
			t.Errorf("line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.HasPrefix(out, "NAME:\n\n   --rate LIST, -R LIST  offered") || !strings.HasSuffix(out, "\n   short\n") {
		t.Errorf("wrapped:\n%s", out)
	}
	if hang := strings.Repeat(" ", 25); !strings.HasPrefix(lines[3], hang) || lines[3][25] == ' ' {
		t.Errorf("continuation not under the usage column: %q", lines[3])
	}
	if strings.Count(strings.ReplaceAll(out, "\n   ", ""), "x") != 150 {
		t.Errorf("the long word lost characters:\n%s", out)
	}
}

// TestPath: the command is found past abtest's own flags (and the value
// of --config), stops at the first argument that is not a subcommand,
// and never looks past "--".
func TestPath(t *testing.T) {
	known := func(p string) bool { _, ok := Commands[p]; return ok }
	for _, tc := range []struct {
		args  string
		path  string
		start int
	}{
		{"-n --config perf matrix -k a", "matrix", 4},
		{"perf record -w x", "perf record", 2},
		{"perf lfu record", "perf", 1},
		{"-- switch -c x", "", 0},
		{"help switch -c", "", 0},
	} {
		p, i := Path(strings.Fields(tc.args), known)
		if p != tc.path || i != tc.start {
			t.Errorf("%q: %q at %d, want %q at %d", tc.args, p, i, tc.path, tc.start)
		}
	}
	// Every old spelling names a command that exists, and its note is one line.
	for _, o := range Olds {
		if !known(o.Command) || strings.Contains(o.Note(), "\n") {
			t.Errorf("%+v: unknown command or a note of several lines", o)
		}
	}
}

// TestRewriteNeedsAValue: an old spelling with no value after it is not
// rewritten and prints no note (the fuzzer's `history --config`: a note
// beside its usage error made that error two lines); with a value, or
// as flag=value, it is, once.
func TestRewriteNeedsAValue(t *testing.T) {
	for _, c := range []struct {
		args  []string
		want  string
		notes int
	}{
		{[]string{"history", "--config"}, "history --config", 0},
		{[]string{"switch", "-c", "--stop"}, "switch -c --stop", 0},
		{[]string{"bench", "-h"}, "bench -h", 0},
		{[]string{"history", "--config", "select1/c8"}, "history --configuration select1/c8", 1},
		{[]string{"history", "--config=select1/c8", "--config", "churn"}, "history --configuration=select1/c8 --configuration churn", 1},
	} {
		out, notes := Rewrite(c.args)
		if got := strings.Join(out, " "); got != c.want || len(notes) != c.notes {
			t.Errorf("Rewrite(%q) = %q with %d notes; want %q with %d", c.args, got, len(notes), c.want, c.notes)
		}
	}
}
