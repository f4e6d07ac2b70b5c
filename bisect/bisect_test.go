package bisect

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/worktree"
)

func request(dir string) *Request {
	return &Request{
		Good: "HEAD~3", Bad: "HEAD", Metric: "tps", Repeats: 2, MaxRepeats: 4, Dir: dir,
		Matrix: matrix.Request{
			Workloads: []string{"select1"}, Duration: 2 * time.Second, Protocol: "simple", Build: "release",
			Axes: map[string][]string{"clients": {"2"}, "settings": {"pg_stat_statements.max=1000"}},
		},
	}
}

func deps(t *testing.T) (*Deps, []string) {
	repo := testenv.NewRepo(t, map[string]string{"a.c": "int a;\n"})
	shas := []string{testenv.Git(t, repo, "rev-parse", "HEAD")}
	for i := 1; i <= 3; i++ {
		shas = append(shas, testenv.Commit(t, repo, "change "+string(rune('0'+i)), map[string]string{"a.c": strings.Repeat("x", i)}))
	}
	run := &proc.Runner{}
	return &Deps{Matrix: &matrix.Deps{Proc: run, Worktrees: &worktree.Manager{Source: repo, Root: t.TempDir(), Run: run}}}, shas
}

// TestPlanAndIdentity: the plan lists the first-parent commits from good
// to bad; the identity is resolved shas and the one configuration, and
// changes when anything that decides the measurements does.
func TestPlanAndIdentity(t *testing.T) {
	d, shas := deps(t)
	r := request(t.TempDir())
	id, revs, steps, err := Plan(d, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(revs) != 4 || revs[0].SHA != shas[0] || revs[3].SHA != shas[3] || revs[1].Subject != "change 1" || steps != 2 {
		t.Errorf("revs %+v, steps %d", revs, steps)
	}
	want := Identity{Good: shas[0], Bad: shas[3], Metric: "tps", Threshold: 3, Config: "select1/c2/cpuall/pgss.max=1000", DurationS: 2, Protocol: "simple", Build: "release"}
	if def := id.Threshold; def <= 0 {
		t.Errorf("threshold %v: want the metric's own", def)
	}
	want.Threshold = id.Threshold
	if id != want {
		t.Errorf("identity %+v\nwant %+v", id, want)
	}
	r.Matrix.Axes["rate"] = []string{"500"}
	if other, _ := Identify(d, r); other == id {
		t.Error("an offered rate gave the same identity as the closed loop")
	}
	delete(r.Matrix.Axes, "rate")
	r.Matrix.Axes["clients"] = []string{"4"}
	if other, _ := Identify(d, r); other == id {
		t.Error("another client count gave the same identity")
	}
}

// TestResumeIdentity: bisect.json resumes only the same bisection; a
// different one in the same directory is refused (exit 2), a broken file
// too.
func TestResumeIdentity(t *testing.T) {
	d, _ := deps(t)
	dir := t.TempDir()
	id, revs, _, err := Plan(d, request(dir))
	if err != nil {
		t.Fatal(err)
	}
	st := &State{Identity: id, Commits: revs, Lo: 1, Hi: 3, Result: -1, Steps: []Step{{Index: 1, SHA: revs[1].SHA, Verdict: LikeGood}}}
	if err := save(dir, st); err != nil {
		t.Fatal(err)
	}
	got, err := load(dir, id, revs)
	if err != nil || got.Lo != 1 || len(got.Steps) != 1 || got.Steps[0].Verdict != LikeGood {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	other := id
	other.Metric = "latency_p99_ms"
	if _, err := load(dir, other, revs); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "holds another bisect") {
		t.Errorf("another bisect: %v", err)
	}
	fresh, err := load(t.TempDir(), id, revs)
	if err != nil || fresh.Lo != 0 || fresh.Hi != 3 || fresh.Result != -1 {
		t.Errorf("fresh state %+v, %v", fresh, err)
	}
	os.WriteFile(filepath.Join(dir, "bisect.json"), []byte("{"), 0o644)
	if _, err := load(dir, id, revs); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("broken bisect.json: %v", err)
	}
}

func TestBadRequests(t *testing.T) {
	for name, mutate := range map[string]func(*Request){
		"no good":           func(r *Request) { r.Good = "" },
		"unknown metric":    func(r *Request) { r.Metric = "nope" },
		"max below repeats": func(r *Request) { r.MaxRepeats = 1 },
		"two workloads":     func(r *Request) { r.Matrix.Workloads = []string{"select1", "churn"} },
		"a settings axis":   func(r *Request) { r.Matrix.Axes["settings"] = []string{"pg_stat_statements.max=1000,5000"} },
		"zero duration":     func(r *Request) { r.Matrix.Duration = 0 },
		"an abtest setting": func(r *Request) {
			r.Matrix.Axes["settings"] = append(r.Matrix.Axes["settings"], "port=1")
		},
	} {
		r := request(t.TempDir())
		mutate(r)
		if err := r.Check(); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s: %v, want exit 2", name, err)
		}
	}
	for _, tc := range []struct {
		g, b results.Verdict
		want Verdict
	}{{results.Worse, results.Same, LikeBad}, {results.Unknown, results.Better, LikeGood}, {results.Same, results.Unknown, Inconclusive}, {results.Worse, results.Better, Inconclusive}, {results.Higher, results.Incomplete, LikeBad}} {
		if got := verdict(tc.g, tc.b); got != tc.want {
			t.Errorf("verdict(%s, %s) = %s, want %s", tc.g, tc.b, got, tc.want)
		}
	}
}

// TestExactMetricOneRepeat: an exact metric (instructions_per_tx) may be
// bisected with one repeat per step, in instruction cells only; a noisy
// one (tps) still needs two.
func TestExactMetricOneRepeat(t *testing.T) {
	r := request(t.TempDir())
	r.Metric, r.Repeats, r.MaxRepeats = "instructions_per_tx", 1, 1
	if err := r.Check(); err != nil {
		t.Fatalf("instructions_per_tx -r 1: %v", err)
	}
	m := r.step("good", "step", "bad", 1)
	if !m.InstructionsOnly || fmt.Sprint(m.Axes["clients"]) != "[1]" || r.Matrix.Axes["clients"][0] != "2" {
		t.Errorf("step request %+v: want instruction cells only, one client", m)
	}
	// One cell per arm and repeat, and no confirmation run: good and
	// bad differ by design, and a confirmation doubled every step.
	labels := []results.Commit{{Label: "good", Build: "good"}, {Label: "step", Build: "step"}, {Label: "bad", Build: "bad"}}
	for _, n := range []int{1, 2} {
		p, err := matrix.PlanFor(r.step("good", "step", "bad", n), labels)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Cells) != 3*n || !p.Options.NoInstrConfirm {
			t.Errorf("%d repeats: %d cells, no confirmation %v; want %d cells and none", n, len(p.Cells), p.Options.NoInstrConfirm, 3*n)
		}
	}
	r.Metric = "tps"
	if err := r.Check(); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("tps -r 1: %v, want exit 2", err)
	}
}
