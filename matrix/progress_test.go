package matrix

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/testing/testbuild"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/results"
)

// tinyPatch adds a file to the tree: another build for the same source.
const tinyPatch = "diff --git a/progress-note.txt b/progress-note.txt\nnew file mode 100644\n--- /dev/null\n+++ b/progress-note.txt\n@@ -0,0 +1 @@\n+progress\n"

// TestProgressGolden is the console of a small real matrix: PostgreSQL
// 15 from source, base (its build installed already: "up to date")
// against base + tiny.patch, whose build record is removed first so that
// the matrix builds it again (make finds nothing to compile, then
// installs). The run's events are recorded, their times, paths, shas and
// measurements normalised, and replayed with a fixed clock through the
// renderer on a terminal and not; both outputs are golden files. The -n
// estimate (builds included) is compared with the wall time. The cells
// run open-loop (plumbing, r500 in their names): the console is
// the proof, not the figures it prints, which are normalised away;
// alone 13.6 CPU-s against 15.8 closed-loop, most of it the build
// (load 1.6-1.8).
func TestProgressGolden(t *testing.T) {
	setup := time.Now()
	e := testbuild.PG15(t)
	release := build.Options{Type: build.Release}
	e.Build(t, "pg15-base", "base", nil, release)
	testbuild.Own(t, "pg15-tiny") // its record goes, and the matrix builds it again
	patch := filepath.Join(t.TempDir(), "tiny.patch")
	if err := os.WriteFile(patch, []byte(tinyPatch), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := e.Build(t, "pg15-tiny", "base", []string{patch}, release).Info.Install
	if err := os.Remove(filepath.Join(tiny, build.InfoFile)); err != nil {
		t.Fatal(err)
	}
	t.Logf("setup (build locks, cached builds): %s", time.Since(setup).Round(time.Second))
	deps, _ := prebuiltDeps(t)
	b := *e.B
	b.Servers = deps.Clusters
	deps.Worktrees, deps.Builder = e.WT, &b
	req := Request{
		Commits:      []Commit{{Label: "base", Ref: "base"}, {Label: "tiny", Ref: "base", Patches: []string{patch}}},
		NameTemplate: "pg15-%c", Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 1,
		Duration: time.Second, Protocol: "simple", Build: build.Release, Seed: 1,
	}
	ctx := context.Background()
	plan, err := Prepare(ctx, deps, req)
	if err != nil {
		t.Fatal(err)
	}
	builds := EstimateBuilds(ctx, deps, plan)
	var dry strings.Builder
	PrintPlan(&dry, plan, "DIR", builds)
	t.Logf("-n:\n%s", dry.String())
	if len(builds) != 2 || builds[0].Kind != build.Cached || builds[1].Kind == build.Cached {
		t.Errorf("build estimates %+v: want pg15-base cached, pg15-tiny not", builds)
	}
	var live strings.Builder
	rec := &progress.Recorder{Next: progress.New(&live, progress.Options{})}
	deps.Progress = rec
	t0 := time.Now()
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	if err := Run(ctx, deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, live.String())
	}
	wall := time.Since(t0)
	t.Logf("live:\n%s", live.String())
	est := Estimate(plan) + builds[0].Duration + builds[1].Duration
	t.Logf("estimate %s (builds %s + %s, cells %s), wall %s: %+.0f%%", est.Round(time.Second), builds[0].Duration.Round(time.Second),
		builds[1].Duration.Round(time.Second), Estimate(plan), wall.Round(time.Second), 100*(est.Seconds()/wall.Seconds()-1))
	events := normalise(rec.Events(), e.Installs)
	for _, tty := range []bool{false, true} {
		var out strings.Builder
		start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		tick := func() time.Time { start = start.Add(1500 * time.Millisecond); return start }
		progress.Replay(progress.New(&out, progress.Options{TTY: tty, Now: tick, Width: 100}), events)
		name := "progress-lines.txt"
		if tty {
			name = "progress-tty.txt"
		}
		testenv.Golden(t, name, strings.ReplaceAll(out.String(), "\r\x1b[K", `\r\e[K`))
	}
	for _, want := range []string{"build pg15-base (base ", "up to date (fingerprint ", "build pg15-tiny (base ", " + tiny.patch): ", "build pg15-tiny: install (", "build pg15-tiny: built in ", "[2/2] ", "\ntotal "} {
		if !strings.Contains(live.String(), want) {
			t.Errorf("no %q in the live output", want)
		}
	}
	recs, _, _ := results.ReadRecords(dir)
	if len(recs) != 2 {
		t.Errorf("%d cells recorded, want 2", len(recs))
	}
}

var (
	shaRE     = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	numberRE  = regexp.MustCompile(`=[0-9.]+`)
	ccacheRE  = regexp.MustCompile(`ccache [0-9.]+% hits \(\d+/\d+\)`)
	versionRE = regexp.MustCompile(`; [^;]*PostgreSQL.*$`)
)

// normalise makes a run's events the same from run to run: shas,
// fingerprints, the install root, the estimate's source and duration,
// ccache counts, the version and the measurements.
func normalise(events []progress.Event, installs string) []progress.Event {
	out := make([]progress.Event, len(events))
	for i, e := range events {
		e.Detail = shaRE.ReplaceAllString(e.Detail, "<sha>")
		e.From = shaRE.ReplaceAllString(e.From, "<fp>")
		e.Log = strings.ReplaceAll(e.Log, installs, "$PG_INSTALL_DIR")
		if e.Kind == progress.BuildStart {
			kind, _, _ := strings.Cut(e.From, ":")
			e.From, e.Estimate = kind+": <from the build records>", 20*time.Second
		}
		e.Detail = versionRE.ReplaceAllString(ccacheRE.ReplaceAllString(e.Detail, "ccache <hits>"), "; <version>")
		if e.Kind == progress.CellDone && !e.Failed {
			e.Detail = numberRE.ReplaceAllString(e.Detail, "=<n>")
		}
		out[i] = e
	}
	return out
}
