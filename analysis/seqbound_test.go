package analysis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestNominalLevels: the exact boundaries' crossing probability over
// every look, estimated from simulated Brownian paths, is the spending
// function's α (not less, as the union bound's is; nor more, as a grid
// too coarse for 500 looks gave: 5.56 %), and the last of many looks
// keeps about ten times the union bound's sliver of α.
func TestNominalLevels(t *testing.T) {
	const alpha = 0.05
	if got := nominalLevels([]float64{1}, func(t float64) float64 { return alpha * spend(t) }); math.Abs(got[0]-alpha) > 1e-9 {
		t.Fatalf("one look: level %g, want %g", got[0], alpha)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		d     design
		paths int
	}{
		{design{alpha: 0.01, r0: 8, step: 8, limit: 200}, 200000},
		{design{alpha: 0.01, r0: 2, step: 2, limit: 1000}, 100000},
	} {
		d := tc.d
		ts := make([]float64, d.looks())
		for i := range ts {
			ts[i] = float64(d.n(i+1)) / float64(d.limit)
		}
		levels := nominalLevels(ts, func(t float64) float64 { return alpha * spend(t) })
		bounds, unionBounds := make([]float64, len(levels)), make([]float64, len(levels))
		for k, l := range levels {
			bounds[k], unionBounds[k] = zq(1-l), zq(1-alpha*d.share(k+1))
		}
		crossed, unionCrossed := 0, 0
		for range tc.paths {
			s, prev := 0.0, 0.0
			hit, unionHit := false, false
			for k, tk := range ts {
				s += math.Sqrt(tk-prev) * rng.NormFloat64()
				prev = tk
				z := s / math.Sqrt(tk)
				hit = hit || z >= bounds[k]
				unionHit = unionHit || z >= unionBounds[k]
			}
			if hit {
				crossed++
			}
			if unionHit {
				unionCrossed++
			}
		}
		p, se := float64(crossed)/float64(tc.paths), math.Sqrt(alpha*(1-alpha)/float64(tc.paths))
		if math.Abs(p-alpha) > 4*se {
			t.Errorf("%d looks: crossed in %.4f of paths, want %.4f ± %.4f", len(ts), p, alpha, 4*se)
		}
		last, union := levels[len(levels)-1], alpha*d.share(d.looks())
		if last < 5*union || last > alpha {
			t.Errorf("%d looks: the last look's level %.4f (union bound's %.5f): want ≥ 5 times it, ≤ %.2f", len(ts), last, union, alpha)
		}
		t.Logf("%d looks: crossed %.4f (union bound %.4f); last look's level %.4f, union bound's %.5f", len(ts), p, float64(unionCrossed)/float64(tc.paths), last, union)
	}
}

// TestPoolLooksOnWholeBlocks: a run-level test looks again only when
// every configuration it pools has the next look's pairs. With one part
// at 8 pairs and the other at 4 (its blocks not yet run), the pool stops
// at the first look: before, it was judged at the second look's level
// on the first look's pairs of the short part (a chance at each level
// with one set of data).
func TestPoolLooksOnWholeBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pair := func(n int) (b, c []float64) {
		for range n {
			x := 100 * (1 + 0.03*rng.NormFloat64())
			b, c = append(b, x), append(c, x*(1+0.10*rng.NormFloat64()))
		}
		return b, c
	}
	b1, c1 := pair(8)
	b2, c2 := pair(4)
	parts := []*test{newTest(tpsDef, 2, b1, c1, true), newTest(tpsDef, 2, b2, c2, true)}
	for _, p := range parts {
		p.role = primary
	}
	pool := &test{role: pooled, parts: parts, paired: true, log: true, bmed: 1, minEffect: 2}
	d := design{alpha: 0.01, r0: 4, step: 4, limit: 8}
	decide(append([]*test{pool}, parts...), d)
	if pool.verdict != results.Unknown {
		t.Fatalf("the pool was decided (%s) at the first look: the data must leave it open", pool.verdict)
	}
	if pool.look != 1 {
		t.Errorf("the pool looked %d times with one part at 4 of 8 pairs; want 1", pool.look)
	}
}
