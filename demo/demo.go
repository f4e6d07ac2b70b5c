// Package demo is `abtest demo` as a library: the patch it ships inside
// the binary, the directories it keeps apart from the user's, and the
// matrix it runs (the source's HEAD against HEAD + the patch).
package demo

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/matrix"
)

// PatchName is the file name the demo patch is written under.
const PatchName = "usage_dealloc_percent.patch"

// Patch raises pg_stat_statements' USAGE_DEALLOC_PERCENT from 5 to 20
// (fewer, bigger evictions). It applies to PostgreSQL 13 through 18.
//
//go:embed usage_dealloc_percent.patch
var Patch []byte

// Defaults are the demo's configuration defaults: the user's defaults
// with the demo's own directories under root. The config file, the
// environment and flags still override them (config's precedence).
func Defaults(home, root string) config.Config {
	c := config.Default(home)
	c.WorktreesDir = filepath.Join(root, "worktrees")
	c.InstallDir = filepath.Join(root, "install")
	c.DataDir = filepath.Join(root, "data")
	c.ResultsDir = filepath.Join(root, "results")
	return c
}

// Request is the demo's matrix: select1 and churn with
// pg_stat_statements.max = 1000 at 8 clients, HEAD against HEAD + the
// patch written at patch. Two configurations, many short repeats: the
// paired test's smallest p-value is 2/2^n, and Holm over the demo's
// gated tests needs about 12 pairs before any change can be called (at
// 5 repeats of 4 configurations every gated verdict was "unknown").
func Request(patch string, duration time.Duration, repeats int, seed int64) matrix.Request {
	return matrix.Request{
		Commits:      []matrix.Commit{{Label: "base", Ref: "HEAD"}, {Label: "patch", Ref: "HEAD", Patches: []string{patch}}},
		NameTemplate: "demo-%c",
		Workloads:    []string{"select1", "churn"},
		Axes:         map[string][]string{"clients": {"8"}, "settings": {"pg_stat_statements.max=1000"}},
		Repeats:      repeats, Duration: duration, Warmup: time.Second,
		Protocol: "simple", Build: build.Release, Order: matrix.ABBA, Seed: seed,
	}
}

// Repeats and Duration are the demo's defaults: 48 cells of 3 s.
const (
	Repeats  = 12
	Duration = 3 * time.Second
)

// CheckSource refuses a configuration that names no PostgreSQL source:
// the demo's defaults cannot guess one.
func CheckSource(cfg *config.Loaded) error {
	if cfg.SourceOf("source_dir").Kind == "default" {
		return exitcode.BadInputf("demo: no PostgreSQL source: pass --source DIR or set PG_SOURCE_DIR (make demo prepares one from Debian's source package)")
	}
	return nil
}

// WritePatch writes Patch into root (made when missing) and returns its
// path: matrix.Prepare hashes the file. For a dry run it goes to a new
// temporary directory instead, which cleanup removes, so that a dry run
// changes nothing.
func WritePatch(root string, dryRun bool) (path string, cleanup func(), err error) {
	dir, cleanup := root, func() {}
	if dryRun {
		if dir, err = os.MkdirTemp("", "abtest-demo-"); err != nil {
			return "", cleanup, exitcode.Failure(err)
		}
		cleanup = func() { os.RemoveAll(dir) }
	} else if err := safefile.MkdirAll(root, 0o755); err != nil {
		return "", cleanup, exitcode.Failure(err)
	}
	path = filepath.Join(dir, PatchName)
	if err := safefile.WriteFile(path, Patch, 0o644); err != nil {
		cleanup()
		return "", func() {}, exitcode.Failure(err)
	}
	return path, cleanup, nil
}

// Reuse is what the demo prints at its end: the environment that points
// abtest at the demo's source and directories, and the matrix command
// that measures the same two builds again (their labels, demo-base and
// demo-patch, are its build names, so nothing is rebuilt; the patch is
// the one the demo wrote under root). `abtest status` with it lists the
// demo's worktrees; its clusters are m-demo-base and m-demo-patch.
func Reuse(c *config.Config, root string) string {
	var b strings.Builder
	b.WriteString("To reuse the demo's builds (abtest status lists them; abtest env m-demo-base is its cluster), run:\n")
	for _, kv := range [][2]string{
		{"PG_SOURCE_DIR", c.SourceDir}, {"PG_WORKTREES_DIR", c.WorktreesDir}, {"PG_INSTALL_DIR", c.InstallDir},
		{"PG_DATA_DIR", c.DataDir}, {"BENCH_RESULTS_DIR", c.ResultsDir},
	} {
		fmt.Fprintf(&b, "  export %s=%s\n", kv[0], proc.Quote(kv[1]))
	}
	fmt.Fprintf(&b, "  abtest matrix -k %s -w select1,churn -c 8 -m 1000 -r %d -d %g --warmup 1\n",
		proc.Quote("demo-base=HEAD,demo-patch=HEAD+"+filepath.Join(root, PatchName)), Repeats, Duration.Seconds())
	return b.String()
}
