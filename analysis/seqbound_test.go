package analysis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNominalLevels: the exact boundaries' crossing probability over
// every look, estimated from simulated Brownian paths, is the spending
// function's α (not less, as the union bound's is), and the last of
// many looks keeps most of α where the union bound left it a sliver.
func TestNominalLevels(t *testing.T) {
	const alpha = 0.05
	if got := nominalLevels([]float64{1}, func(t float64) float64 { return obfSpend(t, alpha) }); math.Abs(got[0]-alpha) > 1e-9 {
		t.Fatalf("one look: level %g, want %g", got[0], alpha)
	}
	d := design{alpha: 0.01, r0: 8, step: 8, limit: 200}
	ts := make([]float64, d.looks())
	for i := range ts {
		ts[i] = float64(d.n(i+1)) / float64(d.limit)
	}
	levels := nominalLevels(ts, func(t float64) float64 { return obfSpend(t, alpha) })
	rng := rand.New(rand.NewPCG(1, 2))
	const paths = 200000
	crossed, unionCrossed := 0, 0
	for range paths {
		s, prev := 0.0, 0.0
		hit, unionHit := false, false
		for k, tk := range ts {
			s += math.Sqrt(tk-prev) * rng.NormFloat64()
			prev = tk
			z := s / math.Sqrt(tk)
			hit = hit || z >= zq(1-levels[k])
			unionHit = unionHit || z >= zq(1-EquivalenceAlpha(d.alpha)*d.share(k+1))
		}
		if hit {
			crossed++
		}
		if unionHit {
			unionCrossed++
		}
	}
	p, se := float64(crossed)/paths, math.Sqrt(alpha*(1-alpha)/paths)
	if math.Abs(p-alpha) > 4*se {
		t.Errorf("%d looks: crossed in %.4f of paths, want %.4f ± %.4f", len(ts), p, alpha, 4*se)
	}
	last := levels[len(levels)-1]
	if union := EquivalenceAlpha(d.alpha) * d.share(d.looks()); last < 0.5*alpha || last < 5*union {
		t.Errorf("last look's level %.4f (union bound's %.5f): want most of %.2f", last, union, alpha)
	}
	t.Logf("%d looks: crossed %.4f (union bound %.4f); last look's level %.4f, union bound's %.5f", len(ts), p, float64(unionCrossed)/paths, last, EquivalenceAlpha(d.alpha)*d.share(d.looks()))
}
