package analysis

// Tests of the helpers that were written twice (issue 41) and are one
// now: what each former copy did, the merged one still does.

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWriteDiffsBothSections: one loop writes perf's and the
// instructions' diff profiles, each under its own prefix with the
// configuration made file-safe, records the path relative to relTo,
// and skips an entry without a diff; a link planted at a diff's name
// is refused, never followed, and its target is left as it was.
func TestWriteDiffsBothSections(t *testing.T) {
	p := synthProfile(rand.New(rand.NewPCG(1, 2)), serverMix, 50)
	root := t.TempDir()
	dir := filepath.Join(root, "plots")
	if err := plotsDir(dir); err != nil {
		t.Fatal(err)
	}
	r := &Report{
		TimeWent:     []TimeWent{{Config: "select1/c4/../x", Commit: "patch", diff: p}, {Config: "select1/c8", Commit: "patch"}},
		Instructions: []InstrWent{{Config: "select1/instr/cpuall", Commit: "patch", diff: p}},
	}
	if err := r.writeDiffs(dir, root); err != nil {
		t.Fatal(err)
	}
	want := []struct{ got, path string }{
		{r.TimeWent[0].Diff, "plots/diff-select1_c4_.._x-patch.pb.gz"},
		{r.TimeWent[1].Diff, ""},
		{r.Instructions[0].DiffProfile, "plots/instr-diff-select1_instr_cpuall-patch.pb.gz"},
	}
	for _, w := range want {
		if w.got != w.path {
			t.Errorf("diff recorded as %q, want %q", w.got, w.path)
		}
		if w.path == "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(root, w.path)); err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			t.Errorf("%s: %v %v", w.path, fi, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in %s, want the 2 diffs", len(entries), dir)
	}

	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "instr-diff-other-patch.pb.gz")); err != nil {
		t.Fatal(err)
	}
	r = &Report{Instructions: []InstrWent{{Config: "other", Commit: "patch", diff: p}}}
	if err := r.writeDiffs(dir, root); err == nil || r.Instructions[0].DiffProfile != "" {
		t.Errorf("through a planted link: err %v, recorded %q", err, r.Instructions[0].DiffProfile)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the link's target became %q", b)
	}
}

// TestHolmGraphIsHolm: holm rejects what the graph procedure rejects
// on the complete graph with equal weights (Holm's procedure as a
// graph, which judged the event counts before), with the same weights,
// over random families with ties, NaN, p-values of 0 and 1 and many
// near the first threshold; at a threshold itself holm does not reject
// (p < α/(m−i)), where the graph's summed weights may.
func TestHolmGraphIsHolm(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 4))
	for trial := range 3000 {
		m := 1 + rng.IntN(40)
		alpha := []float64{0.01, 0.05, 0.2}[trial%3]
		ps := make([]float64, m)
		for i := range ps {
			switch u := rng.Float64(); {
			case u < 0.1 && i > 0:
				ps[i] = ps[rng.IntN(i)] // a tie
			case u < 0.15:
				ps[i] = 0
			case u < 0.2:
				ps[i] = 1
			case u < 0.22:
				ps[i] = math.NaN()
			default:
				// Mostly small, so that families reject a few and stop.
				ps[i] = alpha * math.Pow(rng.Float64(), 2) * 3
			}
		}
		g := graph{w: make([]float64, m), g: newMatrix(m)}
		all := make([]int, m)
		for i := range all {
			all[i] = i
		}
		holmEdges(g, all)
		got, w := holm(ps, alpha)
		want, gw := g.reject(ps, alpha)
		rejected := 0
		for i := range ps {
			if got[i] {
				rejected++
			}
			if math.Abs(w[i]-gw[i]) > 1e-12 {
				t.Fatalf("m %d α %g: p %v\nholm's weights  %v\ngraph's weights %v", m, alpha, ps, w, gw)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("m %d α %g: p %v\nholm rejects  %v\ngraph rejects %v", m, alpha, ps, got, want)
		}
		if trial < 10 {
			t.Logf("m %d α %g: %d rejected", m, alpha, rejected)
		}
	}
	for m := 1; m <= 30; m++ {
		for k := range m {
			ps := make([]float64, m)
			for i := range ps {
				ps[i] = float64(min(1, max(0, i-k+1)))
			}
			ps[k] = 0.05 / float64(m-k)
			if got, _ := holm(ps, 0.05); got[k] || k > 0 && !got[k-1] {
				t.Fatalf("m %d: the %d-th p %g, at its threshold: rejected %v", m, k, ps[k], got)
			}
		}
	}
}
