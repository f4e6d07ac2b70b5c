package analysis

import (
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// ObserverCost is what measuring the run's cells cost, summed over the
// cells that recorded it: the parts over the windows (results.Observer).
type ObserverCost struct {
	results.Observer
	// Cells counts the cells summed.
	Cells int `json:"cells"`
}

// observerCost sums the cells' observer costs; nil when none recorded
// one (results of an older abtest, instruction cells only).
func observerCost(records []results.Record) *ObserverCost {
	var c ObserverCost
	for _, rec := range records {
		if rec.Observer != nil && rec.Observer.WindowS > 0 {
			c.Observer = c.Observer.Add(*rec.Observer)
			c.Cells++
		}
	}
	if c.Cells == 0 {
		return nil
	}
	return &c
}

// Line is the host section's line: "measuring cost 0.42 % of one core
// (…) over 48 cells", marked when above results.ObserverTargetPct.
func (c *ObserverCost) Line() string {
	s := "measuring cost " + c.Observer.Line()
	if c.PctOfCore() > results.ObserverTargetPct {
		s += ", above the target of 1 %"
	}
	return s + " over " + text.Count(c.Cells, "cell")
}
