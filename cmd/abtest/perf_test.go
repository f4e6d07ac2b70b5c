package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/perf/profiles"

	"github.com/google/pprof/driver"
	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/perf"
)

func perfCheck() error { return perf.Check() }

func writeTestProfile(t *testing.T, path string, spec map[string]int) {
	t.Helper()
	var evs []perf.Event
	for fn, n := range spec {
		for range n {
			evs = append(evs, perf.Event{Comm: "postgres", PID: 1, Period: 1000, Stack: []perf.Frame{{Addr: 1, Func: fn, DSO: "/bin/postgres"}, {Addr: 2, Func: "PostgresMain", DSO: "/bin/postgres"}}})
		}
	}
	if err := profiles.Write(perf.Profile(evs, 1000), path); err != nil {
		t.Fatal(err)
	}
}

// viewForTest runs `perf view FILE --diff-base BASE` with a server that
// hands pprof's handlers to check and returns.
func viewForTest(t *testing.T, file, base string, check func(http.Handler)) error {
	env := &Env{Stdout: &strings.Builder{}, Stderr: &strings.Builder{}, Getenv: func(string) string { return "" }}
	cmd := &cli.Command{
		Name: "view",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "diff-base"},
			&cli.StringFlag{Name: "http", Value: "127.0.0.1:0"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return runPerfView(ctx, cmd, env, func(a *driver.HTTPServerArgs) error {
				mux := http.NewServeMux()
				for p, h := range a.Handlers {
					mux.Handle(p, h)
				}
				check(mux)
				return nil
			})
		},
	}
	return cmd.Run(context.Background(), []string{"view", "--diff-base", base, file})
}

// TestPerfRecordNamedCluster: perf record -w NAME finds abtest's own
// cluster as root too (its state files belong to the server's account)
// and writes a profile of its processes.
func TestPerfRecordNamedCluster(t *testing.T) {
	testenv.RequireTools(t, "perf")
	env, install := clusterEnv(t)
	if code, out, stderr := abtest(t, env, "switch", "--worktree", "pg", "--install", install, "-p", "auto"); code != 0 {
		t.Fatalf("switch: exit %d\n%s%s", code, out, stderr)
	}
	out := filepath.Join(t.TempDir(), "p.pb.gz")
	code, stdout, stderr := abtest(t, env, "perf", "record", "--worktree", "pg", "-d", "1", "-o", out)
	if code != 0 {
		t.Fatalf("perf record -w pg: exit %d\n%s%s", code, stdout, stderr)
	}
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Errorf("no profile at %s: %v", out, err)
	}
	if code, _, stderr := abtest(t, env, "perf", "record", "--worktree", "nosuch", "-d", "1", "-o", out+"2"); code == 0 || strings.Contains(stderr, "\n\n") {
		t.Errorf("perf record -w nosuch: exit %d, %q", code, stderr)
	}
}
