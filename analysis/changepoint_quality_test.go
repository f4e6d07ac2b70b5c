package analysis

import (
	"math/rand"
	"testing"
)

// TestChangePointPrecisionRecall measures the nightly trend's detector on
// synthetic 60-night histories (2 % noise, as TPS between nights on a
// quiet dedicated host) with 0, 1 or 2 injected steps of 5–15 %: a
// detection within ±2 nights of an injected step is a hit, any other a
// false alarm. Figures (seeded, so the same on every run) are logged for
// the closing note; the bounds are the ones this detector holds here.
func TestChangePointPrecisionRecall(t *testing.T) {
	rng := rand.New(rand.NewSource(2026))
	const series, nights, noise = 300, 60, 0.02
	var injected, hits, detections, falseAlarms, quietSeriesWithAlarm, quiet int
	for s := 0; s < series; s++ {
		steps := s % 3 // 0, 1 or 2 steps
		var at []int
		level := 1.0
		levels := make([]float64, nights)
		switch steps {
		case 1:
			at = []int{15 + rng.Intn(30)}
		case 2:
			a := 10 + rng.Intn(15)
			at = []int{a, a + 12 + rng.Intn(20)}
		}
		next := 0
		for i := range levels {
			if next < len(at) && i == at[next] {
				size := 0.05 + 0.10*rng.Float64()
				if rng.Intn(2) == 0 {
					size = -size
				}
				level *= 1 + size
				next++
			}
			levels[i] = level
		}
		xs := make([]float64, nights)
		for i := range xs {
			xs[i] = 1000 * levels[i] * (1 + noise*rng.NormFloat64())
		}
		cps := ChangePoints(xs, ChangePointOptions{MinEffectPct: 2})
		injected += len(at)
		detections += len(cps)
		matched := map[int]bool{}
		alarms := 0
		for _, cp := range cps {
			hit := false
			for j, a := range at {
				if !matched[j] && cp.Index >= a-2 && cp.Index <= a+2 {
					matched[j], hit = true, true
					break
				}
			}
			if hit {
				hits++
			} else {
				alarms++
			}
		}
		falseAlarms += alarms
		if steps == 0 {
			quiet++
			if alarms > 0 {
				quietSeriesWithAlarm++
			}
		}
	}
	precision := float64(hits) / float64(max(detections, 1))
	recall := float64(hits) / float64(injected)
	t.Logf("%d series of %d nights at %.0f%% noise: %d injected steps, %d detections, %d hits: precision %.3f, recall %.3f; %d false alarms, %d of %d step-free series with one",
		series, nights, 100*noise, injected, detections, hits, precision, recall, falseAlarms, quietSeriesWithAlarm, quiet)
	if precision < 0.9 || recall < 0.9 {
		t.Errorf("precision %.3f, recall %.3f: want both ≥ 0.9", precision, recall)
	}
	if quietSeriesWithAlarm > quiet/20 {
		t.Errorf("%d of %d step-free histories had a false alarm: want ≤ 5 %%", quietSeriesWithAlarm, quiet)
	}
}
