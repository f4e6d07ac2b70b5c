package gatesim

import (
	"math"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// demoRun is the recorded `make demo` run the analysis's tests resample.
var demoRun = filepath.Join("..", "..", "..", "demo", "testdata", "run")

// TestBlocksTakeTheChangeOut: blocks read from the recorded demo run (a
// real patch, select1 9 % slower in it by chance) draw noise around no
// change: over many draws the mean log ratio of each configuration is
// within 0.5 % of 0, and its spread within 10 % of the recorded one
// (the smoothing keeps the covariance); the drawn blocks are not the
// recorded ones (ties), and at 3× the spread triples.
func TestBlocksTakeTheChangeOut(t *testing.T) {
	b, err := ReadBlocks(demoRun)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Configs) != 2 || !strings.Contains(b.String(), "12 blocks") {
		t.Fatalf("%s: want select1 and churn, 12 blocks each", b)
	}
	rng := rand.New(rand.NewSource(1))
	for _, scale := range []float64{1, 3} {
		bs := b
		if scale != 1 {
			bs = b.Scaled(scale)
		}
		for k, want := range b.SpreadPct() {
			const n = 40000
			var sum, sq float64
			seen := map[[2]float64]bool{}
			for range n {
				x := bs.draw(rng, k)
				seen[x] = true
				d := math.Log(x[1] / x[0])
				sum += d
				sq += d * d
			}
			mean := sum / n
			sd := 100 * math.Sqrt(sq/n-mean*mean)
			if math.Abs(mean) > 0.005*scale || math.Abs(sd/(scale*want)-1) > 0.1 || len(seen) < n/2 {
				t.Errorf("%s ×%g: mean log ratio %.4f, sd %.2f%% (recorded %.2f%%), %d distinct of %d draws", b.Configs[k], scale, mean, sd, scale*want, len(seen), n)
			}
		}
	}
}

// TestBlocksRefuseWhatIsNotARun: a run whose cells all failed, whose TPS
// is 0, infinite or absent, or with one commit, gives no blocks and
// says why; cells of a third commit and a cell with no partner are left
// out.
func TestBlocksRefuseWhatIsNotARun(t *testing.T) {
	p, recs := Run(rand.New(rand.NewSource(1)), Design{Configs: 1, Repeats: 4, Noise: Noise{CV: 0.02}})
	for name, edit := range map[string]func(r *results.Record){
		"all failed": func(r *results.Record) { r.Status = results.StatusFailed },
		"tps 0":      func(r *results.Record) { r.Metrics.Set("tps", 0) },
		"tps +Inf":   func(r *results.Record) { r.Metrics.Set("tps", math.Inf(1)) },
		"no tps":     func(r *results.Record) { r.Metrics.Delete("tps") },
		"saturated":  func(r *results.Record) { r.Saturated = true },
	} {
		bad := make([]results.Record, len(recs))
		for i, r := range recs {
			r.Metrics = results.ValuesOf(map[string]float64{"tps": r.Metrics.Value("tps")})
			edit(&r)
			bad[i] = r
		}
		if _, err := BlocksOf(name, p, bad); err == nil || !strings.Contains(err.Error(), "no configuration has 3 blocks") {
			t.Errorf("%s: %v; want no blocks", name, err)
		}
	}
	one := *p
	one.Commits = p.Commits[:1]
	if _, err := BlocksOf("one commit", &one, recs); err == nil {
		t.Error("one commit: blocks")
	}
	// A third commit's cells and a lone cell are left out: 3 blocks.
	extra := append([]results.Record(nil), recs[:6]...) // blocks 1–3 of base and patch
	third := recs[0]
	third.Commit = "other"
	extra = append(extra, third, recs[6])
	b, err := BlocksOf("partial", p, extra)
	if err != nil || !strings.Contains(b.String(), ": 3 blocks") {
		t.Errorf("3 whole blocks, a third commit's cell and a lone cell: %v, %v; want 3 blocks", b, err)
	}
}

// TestDuplicate: a duplicate is a second record of one cell, its TPS
// scaled, the original's values untouched.
func TestDuplicate(t *testing.T) {
	_, recs := Run(rand.New(rand.NewSource(1)), Design{Configs: 2, Repeats: 3, Noise: Noise{CV: 0.02}})
	before := make([]float64, len(recs))
	for i, r := range recs {
		before[i] = r.Metrics.Value("tps")
	}
	out := Duplicate(rand.New(rand.NewSource(2)), recs, 0.5)
	dup := out[len(out)-1]
	n := 0
	for i, r := range out[:len(recs)] {
		if r.Metrics.Value("tps") != before[i] {
			t.Errorf("%s: tps %v, was %v", r.Cell, r.Metrics.Value("tps"), before[i])
		}
		if r.Cell == dup.Cell {
			n++
			if dup.Metrics.Value("tps") != before[i]/2 || dup.Repeat != r.Repeat || dup.Commit != r.Commit {
				t.Errorf("duplicate of %s: tps %v of %v, repeat %d, commit %s", r.Cell, dup.Metrics.Value("tps"), before[i], dup.Repeat, dup.Commit)
			}
		}
	}
	if len(out) != len(recs)+1 || n != 1 {
		t.Errorf("%d records of %d, %d originals of the duplicate", len(out), len(recs), n)
	}
}
