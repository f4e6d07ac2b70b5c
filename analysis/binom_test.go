package analysis

import (
	"math"
	"testing"
)

// TestBinomTwoSided: the incomplete-beta tails agree with the sum of the
// binomial terms to 1e-9, the normal approximation above binomExactMax
// trials to 2 % of p where p > 1e-6, and 500 000 trials (failed_tx of
// 1 000 a cell) neither panic nor take long.
func TestBinomTwoSided(t *testing.T) {
	sum := func(k, n int, q float64) float64 {
		lower, upper := 0.0, 0.0
		for i := 0; i <= n; i++ {
			lg, _ := math.Lgamma(float64(n + 1))
			li, _ := math.Lgamma(float64(i + 1))
			lr, _ := math.Lgamma(float64(n - i + 1))
			pr := math.Exp(lg - li - lr + float64(i)*math.Log(q) + float64(n-i)*math.Log1p(-q))
			if i <= k {
				lower += pr
			}
			if i >= k {
				upper += pr
			}
		}
		return math.Min(1, 2*math.Min(lower, upper))
	}
	for _, c := range []struct {
		k, n int
		q    float64
	}{{0, 1, 0.5}, {1, 1, 0.5}, {3, 3, 0.5}, {0, 8, 0.5}, {10, 12, 0.5}, {7, 20, 0.4}, {40, 100, 0.5}, {600, 1000, 0.55},
		{2000, 2000, 0.5}, {1000, 2001, 0.5}, {1050, 2001, 0.5}, {2600, 5000, 0.5}, {5000, 10000, 0.5}, {5150, 10000, 0.5}} {
		got, want := BinomTwoSided(c.k, c.n, c.q), sum(c.k, c.n, c.q)
		tol := 1e-9 * want
		if c.n > binomExactMax {
			tol = 0.02 * want
			if want < 1e-6 {
				tol = 1e-6
			}
		}
		if math.Abs(got-want) > math.Max(tol, 1e-12) {
			t.Errorf("BinomTwoSided(%d, %d, %v) = %v; the sum of the terms gives %v", c.k, c.n, c.q, got, want)
		}
	}
	if p := BinomTwoSided(250_000, 500_000, 0.5); p < 0.99 {
		t.Errorf("500 000 trials, half of them: p %v; want about 1", p)
	}
}
