package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNominalLevels: the exact boundaries' crossing probability over
// every look, estimated from simulated Brownian paths, is the spending
// function's α (not less, as the union bound's is; nor more, as a grid
// too coarse for 500 looks gave: 5.56 %), and the last of many looks
// keeps most of α where the union bound left it a sliver.
func TestNominalLevels(t *testing.T) {
	const alpha = 0.05
	if got := nominalLevels([]float64{1}, func(t float64) float64 { return obfSpend(t, alpha) }); math.Abs(got[0]-alpha) > 1e-9 {
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
		levels := nominalLevels(ts, func(t float64) float64 { return obfSpend(t, alpha) })
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
		if last < 0.5*alpha || last < 5*union {
			t.Errorf("%d looks: the last look's level %.4f (union bound's %.5f): want most of %.2f", len(ts), last, union, alpha)
		}
		t.Logf("%d looks: crossed %.4f (union bound %.4f); last look's level %.4f, union bound's %.5f", len(ts), p, float64(unionCrossed)/float64(tc.paths), last, union)
	}
}
