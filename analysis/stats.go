package analysis

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/aclements/go-moremath/mathx"
	"github.com/aclements/go-moremath/stats"
)

// minUP is the smallest two-sided p-value of the Mann–Whitney U test
// with n and m values: 2/C(n+m, n).
func minUP(n, m int) float64 {
	if n == 0 || m == 0 {
		return 1
	}
	return math.Min(1, 2*math.Exp(-mathx.Lchoose(n+m, n)))
}

// holm is Holm's step-down procedure at family-wise level alpha: the
// p-values sorted ascending, the i-th (0-based) is rejected while below
// alpha/(m−i); a NaN counts as 1. It returns which it rejected and each
// test's weight, its share of alpha: 1/(m−i) at its rejection, 1/(m−r)
// for the rest once r are. That is what graph.reject returns on the
// complete graph with equal weights, which was Holm's other copy; but
// the graph holds m×m weights and rewires them per rejection: 1.5 s for
// 1 000 tests all rejected, 19 s for 2 000 (the functions of a perf
// diff, a big run's report-only tests), against 12 and 26 µs here, and
// its summed weights let p = alpha/(m−i) itself through.
func holm(ps []float64, alpha float64) ([]bool, []float64) {
	m := len(ps)
	p := func(i int) float64 {
		if math.IsNaN(ps[i]) {
			return 1
		}
		return ps[i]
	}
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(p(a), p(b)) })
	out, w := make([]bool, m), make([]float64, m)
	r := 0
	for ; r < m && p(idx[r]) < alpha/float64(m-r); r++ {
		out[idx[r]], w[idx[r]] = true, 1/float64(m-r)
	}
	for i := range w {
		if !out[i] {
			w[i] = 1 / float64(m-r)
		}
	}
	return out, w
}

// zq is the standard normal quantile.
func zq(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// sdOf is the sample standard deviation of d, NaN for fewer than two.
func sdOf(d []float64) float64 {
	n := len(d)
	if n < 2 {
		return math.NaN()
	}
	mean := meanOf(d)
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(n-1))
}

// spend is the Lan–DeMets Pocock-type spending function: the share of α
// spent once a fraction t of the information is in. It spends early
// (about 40 % of α at t = 0.25, against 0.0 % for O'Brien–Fleming), so a
// large change stops at the first looks.
func spend(t float64) float64 {
	t = math.Min(math.Max(t, 0), 1)
	return math.Log(1 + (math.E-1)*t)
}

// tTail is the two-sided tail probability P(|T| ≥ |t|) of Student's t
// with v degrees of freedom, written as the incomplete beta function,
// which keeps its precision in the far tail where a small family level
// lies.
func tTail(t, v float64) float64 {
	if math.IsInf(t, 0) {
		return 0
	}
	return mathx.BetaInc(v/(v+t*t), v/2, 0.5)
}

// tq is Student's t quantile with v degrees of freedom (p > 0.5):
// go-moremath's inverse of its CDF (bisection on the incomplete beta
// function, which keeps its precision in the far tail where a small
// family level lies).
func tq(p, v float64) float64 {
	if v <= 0 || math.IsInf(v, 1) || math.IsNaN(v) {
		return zq(p)
	}
	k := [2]float64{p, v}
	tqMu.Lock()
	q, ok := tqCache[k]
	tqMu.Unlock()
	if ok {
		return q
	}
	q = stats.InvCDF(stats.TDist{V: v})(p)
	tqMu.Lock()
	if len(tqCache) > 1<<16 {
		clear(tqCache)
	}
	tqCache[k] = q
	tqMu.Unlock()
	return q
}

// tqCache remembers quantiles: an analysis asks for a handful of levels
// at a handful of degrees of freedom, thousands of times.
var (
	tqMu    sync.Mutex
	tqCache = map[[2]float64]float64{}
)

// meanTest is the paired t test of "the differences d are centred on 0"
// given their mean, standard error and degrees of freedom: its two-sided
// p-value, and the interval of confidence 1−a around the mean. The
// primary and secondary tests use it. The exact sign-flip test it
// replaced cannot give p below 2/2ⁿ: at 8 pairs that is 0.0078, above
// α/4, so four configurations at -r 8 could never call a change (0 %
// power for −15 % at 2 % noise). The t test on log ratios reaches any
// level at any n ≥ 2; its size holds for the symmetric pair differences
// ABBA blocks give under the null (TestGateAAFamily), and a single wild
// pair inflates the standard error with the mean, so it costs power, not
// false alarms.
func meanTest(mean, se, v, a float64) (p, lo, hi float64) {
	switch {
	case v < 1 || math.IsNaN(se):
		return 1, math.Inf(-1), math.Inf(1)
	case se == 0 && mean == 0:
		return 1, 0, 0
	case se == 0:
		return 0, mean, mean
	}
	p = tTail(mean/se, v)
	half := tq(1-a/2, v) * se
	return p, mean - half, mean + half
}

// meanSE returns the mean of d and its standard error.
func meanSE(d []float64) (mean, se float64) {
	if len(d) == 0 {
		return math.NaN(), math.NaN()
	}
	return meanOf(d), sdOf(d) / math.Sqrt(float64(len(d))) // sdOf: NaN for one value
}

// mdeT is the smallest true shift of the mean the t test with v degrees
// of freedom and standard error se detects with 80 % power at two-sided
// level a: (t_{1−a/2} + t_{0.8})·se, the noncentral t's usual
// approximation (TestMDEPower measures its power at 75–85 %).
func mdeT(se, v, a float64) float64 {
	if v < 1 || math.IsNaN(se) {
		return math.Inf(1)
	}
	return (tq(1-a/2, v) + tq(0.8, v)) * se
}

// graph is a multiple-testing graph (Bretz, Maurer, Brannath and Posch,
// Stat Med 2009): initial weights w (Σ ≤ 1: a test's share of α) and
// transition weights g (g[i][j]: the share of test i's α that passes to
// test j once i is rejected; each row sums to at most 1). Every such
// graph controls the family-wise error at α in the strong sense; Holm's
// procedure is the complete graph with equal weights.
type graph struct {
	w []float64
	g [][]float64
}

// reject runs the graph's sequentially rejective procedure at level
// alpha on the p-values ps: reject a test whose p is below its weight ×
// alpha (the one with the smallest p/w first), pass its weight along its
// edges, rewire the graph around it, and repeat until none is left.
// It returns which it rejected and each test's weight: at its
// rejection, or at the end (its final level is that weight × alpha).
//
// gr is only read: the rewired graph is made in one of two matrices
// of its own, in turn (a copy of gr and a new matrix per rejection were
// 10 MB each at 10⁵ cells, 1 100 gated tests a commit).
func (gr graph) reject(ps []float64, alpha float64) (out []bool, weight []float64) {
	m := len(ps)
	w := append([]float64(nil), gr.w...)
	weight = make([]float64, m)
	g := gr.g
	var spare [][]float64 // the matrix g is not, once it is not gr's
	in := make([]bool, m)
	for i := range in {
		in[i] = true
	}
	out = make([]bool, m)
	for {
		j, best := -1, math.Inf(1)
		for i := range m {
			if in[i] && w[i] > 0 && ps[i] < w[i]*alpha && ps[i]/w[i] < best {
				j, best = i, ps[i]/w[i]
			}
		}
		if j < 0 {
			for i := range m {
				if in[i] {
					weight[i] = w[i]
				}
			}
			return out, weight
		}
		out[j], in[j], weight[j] = true, false, w[j]
		ng := spare
		if ng == nil {
			ng = newMatrix(m)
		}
		for l := range m {
			clear(ng[l])
			if !in[l] {
				continue
			}
			w[l] += w[j] * g[j][l]
			for k := range m {
				if k == l || !in[k] {
					continue
				}
				if den := 1 - g[l][j]*g[j][l]; den > 1e-12 {
					ng[l][k] = (g[l][k] + g[l][j]*g[j][k]) / den
				}
			}
		}
		w[j] = 0
		if &g[0] != &gr.g[0] {
			spare = g
		}
		g = ng
	}
}

// newMatrix is an m×m matrix of zeros, in one slice.
func newMatrix(m int) [][]float64 {
	cells := make([]float64, m*m)
	g := make([][]float64, m)
	for i := range g {
		g[i] = cells[i*m : (i+1)*m : (i+1)*m]
	}
	return g
}

// binomExactMax is the most trials BinomTwoSided computes exactly.
const binomExactMax = 2000

// BinomTwoSided is the two-sided p-value of k successes in n trials of
// probability q: twice the smaller tail, at most 1. The tails are
// regularized incomplete beta functions up to binomExactMax trials, and
// the normal approximation with continuity correction above (where the
// beta function's continued fraction does not converge, and the
// standard deviation is over 20), so the cost does not grow with n
// (failed_tx of 1 000 a cell over 250 repeats is n = 500 000: a sum over
// the terms made analyze of 100 000 cells 2.4× slower).
func BinomTwoSided(k, n int, q float64) float64 {
	if n == 0 {
		return 1
	}
	lower, upper := 1.0, 1.0 // P(X ≤ k), P(X ≥ k)
	if n > binomExactMax {
		mu, sd := float64(n)*q, math.Sqrt(float64(n)*q*(1-q))
		phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
		lower, upper = phi((float64(k)+0.5-mu)/sd), 1-phi((float64(k)-0.5-mu)/sd)
		return math.Min(1, 2*math.Min(lower, upper))
	}
	if k < n {
		lower = mathx.BetaInc(1-q, float64(n-k), float64(k+1))
	}
	if k > 0 {
		upper = mathx.BetaInc(q, float64(k), float64(n-k+1))
	}
	return math.Min(1, 2*math.Min(lower, upper))
}
