package main

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/usage"
)

// TestOneMeaningPerLetter greps every command's flags (the root's too):
// a one-letter spelling names the same flag in every command, --config
// is the root's TOML file alone, and no command declares a spelling
// usage.Olds rewrites (it would never be reached).
func TestOneMeaningPerLetter(t *testing.T) {
	t.Parallel()
	cmds := commands(t)
	cmds[""] = newApp(&Env{Getenv: func(string) string { return "" }})
	meaning := map[string]map[string][]string{} // letter → long name → commands
	for path, c := range cmds {
		for _, f := range c.Flags {
			names := f.Names()
			for _, n := range names[1:] {
				if len(n) != 1 {
					continue
				}
				if meaning[n] == nil {
					meaning[n] = map[string][]string{}
				}
				// --commit and --commits are one meaning (switch takes one).
				long := strings.TrimSuffix(names[0], "s")
				meaning[n][long] = append(meaning[n][long], path)
			}
			if names[0] == "config" && path != "" {
				t.Errorf("abtest %s declares --config: only abtest's own --config FILE may", path)
			}
			for _, o := range usage.Olds {
				if o.Command == path && (reflectNames(names, o.Flag)) {
					t.Errorf("abtest %s declares %s, an old spelling rewritten to %s", path, o.Flag, o.New)
				}
			}
		}
	}
	for letter, longs := range meaning {
		if len(longs) > 1 {
			t.Errorf("-%s means %d things: %v", letter, len(longs), longs)
		}
	}
	for letter, want := range map[string]string{"c": "client", "w": "workload", "k": "commit", "C": "cpu", "o": "output"} {
		for long := range meaning[letter] {
			if long != want {
				t.Errorf("-%s is --%s, want --%s", letter, long, want)
			}
		}
	}
	if _, ok := meaning["h"]; ok {
		t.Errorf("-h names a flag (%v): it is help alone", meaning["h"])
	}
}

// reflectNames says whether spelling (-c, --config) is among names.
func reflectNames(names []string, spelling string) bool {
	for _, n := range names {
		if "-"+n == spelling || "--"+n == spelling {
			return true
		}
	}
	return false
}

// TestOldSpellings: every old spelling means what its new one does,
// and Main prints exactly one deprecation line for it (once, however
// often it is given) and none for today's spelling.
func TestOldSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		old, now string
		notes    int
	}{
		{"switch -c a21bd27 -w lru", "switch -k a21bd27 --worktree lru", 2},
		{"switch -w lru --stop", "switch --worktree lru --stop", 1},
		{"env -w lru", "env --worktree lru", 1},
		{"perf record -w lfu -d 3", "perf record --worktree lfu -d 3", 1},
		{"bench -C 2 -d 5", "bench --pgbench-cpus 2 -d 5", 1},
		{"bench --cpus=2 -d 5", "bench --pgbench-cpus=2 -d 5", 1},
		{"bench -h /tmp -p 5433", "bench --host /tmp -p 5433", 1},
		{"history --metric tps --config select1/c16", "history --metric tps --configuration select1/c16", 1},
		{"annotate --commit x --metric tps --config churn --note n", "annotate --commit x --metric tps --configuration churn --note n", 1},
	} {
		o, n := parsed(t, strings.Fields(tc.old)...), parsed(t, strings.Fields(tc.now)...)
		if len(o) == 0 || !reflect.DeepEqual(o, n) {
			t.Errorf("%q and %q differ:\n%v\n%v", tc.old, tc.now, o, n)
		}
		_, notes := usage.Rewrite(strings.Fields(tc.old))
		_, none := usage.Rewrite(strings.Fields(tc.now))
		if len(notes) != tc.notes || !strings.HasPrefix(notes[0], "abtest: deprecated: ") || len(none) != 0 {
			t.Errorf("%q: notes %q; %q: notes %q; want %d deprecation lines and none", tc.old, notes, tc.now, none, tc.notes)
		}
	}
	// Through Main: a command that runs says the note on stderr once; a
	// refused one says its one-line error alone (the fuzzer's rule for
	// exit 2); -h alone is still help.
	code, _, stderr := abtest(t, nil, "-n", "history", "--config", "x", "--config", "y")
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != 2 || len(lines) != 1 || strings.Contains(stderr, "deprecated") {
		t.Errorf("history --config twice, refused: exit %d, stderr %q; want exit 2 and its one error line", code, stderr)
	}
	code, _, stderr = abtest(t, nil, "-n", "bench", "-C", "1", "-w", "select1", "-d", "1")
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != 0 || len(lines) != 1 || !strings.Contains(lines[0], "deprecated: bench -C: use --pgbench-cpus") {
		t.Errorf("-n bench -C 1: exit %d, stderr %q; want exit 0 and one deprecation line", code, stderr)
	}
	if code, out, stderr := abtest(t, nil, "bench", "-h"); code != 0 || stderr != "" || !strings.Contains(out, "USAGE:") {
		t.Errorf("bench -h: exit %d, stderr %q; want help", code, stderr)
	}
	// A value after -- is never rewritten, nor a flag before the command.
	if got, notes := usage.Rewrite([]string{"--config", "f.toml", "history", "--", "--config"}); len(notes) != 0 || got[4] != "--config" {
		t.Errorf("rewrote %q (notes %q)", got, notes)
	}
}

// TestSwitchName: NAME is --worktree NAME or the one argument; both
// that differ, or two arguments, are refused in one line.
func TestSwitchName(t *testing.T) {
	t.Parallel()
	if got := parsed(t, "switch", "lru", "-b", "release"); got["build"] != "release" || !reflect.DeepEqual(got["args"], []string{"lru"}) {
		t.Errorf("switch lru -b release: %v", got)
	}
	for _, args := range [][]string{{"switch", "a", "b"}, {"switch", "a", "--worktree", "b"}, {"env", "a", "b"}, {"switch", "-k", "HEAD"}} {
		code, _, stderr := abtest(t, nil, args...)
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "NAME") {
			t.Errorf("%v: exit %d, %q; want 2 and one line naming NAME", args, code, stderr)
		}
	}
	var cats []string
	for _, c := range []string{"matrix", "bench"} {
		for _, f := range commands(t)[c].Flags {
			if cf, ok := f.(cli.CategorizableFlag); ok {
				cats = append(cats, cf.GetCategory())
			}
		}
	}
	sort.Strings(cats)
	if len(cats) == 0 || cats[0] == "" {
		t.Errorf("a flag of matrix or bench has no category: %q", cats)
	}
}
