package build_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/worktree"
)

// TestMeasuredEstimateColdPG15 builds the PostgreSQL 15 tree cold
// (without ccache, in a fresh worktree and install root: no record) and
// shows the estimate from the reference, the estimate measured from the
// first compile units, and the real duration. A cold build takes minutes
// and the whole machine: it runs only with ABTEST_COLD_BUILD=1.
func TestMeasuredEstimateColdPG15(t *testing.T) {
	if os.Getenv("ABTEST_COLD_BUILD") != "1" {
		t.Skip("a cold build of minutes: ABTEST_COLD_BUILD=1 runs it")
	}
	testenv.RequireTools(t, "cc", "make")
	source := testenv.PG15Source(t)
	root := testenv.SharedTempDir(t)
	run := &proc.Runner{}
	wts := &worktree.Manager{Source: source, Root: filepath.Join(root, "wt"), Run: run}
	b := &build.Builder{WorktreesRoot: filepath.Join(root, "wt"), InstallRoot: filepath.Join(root, "install"), Run: run}
	if name := testenv.ServerUser(t); name != "" {
		u, err := proc.LookupUser(name)
		if err != nil {
			t.Fatal(err)
		}
		b.User = u
	}
	ctx := context.Background()
	if _, err := wts.Switch(ctx, "cold", "base"); err != nil {
		t.Fatal(err)
	}
	prov, err := wts.Info(ctx, "cold")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rec := &progress.Recorder{Next: progress.New(&out, progress.Options{})}
	start := time.Now()
	res, err := b.BuildShown(ctx, rec, prov, filepath.Join(root, "wt", "cold"), build.Options{Type: build.Release, NoCCache: true})
	took := time.Since(start)
	t.Logf("console:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("real: %s (configure %.1f s, compile %.1f s, install %.1f s)", took.Round(time.Second), res.Info.Seconds.Configure, res.Info.Seconds.Compile, res.Info.Seconds.Install)
	// The record has the build's curve, for the next build to measure
	// against: every object file of the tree, in order.
	c := res.Info.Curve
	t.Logf("curve (units, seconds into the compile phase): %v", c)
	if len(c) < 32 || c[len(c)-1].Units < 1000 || c[len(c)-1].Seconds > res.Info.Seconds.Compile {
		t.Errorf("the record's curve %v: want the tree's units along its compile phase", c)
	}
	var measured []progress.Event
	for _, e := range rec.Events() {
		switch e.Kind {
		case progress.BuildStart:
			t.Logf("before: %s (%s), off by %+.0f %%", e.Estimate.Round(time.Second), e.From, 100*(e.Estimate.Seconds()/took.Seconds()-1))
			if !regexp.MustCompile(`^cold: reference, not this machine`).MatchString(e.From) {
				t.Errorf("the first estimate does not say it is a reference: %q", e.From)
			}
		case progress.Estimated:
			measured = append(measured, e)
			t.Logf("measured: %s (%s), off by %+.0f %%", e.Estimate.Round(time.Second), e.From, 100*(e.Estimate.Seconds()/took.Seconds()-1))
		}
	}
	if len(measured) == 0 {
		t.Fatal("no estimate measured during the build")
	}
	if d := measured[0].Estimate; d < took*2/3 || d > took*3/2 {
		t.Errorf("the first measured estimate %s is not within -33 %%/+50 %% of the real %s", d, took)
	}
}
