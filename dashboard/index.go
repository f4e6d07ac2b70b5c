package dashboard

import (
	"html/template"

	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// indexRun is a run as the index lists it: by the name the user gave it,
// with each compared commit's answer line, the gate and the regressions
// of the report its pages were written from.
type indexRun struct {
	*store.Run
	Name, Page  string
	Answers     []string
	Gate        results.GateStatus
	GateDetail  string
	Regressions int
}

// indexRow is the run's row of the index.
func (d *runData) indexRow() indexRun {
	row := indexRun{Run: d.run, Name: d.run.Name(), Page: RunPage(d.run.ID)}
	row.Gate, row.GateDetail = d.gate()
	lines := d.answerLines()
	for _, c := range compared(d.run) {
		if l, ok := lines[c]; ok {
			row.Answers = append(row.Answers, l)
		}
	}
	if d.report != nil {
		row.Regressions = len(d.report.Regressions)
	}
	return row
}

// spark is one metric's trend in a configuration's group.
type spark struct {
	Trend
	Last string
	SVG  template.HTML
}

// trendGroup is the trends of one configuration.
type trendGroup struct {
	Config     string
	Sparks     []spark
	Unexpected int
}

// minSparkPoints is the fewest points a sparkline is drawn for: one or
// two points are no line to read.
const minSparkPoints = 3

// drawn: a series worth a sparkline: enough points, and not constant.
func drawn(ser *store.Series) bool {
	if len(ser.Points) < minSparkPoints {
		return false
	}
	for _, p := range ser.Points[1:] {
		if p.Value != ser.Points[0].Value {
			return true
		}
	}
	return false
}

// trendGroups groups the trends (written from series, in the same
// order) by configuration, each with a sparkline, those of the series
// drawn; it returns how many are not.
func trendGroups(series []*store.Series, trends []Trend) ([]trendGroup, int) {
	bySeries := map[store.SeriesKey]*store.Series{}
	for _, ser := range series {
		bySeries[store.SeriesKey{Metric: ser.Metric, Config: ser.Config}] = ser
	}
	var out []trendGroup
	hidden := 0
	for _, t := range trends {
		ser := bySeries[t.Key]
		if ser == nil {
			continue
		}
		if !drawn(ser) {
			hidden++
			continue
		}
		if len(out) == 0 || out[len(out)-1].Config != t.Key.Config {
			out = append(out, trendGroup{Config: t.Key.Config})
		}
		g := &out[len(out)-1]
		xs := make([]float64, len(ser.Points))
		for i, p := range ser.Points {
			xs[i] = p.Value
		}
		var marks []int
		for _, cp := range ser.Unexpected() {
			marks = append(marks, cp.Index)
		}
		g.Sparks = append(g.Sparks, spark{Trend: t, Last: human(xs[len(xs)-1]), SVG: sparkline(xs, marks, 120, 28)})
		g.Unexpected += t.Unexpected
	}
	return out, hidden
}
