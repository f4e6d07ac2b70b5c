package analysis

import (
	"math"
	"math/bits"
	"slices"

	"github.com/aclements/go-moremath/mathx"
)

// exactFlipMax is the largest number of pairs whose sign-flip
// permutation distribution is enumerated: 2¹⁶ = 65 536 sign patterns, a
// Gray code walk of about 0.1 ms. Above it the permutation t statistic is
// referred to Student's t with n−1 degrees of freedom (Efron's
// approximation; conservative for the symmetric heavy tails an A/A pair
// difference has).
const exactFlipMax = 16

// signFlipP is the two-sided p-value of the sign-flip permutation test
// of "the pair differences d are centred on 0": under the null the sign
// of each pair's difference is a coin flip (ABBA order makes the two
// cells of a block exchangeable), so the observed |Σd| is compared with
// all 2ⁿ re-signed sums. Exact for n ≤ exactFlipMax; the smallest
// attainable p is 2/2ⁿ.
func signFlipP(d []float64) float64 {
	n := len(d)
	if n == 0 {
		return 1
	}
	var sum, abs float64
	for _, x := range d {
		sum += x
		abs += math.Abs(x)
	}
	if abs == 0 {
		return 1
	}
	obs := math.Abs(sum)
	// Sums within rounding of the observed one count as "as extreme".
	tol := 1e-9 * abs
	if n <= exactFlipMax {
		s := sum
		neg := uint32(0)
		count := 1 // the identity pattern
		for k := uint32(1); k < 1<<n; k++ {
			i := bits.TrailingZeros32(k)
			if neg&(1<<i) == 0 {
				s -= 2 * d[i]
			} else {
				s += 2 * d[i]
			}
			neg ^= 1 << i
			if math.Abs(s) >= obs-tol {
				count++
			}
		}
		return float64(count) / float64(uint64(1)<<n)
	}
	mean := sum / float64(n)
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	if ss == 0 {
		return 0
	}
	t := mean / math.Sqrt(ss/float64(n-1)/float64(n))
	// 2(1 − T(|t|)) written as the incomplete beta function, which keeps
	// its precision in the far tail where Holm's α/m lies.
	v := float64(n - 1)
	return mathx.BetaInc(v/(v+t*t), v/2, 0.5)
}

// minFlipP is the smallest p-value the sign-flip test can give with n
// pairs: no change can be called when it exceeds the level.
func minFlipP(n int) float64 {
	if n <= exactFlipMax {
		return 2 / float64(uint64(1)<<n)
	}
	return 0
}

// minUP is the smallest two-sided p-value of the Mann–Whitney U test
// with n and m values: 2/C(n+m, n).
func minUP(n, m int) float64 {
	if n == 0 || m == 0 {
		return 1
	}
	lc := lchoose(n+m, n)
	return math.Min(1, 2*math.Exp(-lc))
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// signedRankCounts[n][w] counts the subsets of {1…n} whose sum is w: the
// null distribution of Wilcoxon's signed-rank statistic, times 2ⁿ.
// Filled on demand up to walshMax.
var signedRankCounts = func() [][]float64 {
	out := make([][]float64, walshMax+1)
	cur := []float64{1}
	out[0] = cur
	for n := 1; n <= walshMax; n++ {
		next := make([]float64, len(cur)+n)
		copy(next, cur)
		for w, c := range cur {
			next[w+n] += c
		}
		out[n] = next
		cur = next
	}
	return out
}()

// walshMax is the largest number of pairs whose interval uses the n(n+1)/2
// Walsh averages (1 275 at 50); above it a t interval of the mean, which
// the central limit theorem makes accurate there and which costs O(n).
const walshMax = 50

// pairedCI returns the Hodges–Lehmann estimate of the centre of d (the
// median of its Walsh averages) and the distribution-free interval of
// confidence 1−a from the signed-rank distribution (valid for a
// symmetric distribution of d, which exchangeable cells of a block give
// under the null). The interval is ±Inf when n is too small for that
// confidence: 2/2ⁿ > a.
func pairedCI(d []float64, a float64) (est, lo, hi float64) {
	n := len(d)
	if n == 0 {
		return math.NaN(), math.Inf(-1), math.Inf(1)
	}
	if n > walshMax {
		var sum float64
		for _, x := range d {
			sum += x
		}
		mean := sum / float64(n)
		var ss float64
		for _, x := range d {
			ss += (x - mean) * (x - mean)
		}
		// Student's quantile by its first Cornish–Fisher term: within
		// 0.3 % of the exact one for ν ≥ 50.
		z, v := zq(1-a/2), float64(n-1)
		half := (z + (z*z*z+z)/(4*v)) * math.Sqrt(ss/float64(n-1)/float64(n))
		return mean, mean - half, mean + half
	}
	w := make([]float64, 0, n*(n+1)/2)
	for i := range d {
		for j := i; j < n; j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	slices.Sort(w)
	m := len(w)
	if m%2 == 1 {
		est = w[m/2]
	} else {
		est = (w[m/2-1] + w[m/2]) / 2
	}
	// k is the largest rank sum whose lower tail is at most a/2: the
	// interval runs from the (k+1)-th smallest to the (k+1)-th largest
	// Walsh average.
	counts := signedRankCounts[n]
	total := math.Ldexp(1, n)
	k, cum := -1, 0.0
	for wv, c := range counts {
		if (cum+c)/total > a/2 {
			break
		}
		cum += c
		k = wv
	}
	if k < 0 {
		return est, math.Inf(-1), math.Inf(1)
	}
	return est, w[k], w[m-1-k]
}

// holm returns which of the p-values Holm's step-down procedure rejects
// at family-wise level alpha: sorted ascending, the i-th (0-based) is
// compared with alpha/(m−i) until the first that fails.
func holm(ps []float64, alpha float64) []bool {
	m := len(ps)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case ps[a] < ps[b]:
			return -1
		case ps[a] > ps[b]:
			return 1
		}
		return 0
	})
	out := make([]bool, m)
	for rank, i := range idx {
		if ps[i] >= alpha/float64(m-rank) {
			break
		}
		out[i] = true
	}
	return out
}

// zq is the standard normal quantile.
func zq(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// mdeLog is the smallest true shift of d's centre the test would detect
// with 80 % power at two-sided level a, given the spread sd of d and n
// pairs (normal approximation: the sign-flip test has the t-test's
// asymptotic efficiency). +Inf when n pairs cannot reach a at all.
func mdeLog(sd float64, n int, a float64) float64 {
	if n < 2 || minFlipP(n) > a {
		return math.Inf(1)
	}
	return (zq(1-a/2) + zq(0.8)) * sd / math.Sqrt(float64(n))
}

func sdOf(d []float64) float64 {
	n := len(d)
	if n < 2 {
		return math.NaN()
	}
	var sum float64
	for _, x := range d {
		sum += x
	}
	mean := sum / float64(n)
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
