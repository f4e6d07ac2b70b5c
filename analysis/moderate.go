package analysis

// Moderated variances for the configurations' primaries (issue 43): a
// configuration's own 8 pairs estimate its spread on 7 degrees of
// freedom, so at its share of α (0.01/2/24 for one of 24) Student's t
// needs t ≈ 9, and one of 24 configurations at −15 % under 6 % bimodal
// noise passed the gate in 70 % of runs behind a run level of same. The
// configurations of one run share a host, and their spreads are alike;
// empirical Bayes (Smyth, "Linear models and empirical Bayes methods
// for assessing differential expression", SAGMB 2004: limma's moderated
// t) estimates from the configurations' sample variances how alike they
// are — a prior variance s0² on d0 degrees of freedom — and each
// configuration's variance is shrunk toward s0², its t test given
// d0 + d degrees of freedom. Where the spreads differ more than
// sampling explains, d0 is small and the test is each configuration's
// own; where they agree, d0 is large. The moderated t has exactly
// Student's t distribution under that model, so each test keeps its
// level and the family's graph (hierarchy) is unchanged.

import (
	"math"

	"github.com/aclements/go-moremath/mathx"
)

// minModerated is the fewest configurations whose variances are
// pooled into a prior: with fewer, the spread of their sample variances
// says nothing about how alike they are.
const minModerated = 4

// prior is the variance prior of one primary metric's configurations,
// computed per look (the first n pairs of each) so a resumed or
// re-analysed run replays the verdict it stopped on.
type prior struct {
	parts []*test
	at    map[int]*look
}

// look is the prior at one look: s0² on d0 degrees of freedom, and the
// configurations too noisy for it, which keep their own variance.
type look struct {
	s0, d0 float64
	own    map[*test]bool
}

// outlierP is the upper tail below which a configuration's variance is
// too large for the prior (its F test against s0²): it keeps its own.
// The model has every variance drawn from one prior; a configuration 4×
// as noisy as 23 others is not, and shrunk toward them it alarmed in
// 2.4 % of A/A runs (TestModeratedOutlierAA: 48 of 2000); left out, its own t test
// holds its level. A quiet outlier is shrunk upward: conservative.
const outlierP = 0.05

// moderate gives each of parts (the paired log primaries of one metric)
// the prior they share, when there are enough of them.
func moderate(parts []*test) {
	if len(parts) < minModerated {
		return
	}
	p := &prior{parts: parts, at: map[int]*look{}}
	for _, t := range parts {
		t.prior = p
	}
}

// variance is the moderated variance of test t's differences with its
// sample variance s2 on d degrees of freedom at look n, and its degrees
// of freedom; (s2, d) when there is no prior or t is left out of it.
func (p *prior) variance(t *test, n int, s2, d float64) (float64, float64) {
	if p == nil || d < 1 || math.IsNaN(s2) {
		return s2, d
	}
	l, ok := p.at[n]
	if !ok {
		l = p.estimate(n)
		p.at[n] = l
	}
	if l.d0 <= 0 || math.IsNaN(l.s0) || l.own[t] {
		return s2, d
	}
	return (l.d0*l.s0 + d*s2) / (l.d0 + d), l.d0 + d
}

// estimate fits the prior at look n (fit), then leaves out the
// configurations whose variance is an upper outlier against it (F test
// at outlierP) and fits it again on the rest.
func (p *prior) estimate(n int) *look {
	l := &look{own: map[*test]bool{}}
	l.s0, l.d0 = p.fit(n, l.own)
	if l.d0 <= 0 {
		return l
	}
	for _, t := range p.parts {
		m := min(n, len(t.cand))
		if m < 3 {
			continue
		}
		sd, d := sdOf(t.diffs(m)), float64(m-1)
		if f := sd * sd / l.s0; f > 1 && 1-mathx.BetaInc(d*f/(d*f+l.d0), d/2, l.d0/2) < outlierP {
			l.own[t] = true
		}
	}
	if len(l.own) > 0 {
		l.s0, l.d0 = p.fit(n, l.own)
	}
	return l
}

// fit is Smyth's method of moments on the log sample variances of the
// parts' first n pairs, but those in skip: with e = log s² − ψ(d/2) +
// log(d/2), the mean of e estimates log s0² − ψ(d0/2) + log(d0/2) and
// its variance, less the sampling part (the mean of ψ′(d/2)), is
// ψ′(d0/2). d0 is capped at the degrees of freedom of the parts
// together (the pooled variance, where the spreads agree, carries no
// more).
func (p *prior) fit(n int, skip map[*test]bool) (s0, d0 float64) {
	var es, ds []float64
	var total, pooled float64
	for _, t := range p.parts {
		m := min(n, len(t.cand))
		if m < 3 || skip[t] {
			continue
		}
		sd := sdOf(t.diffs(m))
		if !(sd > 0) {
			continue // a zero variance has no logarithm, and no information on the others
		}
		d := float64(m - 1)
		es = append(es, 2*math.Log(sd)-digamma(d/2)+math.Log(d/2))
		ds = append(ds, d)
		total += d
		pooled += d * sd * sd
	}
	k := len(es)
	if k < minModerated {
		return math.NaN(), 0
	}
	var mean, tri float64
	for i, e := range es {
		mean += e / float64(k)
		tri += trigamma(ds[i]/2) / float64(k)
	}
	var v float64
	for _, e := range es {
		v += (e - mean) * (e - mean) / float64(k-1)
	}
	excess := v - tri
	if excess <= 0 {
		// No more spread than sampling: one variance, pooled.
		return pooled / total, total
	}
	d0 = 2 * trigammaInverse(excess)
	if d0 >= total {
		return pooled / total, total
	}
	return math.Exp(mean + digamma(d0/2) - math.Log(d0/2)), d0
}

// digamma is ψ(x) for x > 0: the recurrence up to 6, then the
// asymptotic series.
func digamma(x float64) float64 {
	var r float64
	for x < 6 {
		r -= 1 / x
		x++
	}
	f := 1 / (x * x)
	return r + math.Log(x) - 0.5/x - f*(1.0/12-f*(1.0/120-f*(1.0/252-f*(1.0/240-f/132))))
}

// trigamma is ψ′(x) for x > 0, the same way.
func trigamma(x float64) float64 {
	var r float64
	for x < 6 {
		r += 1 / (x * x)
		x++
	}
	f := 1 / (x * x)
	return r + 1/x + f/2 + f/x*(1.0/6-f*(1.0/30-f*(1.0/42-f/30)))
}

// trigammaInverse solves ψ′(y) = x for y (x > 0) by Newton's method on
// 1/ψ′, which is nearly linear (Smyth 2004, appendix).
func trigammaInverse(x float64) float64 {
	switch {
	case x > 1e7:
		return 1 / math.Sqrt(x)
	case x < 1e-6:
		return 1 / x
	}
	y := 0.5 + 1/x
	for range 50 {
		tri := trigamma(y)
		dif := tri * (1 - tri/x) / tetragamma(y)
		y += dif
		if y <= 0 {
			y = 1e-8
		}
		if -dif/y < 1e-8 {
			break
		}
	}
	return y
}

// tetragamma is ψ″(x) for x > 0.
func tetragamma(x float64) float64 {
	var r float64
	for x < 6 {
		r -= 2 / (x * x * x)
		x++
	}
	f := 1 / (x * x)
	return r - 1/(x*x) - 1/(x*x*x) - f*f*(0.5-f*(1.0/6-f*(1.0/6-f*0.3)))
}
