package matrix

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// prebuiltDeps runs cells on Debian's PostgreSQL binaries, in dirs the
// server account can reach; every cluster is stopped at the end.
func prebuiltDeps(t *testing.T) (*Deps, string) {
	install := testenv.PGInstall(t)
	cm := testpg.Manager(t)
	return &Deps{Proc: cm.Run, Clusters: cm, Workload: &workload.Runner{Proc: cm.Run, Getenv: func(string) string { return "" }}, SampleEvery: time.Second}, install
}

// plumbing are the axes of the cells of tests whose proof is no figure
// (files, records, looks, servers, progress): one client, open-loop at
// 500 tx/s, where a closed loop of select1 kept both cores busy in
// pgbench's and the backend's send and receive for nothing the test
// reads (issue 27: about 70 % of such a test's CPU was postgres and
// pgbench in the kernel); more are axis names and one item each, set
// over those.
func plumbing(more ...string) map[string][]string {
	m := map[string][]string{"clients": {"1"}, "rate": {"500"}}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = []string{more[i+1]}
	}
	return m
}

// TestRunUntilDecided: the Decider is asked after the planned repeats
// (look 1) and after each extra one; undecided configurations get a new
// repeat appended to plan.json and run; a resume in the middle runs the
// missing cells of the extra repeat first, then asks the next look.
// Its cells run open-loop (plumbing): the looks and the plan are
// the proof, no figure; alone 4.7 CPU-s against 14.5 closed-loop, both
// 13 s of wall (load 1.2-1.5, another agent's tests beside).
func TestRunUntilDecided(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: plumbing("clients", "1,2"), Repeats: 1, Duration: time.Second, Protocol: "simple",
		Adaptive: Adaptive{UntilDecided: true, MaxRepeats: 4},
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	var looks []int
	undecided := []string{plan.Configs[1].ID()} // c2 needs more, c1 does not
	deps.Decide = func(dir string, look int) ([]string, error) {
		looks = append(looks, look)
		if look >= 3 {
			return nil, nil
		}
		return undecided, nil
	}
	var out strings.Builder
	deps.Out = &out
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !slices.Equal(looks, []int{1, 2, 3}) {
		t.Errorf("looks %v, want [1 2 3]", looks)
	}
	stored, _ := results.ReadPlan(dir)
	var extra []string
	for _, c := range stored.Cells {
		if c.Repeat > 1 {
			extra = append(extra, c.ID)
			if c.Config.ID() != undecided[0] {
				t.Errorf("extra cell %s of a decided configuration", c.ID)
			}
		}
	}
	if len(stored.Cells) != 4+4 || len(extra) != 4 {
		t.Errorf("plan.json: %d cells, extra %v", len(stored.Cells), extra)
	}
	recs, _, _ := results.ReadRecords(dir)
	if len(recs) != 8 {
		t.Fatalf("%d records, want 8", len(recs))
	}

	// Resume in the middle of repeat 3: drop its last record.
	data, _ := os.ReadFile(filepath.Join(dir, results.CellsFile))
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(strings.Join(lines[:len(lines)-1], "")+"\n"), 0o644)
	looks = nil
	out.Reset()
	stored, err = results.ReadPlan(dir)
	if err == nil {
		err = Run(context.Background(), deps, stored, dir)
	}
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	if recs, _, _ := results.ReadRecords(dir); len(recs) != 8 || !strings.Contains(out.String(), "7 of 8 cells done") {
		t.Errorf("resume: %d records\n%s", len(recs), out.String())
	}
	if !slices.Equal(looks, []int{3}) {
		t.Errorf("looks on resume %v, want [3]", looks)
	}
}

// TestRunUntilDecidedSteps: a look adds -r blocks, not one (the looks
// share α: fewer looks keep more of it each), interleaved repeat by
// repeat, and the plan records the step for the analysis. Open-loop
// (plumbing): alone 3.9 CPU-s against 11.7 closed-loop, both 14 s
// of wall (load 1.6).
func TestRunUntilDecidedSteps(t *testing.T) {
	t.Parallel()
	deps, install := prebuiltDeps(t)
	req := Request{
		Commits:   []Commit{{Label: "a", Install: install}, {Label: "b", Install: install}},
		Workloads: []string{"select1"}, Axes: plumbing(), Repeats: 2, Duration: time.Second, Protocol: "simple",
		Adaptive: Adaptive{UntilDecided: true, MaxRepeats: 5},
	}
	plan, err := Prepare(context.Background(), deps, req)
	if err != nil {
		t.Fatal(err)
	}
	var looks []int
	deps.Decide = func(dir string, look int) ([]string, error) {
		looks = append(looks, look)
		return []string{plan.Configs[0].ID()}, nil // never decided
	}
	var out strings.Builder
	deps.Out = &out
	dir := filepath.Join(testenv.SharedTempDir(t), "r")
	if err := Run(context.Background(), deps, plan, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	stored, _ := results.ReadPlan(dir)
	var reps []int
	for _, c := range stored.Cells {
		reps = append(reps, c.Repeat)
	}
	if stored.Options.UntilStep != 2 || !slices.Equal(reps, []int{1, 1, 2, 2, 3, 3, 4, 4, 5, 5}) || !slices.Equal(looks, []int{1, 2, 3}) {
		t.Errorf("step %d, repeats %v, looks %v", stored.Options.UntilStep, reps, looks)
	}
	for _, want := range []string{"undecided after 2 repeats: repeats 3–4", "undecided after 4 repeats: repeat 5", "1 configuration(s) still undecided at --max-repeats 5"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
