package dashboard_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/dashboard"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// verdictMark is how a page says better or worse: a verdict row or
// item, a count in the summary, a regression, the run-level line.
var verdictMark = regexp.MustCompile(`(data-verdict|class)="(count )?(better|worse)\b|<p class="geomean">[^<]*\b(better|worse)\b`)

// TestAANeverBetterOrWorseOnDashboard (issue 23): 100 synthetic A/A
// runs (4 configurations × 8 repeats, 2 % noise), imported into a store,
// show better or worse on their dashboard pages (compare page,
// configuration pages) and a regression on the index only where the
// analysis of their directory calls one, and the analysis calls one in
// at most 1 of them: each run's gate holds its family-wise error to α =
// 0.01 (measured: 5 of 1 200 such A/A runs, 0.4 %, so "none in 100"
// holds for a seed, not for every seed). A control run whose patch is
// 15 % slower shows worse on its compare page and a regression on the
// index.
func TestAANeverBetterOrWorseOnDashboard(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewSource(2312))
	var configs []results.Config
	for _, w := range []string{"select1", "churn"} {
		for _, c := range []int{1, 8} {
			configs = append(configs, results.Config{Workload: w, Clients: c, Settings: map[string]string{}})
		}
	}
	const runs = 100
	ids := map[string]int{}  // run id → run number, 0 the control
	called := map[int]bool{} // runs the analysis calls better or worse
	worse := 0               // of them, runs with a worse gated metric
	for run := range runs + 1 {
		effect := 1.0
		if run == 0 {
			effect = 0.85
		}
		dir := filepath.Join(root, "results", fmt.Sprintf("aa-%03d", run))
		_, err := storetest.Write(dir, storetest.Run{
			Created: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(run) * time.Hour), Seed: int64(run) + 1, Repeats: 8,
			Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"},
				{Label: "patch", SHA: storetest.BaseSHA, Patches: []results.Patch{{File: "x.patch", SHA256: "ffff"}}, Build: "patch"}},
			Configs: configs,
			Host:    host.Host{Hostname: "bench1", CPU: "Synthetic", NProc: 8, MemoryMB: 16384, Kernel: "6.1"},
			Value: func(k results.Commit, c results.Config, _ int) map[string]float64 {
				v := 4000 * float64(c.Clients) * (1 + 0.02*rng.NormFloat64())
				if k.Label == "patch" {
					v *= effect
				}
				return map[string]float64{results.MetricTPS: v, results.MetricLatencyP99: 1e4 / v}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analysis.AnalyzeDirs(analysis.Options{}, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rep.Rows {
			for _, st := range row.Stats {
				called[run] = called[run] || st.Verdict == results.Better || st.Verdict == results.Worse
			}
		}
		if len(rep.Regressions) > 0 {
			worse++
		}
		st, err := s.Import(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		ids[st.Run] = run
	}
	site, err := dashboard.Write(ctx, s, filepath.Join(root, "site"), dashboard.Options{})
	if err != nil {
		t.Fatal(err)
	}

	pages := 0
	for id, run := range ids {
		files, _ := filepath.Glob(filepath.Join(site.Dir, "runs", id+"*.html"))
		more, _ := filepath.Glob(filepath.Join(site.Dir, "runs", id, "*.html"))
		if len(files) == 0 || len(more) != len(configs) {
			t.Fatalf("run %d: %d compare pages, %d configuration pages", run, len(files), len(more))
		}
		var marks []string
		for _, p := range append(files, more...) {
			pages++
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range verdictMark.FindAllString(string(data), -1) {
				marks = append(marks, filepath.Base(p)+": "+m)
			}
		}
		switch {
		case run == 0 && !strings.Contains(strings.Join(marks, "\n"), "worse"):
			t.Errorf("control: a 15 %% slower patch is not worse on its pages")
		case run > 0 && len(marks) > 0 != called[run]:
			t.Errorf("A/A run %d: the analysis calls better or worse: %v; its pages say %q", run, called[run], marks)
		}
	}
	aa := 0
	for run := 1; run <= runs; run++ {
		if called[run] {
			aa++
		}
	}
	// The family's level is α = 0.01, two-sided: 10 of 1 000 simulated
	// A/A runs of this design (4 × r 8, 2 %) call better or worse since
	// the configurations' variances are moderated (issue 43), 5 before.
	// Of 100 runs at 1 %, more than 3 happen in 1.8 % of seeds.
	if !called[0] || aa > 3 {
		t.Errorf("the analysis calls better or worse in %d of %d A/A runs (want at most 3: the family's α is 1 %%), control %v", aa, runs, called[0])
	}
	index, err := os.ReadFile(site.Index)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(regexp.MustCompile(`data-sort="[1-9][0-9]*" class="worse"`).FindAll(index, -1)); n != worse {
		t.Errorf("the index shows regressions in %d runs, want %d (the control and the A/A runs the analysis calls worse)", n, worse)
	}
	t.Logf("%d pages of %d runs read; the analysis calls better or worse in %d of %d A/A runs", pages, len(ids), aa, runs)
}
