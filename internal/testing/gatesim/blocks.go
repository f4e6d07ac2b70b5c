package gatesim

// Noise resampled from real runs: the interleaved blocks of a recorded
// run, the real change between its commits taken out.

import (
	"fmt"
	"maps"
	"math"
	"math/rand"
	"slices"
	"sort"

	"github.com/pgabtest/abtest/results"
)

// Blocks are the interleaved blocks of a real recorded run, to draw the
// noise of synthetic runs from: per recorded configuration, each
// block's two cells' log TPS (base, candidate). Each arm is centred on
// its own mean, so the real change between the commits is taken out and
// what is left is the host's noise, with its tails, its modes and the
// drift the two cells of a block share; the residuals are scaled by
// √(n/(n−1)) for the mean taken out.
//
// A draw is a smoothed bootstrap: a recorded block, plus a Gaussian
// kernel with the blocks' own covariance (bandwidth smooth), the sum
// shrunk by √(1+smooth²) so that the covariance stays the recorded
// one. Plain resampling of 12 blocks put one block two or three times
// into an 8-block run; those ties shrank the run's spread against its
// mean, and the paired t test called A/A runs of 24 configurations a
// change in 1 % of runs, a fault of the simulation, not of the host.
type Blocks struct {
	Name    string
	Configs []string       // the recorded configurations, by ID
	blocks  [][][2]float64 // configuration → block → base, candidate log residual
	chol    [][3]float64   // configuration → the Cholesky factor of the blocks' covariance: l11, l21, l22
}

// smooth is the bandwidth of the bootstrap's kernel, a fraction of the
// blocks' own spread: a fifth of a draw's variance is the kernel's.
const smooth = 0.5

// minBlocks is the fewest complete blocks a configuration needs to be
// drawn from.
const minBlocks = 3

// ReadBlocks reads the blocks of the recorded run in dir (plan.json,
// cells.jsonl): the plan's baseline against its next commit, in every
// configuration with at least 3 blocks whose two cells both have a TPS.
func ReadBlocks(dir string) (*Blocks, error) {
	p, err := results.ReadPlan(dir)
	if err != nil {
		return nil, err
	}
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		return nil, err
	}
	return BlocksOf(dir, p, recs)
}

// BlocksOf is ReadBlocks of a plan and its records, named name.
func BlocksOf(name string, p *results.Plan, recs []results.Record) (*Blocks, error) {
	return BlocksOfMetric(name, p, recs, results.MetricTPS)
}

// BlocksOfMetric is BlocksOf of another metric than TPS (latency_p99_ms,
// say): the blocks of its values, the real change taken out likewise.
func BlocksOfMetric(name string, p *results.Plan, recs []results.Record, metric string) (*Blocks, error) {
	labels := p.Labels()
	if len(labels) < 2 {
		return nil, fmt.Errorf("gatesim: %s: %d commit(s): want a baseline and a candidate", name, len(labels))
	}
	base := p.Baseline
	if base == "" {
		base = labels[0]
	}
	cand := labels[0]
	if cand == base {
		cand = labels[1]
	}
	type key struct {
		cfg    string
		repeat int
	}
	cells := map[key]*[2]float64{}
	count := map[key]int{}
	for _, r := range recs {
		tps, ok := r.Metrics.Get(metric)
		arm := slices.Index([]string{base, cand}, r.Commit)
		if r.Status != results.StatusOK || r.Saturated || !ok || !(tps > 0) || math.IsInf(tps, 0) || arm < 0 {
			continue
		}
		k := key{r.Config.ID(), r.Repeat}
		if cells[k] == nil {
			cells[k] = &[2]float64{}
		}
		cells[k][arm] = tps
		count[k]++
	}
	byCfg := map[string][][2]float64{}
	for k, c := range cells {
		if count[k] == 2 && c[0] > 0 && c[1] > 0 {
			byCfg[k.cfg] = append(byCfg[k.cfg], [2]float64{math.Log(c[0]), math.Log(c[1])})
		}
	}
	b := &Blocks{Name: name}
	for _, cfg := range slices.Sorted(maps.Keys(byCfg)) {
		bl := byCfg[cfg]
		if len(bl) < minBlocks {
			continue
		}
		sort.Slice(bl, func(i, j int) bool { return bl[i][0] < bl[j][0] }) // an order of its own, not the map's
		var mean [2]float64
		for _, x := range bl {
			mean[0] += x[0] / float64(len(bl))
			mean[1] += x[1] / float64(len(bl))
		}
		scale := math.Sqrt(float64(len(bl)) / float64(len(bl)-1))
		out := make([][2]float64, len(bl))
		var c00, c01, c11 float64
		for i, x := range bl {
			out[i] = [2]float64{scale * (x[0] - mean[0]), scale * (x[1] - mean[1])}
			c00 += out[i][0] * out[i][0] / float64(len(bl))
			c01 += out[i][0] * out[i][1] / float64(len(bl))
			c11 += out[i][1] * out[i][1] / float64(len(bl))
		}
		l11 := math.Sqrt(c00)
		var l21, l22 float64
		if l11 > 0 {
			l21 = c01 / l11
		}
		l22 = math.Sqrt(math.Max(0, c11-l21*l21))
		b.Configs = append(b.Configs, cfg)
		b.blocks = append(b.blocks, out)
		b.chol = append(b.chol, [3]float64{l11, l21, l22})
	}
	if len(b.blocks) == 0 {
		return nil, fmt.Errorf("gatesim: %s: no configuration has %d blocks of %s and %s with %s", name, minBlocks, base, cand, metric)
	}
	return b, nil
}

// Scaled is b with every residual scaled by f: the same host's noise
// shapes at f times its spread (a noisier hour, a busier neighbour).
func (b *Blocks) Scaled(f float64) *Blocks {
	out := &Blocks{Name: fmt.Sprintf("%s ×%g", b.Name, f), Configs: b.Configs}
	for k, bl := range b.blocks {
		s := make([][2]float64, len(bl))
		for i, x := range bl {
			s[i] = [2]float64{f * x[0], f * x[1]}
		}
		out.blocks = append(out.blocks, s)
		l := b.chol[k]
		out.chol = append(out.chol, [3]float64{f * l[0], f * l[1], f * l[2]})
	}
	return out
}

// draw is one block of synthetic configuration i, its two cells' TPS
// as factors around 1: a block of recorded configuration i mod their
// number, drawn at random and smoothed (Blocks).
func (b *Blocks) draw(rng *rand.Rand, i int) [2]float64 {
	k := i % len(b.blocks)
	x, l := b.blocks[k][rng.Intn(len(b.blocks[k]))], b.chol[k]
	e0, e1 := rng.NormFloat64(), rng.NormFloat64()
	shrink := math.Sqrt(1 + smooth*smooth)
	return [2]float64{
		math.Exp((x[0] + smooth*l[0]*e0) / shrink),
		math.Exp((x[1] + smooth*(l[1]*e0+l[2]*e1)) / shrink),
	}
}

// SpreadPct is, per recorded configuration, the standard deviation of
// its blocks' log ratios in percent: the noise a paired test sees.
func (b *Blocks) SpreadPct() []float64 {
	var out []float64
	for _, bl := range b.blocks {
		var d []float64
		for _, x := range bl {
			d = append(d, x[1]-x[0])
		}
		var m, v float64
		for _, x := range d {
			m += x / float64(len(d))
		}
		for _, x := range d {
			v += (x - m) * (x - m) / float64(len(d)-1)
		}
		out = append(out, 100*math.Sqrt(v))
	}
	return out
}

func (b *Blocks) String() string {
	s := fmt.Sprintf("resampled from %s (", b.Name)
	for i, sp := range b.SpreadPct() {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s: %d blocks, log-ratio sd %.1f%%", b.Configs[i], len(b.blocks[i]), sp)
	}
	return s + ")"
}

// Duplicate appends to recs a second record of one cell drawn at random,
// its TPS (and mean latency) scaled by scale (1: identical): a cell
// recorded twice, as a results directory given twice, overlapping
// shards or an edited cells.jsonl make it.
func Duplicate(rng *rand.Rand, recs []results.Record, scale float64) []results.Record {
	dup := recs[rng.Intn(len(recs))]
	m := map[string]float64{}
	for name, v := range dup.Metrics.All() {
		m[name] = v
	}
	m[results.MetricTPS] *= scale
	if v, ok := m[results.MetricLatencyAvg]; ok {
		m[results.MetricLatencyAvg] = v / scale
	}
	dup.Metrics = results.ValuesOf(m)
	return append(recs, dup)
}
