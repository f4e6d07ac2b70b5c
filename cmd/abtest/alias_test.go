package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/internal/usage"
)

// parsed runs abtest with args (old spellings rewritten, as Main does)
// up to the command's action, which is replaced by one that records
// every flag's value and the arguments (and, for matrix, the
// matrix.Request the flags make): what the arguments mean, nothing run.
func parsed(t *testing.T, args ...string) map[string]any {
	t.Helper()
	args, _ = usage.Rewrite(args)
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" },
		Getwd: func() (string, error) { return t.TempDir(), nil }, Now: func() time.Time { return time.Unix(1e9, 0) }}
	app := newApp(env)
	got := map[string]any{}
	cmd := app
	for _, a := range args {
		if c := cmd.Command(a); c != nil {
			cmd = c
		}
	}
	cmd.Action = func(_ context.Context, c *cli.Command) error {
		for _, f := range c.Flags {
			got[f.Names()[0]] = c.Value(f.Names()[0])
		}
		got["args"] = c.Args().Slice()
		if c.Name == "matrix" {
			req, err := matrixOptions(c, env).Request()
			got["request"], got["request error"] = req, fmt.Sprint(err)
		}
		return nil
	}
	if err := app.Run(context.Background(), append([]string{"abtest"}, args...)); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return got
}

// TestAliasHarnessSpellings: every spelling of the bash harness's README
// (switch_build.sh, bench.sh, bench_matrix.sh, perf record) and pgbench's
// -T, -j and -h are accepted and mean what abtest's own spelling means.
func TestAliasHarnessSpellings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ harness, abtest string }{
		{"switch -c a21bd27 -w lru", "switch --commit a21bd27 --worktree lru"},
		{"switch -w lru --patch my_fix.patch", "switch --worktree lru --patch my_fix.patch"},
		{"switch -w lru -b release", "switch --worktree lru --build release"},
		{"switch -w lru --build-type debug", "switch --worktree lru --build debug"},
		{"switch -w lru -m 5000 -p 5433", "switch --worktree lru --pgss-max 5000 --port 5433"},
		{"switch -w lru --max 5000", "switch --worktree lru --pgss-max 5000"},
		{"switch -w lru --recreate-cluster", "switch --worktree lru --recreate-cluster"},
		{"switch --remove -w lru", "switch --worktree lru --remove"},
		{"-n bench -d 30 -c 64 -w churn -p 5433", "--dry-run bench --duration 30 --clients 64 --workloads churn --port 5433"},
		{"bench -T 30 -j 8 -h /tmp", "bench --duration 30 --jobs 8 --host /tmp"},
		{"bench -M prepared -S 100 -C 2", "bench --protocol prepared --sleep 100 --cpus 2"},
		{"bench -w all", "bench --workloads select1,churn,slow_churn,within_max"},
		{"matrix -k base,patch -c 64 -w churn -d 30", "matrix --commits base,patch --clients 64 --workloads churn --duration 30"},
		{"matrix -k a,b -c 64,256 -C 16,96 -w churn -T 180", "matrix --commits a,b --clients 64,256 --cpus 16,96 --workloads churn --duration 180"},
		{"matrix -k a,b -w all --max 1000 --build-type debug", "matrix -k a,b -w select1,churn,slow_churn,within_max -m 1000 -b debug"},
		{"perf record -p 5433 -w lfu -d 10", "perf record --port 5433 --worktree lfu --duration 10"},
	} {
		h, a := parsed(t, strings.Fields(tc.harness)...), parsed(t, strings.Fields(tc.abtest)...)
		if len(h) == 0 || !reflect.DeepEqual(h, a) {
			t.Errorf("%q and %q differ:\n%v\n%v", tc.harness, tc.abtest, h, a)
		}
	}
	if r := parsed(t, strings.Fields("matrix -k a,b -w all")...)["request"]; !strings.Contains(fmt.Sprint(r), "[select1 churn slow_churn within_max]") {
		t.Errorf("-w all: request %v", r)
	}
}

// TestAliasBenchDryRun: in a dry run, bench -h HOST -T S -j N reach
// pgbench as its own -h, -T and -j (and -h is not help).
func TestAliasBenchDryRun(t *testing.T) {
	t.Parallel()
	code, out, stderr := abtest(t, nil, "-n", "bench", "-h", "/tmp", "-T", "7", "-j", "3", "-c", "6", "-w", "select1", "-p", "5433")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"pgbench ", " -c 6 ", " -j 3 ", " -T 7 ", " -p 5433 -h /tmp "} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
}
