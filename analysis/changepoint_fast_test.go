package analysis

import (
	"math"
	"math/rand"
	"testing"
)

// qStat is the energy statistic Q̂ of splitting a sample into a and b,
// by its definition (O(n²)).
func qStat(a, b []float64) float64 {
	m, n := float64(len(a)), float64(len(b))
	var between, withinA, withinB float64
	for _, x := range a {
		for _, y := range b {
			between += math.Abs(x - y)
		}
	}
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			withinA += math.Abs(a[i] - a[j])
		}
	}
	for i := range b {
		for j := i + 1; j < len(b); j++ {
			withinB += math.Abs(b[i] - b[j])
		}
	}
	e := 2*between/(m*n) - withinA/(m*(m-1)/2) - withinB/(n*(n-1)/2)
	return m * n / (m + n) * e
}

// naiveSplit is the definition bestSplit computes faster: Q̂ at every τ
// from scratch.
func naiveSplit(x []float64, minSize int) (int, float64) {
	best, bestQ := -1, math.Inf(-1)
	for tau := minSize; tau <= len(x)-minSize; tau++ {
		if q := qStat(x[:tau], x[tau:]); q > bestQ {
			best, bestQ = tau, q
		}
	}
	return best, bestQ
}

// TestBestSplitMatchesDefinition: the O(n log n) scan finds the split
// and Q̂ that the energy statistic's definition gives, ties included.
func TestBestSplitMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for n := 6; n < 80; n += 7 {
		for _, ties := range []bool{false, true} {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64()
				if ties {
					x[i] = math.Round(x[i] * 2)
				}
				if i > n/2 {
					x[i] += 1.5
				}
			}
			gt, gq := bestSplit(x, 3)
			wt, wq := naiveSplit(x, 3)
			if gt != wt || math.Abs(gq-wq) > 1e-9*math.Max(1, math.Abs(wq)) {
				t.Errorf("n=%d ties=%v: bestSplit = %d, %v; definition %d, %v", n, ties, gt, gq, wt, wq)
			}
		}
	}
}

// TestChangePointsDeterministic: the answer depends on the series only,
// not on what ran before in the process.
func TestChangePointsDeterministic(t *testing.T) {
	xs := series(11, 60, 20, -4, 1.5)
	for i := 40; i < len(xs); i++ {
		xs[i] *= 1.05
	}
	first := ChangePoints(xs, ChangePointOptions{})
	for range 3 {
		ChangePoints(series(5, 50, 10, 3, 1), ChangePointOptions{})
		again := ChangePoints(append([]float64(nil), xs...), ChangePointOptions{})
		if len(again) != len(first) {
			t.Fatalf("%+v then %+v", first, again)
		}
		for i := range again {
			if again[i] != first[i] {
				t.Fatalf("%+v then %+v", first, again)
			}
		}
	}
	if len(first) != 2 || first[0].Index != 20 || first[1].Index != 40 {
		t.Errorf("two steps at 20 and 40: %+v", first)
	}
}
