package analysis

import (
	"fmt"
	"math"
	"sort"

	"github.com/pgabtest/abtest/results"
)

// WaitShift is a wait event whose share of a workload's active backend
// samples moved between the baseline and a commit: the why behind a
// change in throughput (the demo's LWLock:pg_stat_statements, half of
// the waits in base and gone in the patch).
type WaitShift struct {
	Workload string `json:"workload"`
	Commit   string `json:"commit"`
	Event    string `json:"event"`
	// BasePct and CommitPct are the event's shares of the active
	// samples, in percent; BaseSamples and CommitSamples those samples.
	BasePct       float64 `json:"base_pct"`
	CommitPct     float64 `json:"commit_pct"`
	BaseSamples   int     `json:"base_samples"`
	CommitSamples int     `json:"commit_samples"`
}

// A shift is listed when the share moved by at least minShiftPoints
// percentage points and by more than shiftZ standard errors of the
// difference of two proportions, each of at least minShareSamples
// active samples. Samples of one backend a few ms apart are not
// independent, so z alone overstates; the floor in points keeps the
// noise of an A/A run out.
const (
	minShiftPoints = 5
	shiftZ         = 3
)

// waitShifts finds each commit's wait shifts against the baseline, per
// workload over its usable cells, the largest first.
func (r *Report) waitShifts() []WaitShift {
	type tally struct {
		active int
		by     map[string]int
	}
	byKey := map[[2]string]*tally{} // workload, commit
	for _, rec := range r.records {
		if rec.Status != results.StatusOK || rec.Waits == nil {
			continue
		}
		k := [2]string{rec.Workload, rec.Commit}
		t := byKey[k]
		if t == nil {
			t = &tally{by: map[string]int{}}
			byKey[k] = t
		}
		for e, n := range rec.Waits.ByEvent {
			t.by[e] += n
			t.active += n
		}
	}
	var out []WaitShift
	for _, wl := range r.Plan.Options.Workloads {
		base := byKey[[2]string{wl, r.Baseline}]
		for _, c := range r.Commits {
			cand := byKey[[2]string{wl, c}]
			if c == r.Baseline || base == nil || cand == nil || !shareShown(base.active) || !shareShown(cand.active) {
				continue
			}
			for e := range union(base.by, cand.by) {
				s := WaitShift{Workload: wl, Commit: c, Event: e, BaseSamples: base.active, CommitSamples: cand.active,
					BasePct: 100 * float64(base.by[e]) / float64(base.active), CommitPct: 100 * float64(cand.by[e]) / float64(cand.active)}
				if s.beyondNoise() {
					out = append(out, s)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return math.Abs(out[i].CommitPct-out[i].BasePct) > math.Abs(out[j].CommitPct-out[j].BasePct)
	})
	return out
}

// beyondNoise applies the floor in points and the two-proportion z test.
func (s WaitShift) beyondNoise() bool {
	d := s.CommitPct - s.BasePct
	if math.Abs(d) < minShiftPoints {
		return false
	}
	p1, p2 := s.BasePct/100, s.CommitPct/100
	p := (p1*float64(s.BaseSamples) + p2*float64(s.CommitSamples)) / float64(s.BaseSamples+s.CommitSamples)
	se := math.Sqrt(p * (1 - p) * (1/float64(s.BaseSamples) + 1/float64(s.CommitSamples)))
	return se == 0 || math.Abs(p2-p1)/se > shiftZ
}

func union(a, b map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// Line says the shift in a sentence.
func (s WaitShift) Line(baseline string) string {
	return fmt.Sprintf("%s: %s %.1f%% of active samples in %s, %.1f%% in %s (%+.1f points; %d and %d samples)",
		s.Workload, s.Event, s.BasePct, baseline, s.CommitPct, s.Commit, s.CommitPct-s.BasePct, s.BaseSamples, s.CommitSamples)
}

// waitShiftBlocks are the wait-event part of why.
func (r *Report) waitShiftBlocks() []Block {
	if len(r.WaitShifts) == 0 {
		return nil
	}
	var items []Item
	for _, s := range r.WaitShifts {
		items = append(items, Item{Text: plain(s.Line(r.Baseline))})
	}
	return []Block{&Heading{2, "Why: wait events"},
		&Paragraph{plain(fmt.Sprintf("Shares of the active backend samples that moved by ≥ %d points (and beyond %d standard errors):", minShiftPoints, shiftZ))},
		&List{items}}
}
