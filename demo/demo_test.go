package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"

	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// TestRequestPlan: the demo's matrix is HEAD against HEAD + the patch,
// select1 and churn at 8 clients, 12 repeats of 3 s, one pg_stat_statements.max; its
// directories are its own, under root.
func TestRequestPlan(t *testing.T) {
	req := Request("/r/"+PatchName, Duration, Repeats, 1)
	commits := []results.Commit{{Label: "base", Ref: "HEAD", SHA: "aa", Build: "demo-base"},
		{Label: "patch", Ref: "HEAD", SHA: "aa", Build: "demo-patch", Patches: []results.Patch{{File: "/r/" + PatchName, SHA256: "ff"}}}}
	p, err := matrix.PlanFor(req, commits)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Configs) != 2 || len(p.Cells) != 2*2*12 || p.Baseline != "base" || p.Options.WarmupS != 1 || p.Options.DurationS != 3 {
		t.Errorf("plan: %d configurations, %d cells, baseline %s, warm-up %v", len(p.Configs), len(p.Cells), p.Baseline, p.Options.WarmupS)
	}
	if req.Commits[1].Patches[0] != "/r/"+PatchName || req.NameTemplate != "demo-%c" {
		t.Errorf("request %+v", req)
	}
	d := Defaults("/h", "/r")
	if d.DataDir != "/r/data" || d.ResultsDir != "/r/results" || d.SourceDir != "/h/pg/source" {
		t.Errorf("defaults %+v", d)
	}
	if config.DemoRoot("", true, "/h") != "/var/tmp/abtest-demo" || config.DemoRoot("", false, "/h") != "/h/.cache/abtest-demo" {
		t.Error("root")
	}
}

// TestWritePatchAndSource: the patch lands in the root (made), or for a
// dry run in a temporary directory that cleanup removes, the root left
// absent; $ABTEST_DEMO_DIR wins; no source is exit 2.
func TestWritePatchAndSource(t *testing.T) {
	root := filepath.Join(t.TempDir(), "demo")
	p, cleanup, err := WritePatch(root, true)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); !bytes.Equal(data, Patch) || strings.HasPrefix(p, root) {
		t.Errorf("dry-run patch at %s", p)
	}
	cleanup()
	if _, err := os.Stat(p); err == nil {
		t.Error("cleanup left the dry run's patch")
	}
	if _, err := os.Stat(root); err == nil {
		t.Error("a dry run made the root")
	}
	p, cleanup, err = WritePatch(root, false)
	defer cleanup()
	if err != nil || p != filepath.Join(root, PatchName) {
		t.Fatalf("patch at %s, %v", p, err)
	}
	if config.DemoRoot("/d", true, "/h") != "/d" {
		t.Error("DemoRoot")
	}
	cfg, err := config.Load(config.Options{Dir: t.TempDir(), Home: "/h"})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSource(cfg); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("no source: %v", err)
	}
	cfg, _ = config.Load(config.Options{Dir: t.TempDir(), Home: "/h", Getenv: func(k string) string { return map[string]string{"PG_SOURCE_DIR": "/src"}[k] }})
	if err := CheckSource(cfg); err != nil {
		t.Errorf("PG_SOURCE_DIR set: %v", err)
	}
}

// TestReuse: the environment the demo prints, read back by config.Load
// as an ordinary command would, names the demo's own directories (so
// `abtest status` with it lists the demo's worktrees); paths are quoted
// for the shell.
func TestReuse(t *testing.T) {
	d := Defaults("/h", "/var/tmp/abtest demo")
	d.SourceDir = "/src/pg"
	out := Reuse(&d, "/var/tmp/abtest demo")
	env := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if kv, ok := strings.CutPrefix(l, "  export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = strings.Trim(v, "'")
		}
	}
	if len(env) != 5 || !strings.Contains(out, "'/var/tmp/abtest demo/worktrees'") ||
		!strings.Contains(out, "\n  abtest matrix -k 'demo-base=HEAD,demo-patch=HEAD+/var/tmp/abtest demo/"+PatchName+"' -w select1,churn -c 8 -m 1000 -r 12 -d 3 --warmup 1\n") {
		t.Fatalf("exports %v in\n%s", env, out)
	}
	l, err := config.Load(config.Options{Dir: t.TempDir(), Home: "/elsewhere", Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	got := l.Config
	if got.SourceDir != d.SourceDir || got.WorktreesDir != d.WorktreesDir || got.InstallDir != d.InstallDir || got.DataDir != d.DataDir || got.ResultsDir != d.ResultsDir {
		t.Errorf("loaded %+v, want the demo's directories %+v", got, d)
	}
}
