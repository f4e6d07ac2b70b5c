package analysis

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/pgabtest/abtest/matrix"
)

var pathDataRE = regexp.MustCompile(`<path d="([^"]*)"`)

// svgLines counts the drawn line segments of an SVG from gonum/plot: a
// path's "L" commands.
func svgLines(svg string) (paths, longest int) {
	for _, d := range pathDataRE.FindAllStringSubmatch(svg, -1) {
		paths++
		longest = max(longest, strings.Count(d[1], "L"))
	}
	return paths, longest
}

// svgMarks counts the marks of an SVG's paths however they are grouped
// in paths: polylines are the subpaths (from an "M") of two segments or
// more, rings the full circles (two "A" commands each).
func svgMarks(svg string) (polylines, rings int) {
	for _, d := range pathDataRE.FindAllStringSubmatch(svg, -1) {
		for sub := range strings.SplitSeq(d[1], "M") {
			if strings.Count(sub, "L") >= 2 {
				polylines++
			}
		}
		rings += strings.Count(d[1], "A") / 2
	}
	return polylines, rings
}

// TestPlotsShowData: the plots have lines through the data, every
// repeat's point and the medians' error bars; a configuration whose
// cells have one progress report each gets no plot and a note why.
// ABTEST_PLOTS=DIR keeps the SVGs to look at.
func TestPlotsShowData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	fixture(t, dir, matrix.Shard{I: 1, N: 1})
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// select1 at 2 clients: one progress report per cell, as a 5 s cell
	// at -P 5 has.
	for i := range in.Records {
		if rec := &in.Records[i]; rec.Workload == "select1" && rec.Clients == 2 {
			rec.Progress = rec.Progress[:1]
		}
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plots")
	if keep := os.Getenv("ABTEST_PLOTS"); keep != "" {
		out = keep
	}
	if err := r.WritePlots(out, dir); err != nil {
		t.Fatal(err)
	}
	// A strip of repeats per configuration's TPS (4) and per changed
	// gated metric (churn's deallocs, 2), TPS by clients (2), TPS over
	// time (3 of 4).
	if len(r.Plots) != 6+2+3 || len(r.PlotNotes) != 1 || !strings.Contains(r.PlotNotes[0], "tps-time-select1_c2_cpuall_pgss.max=1000.svg: not drawn: no cell has 2 progress reports") {
		t.Fatalf("plots %v, notes %v", r.Plots, r.PlotNotes)
	}
	for _, p := range r.Plots {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if filepath.IsAbs(p) || os.Getenv("ABTEST_PLOTS") != "" {
			data, err = os.ReadFile(filepath.Join(out, filepath.Base(p)))
		}
		if err != nil {
			t.Fatal(err)
		}
		svg := string(data)
		paths, longest := svgLines(svg)
		lines, rings := svgMarks(svg)
		switch {
		case strings.Contains(p, "tps-time-"):
			// 20 cells, each a line through its 3 progress reports.
			if longest < 2 || lines < 20 {
				t.Errorf("%s: %d lines of 2 segments or more, the longest path with %d segments", p, lines, longest)
			}
		case strings.Contains(p, "repeats-"):
			// Two commits' 10 repeats as points, each a median line
			// and error bars.
			if paths < 2 || rings < 20 || !strings.Contains(svg, "base") || !strings.Contains(svg, "patch") {
				t.Errorf("%s: %d paths, %d rings, or a commit missing", p, paths, rings)
			}
		case strings.Contains(p, "tps-vs-clients-"):
			// A line per commit through the medians at 2 and 8 clients,
			// 2 × 2 × 10 repeat points, error bars. A ring within 0.1 pt
			// of another is not drawn twice (6 here: 131 572.7 and
			// 131 577.5 TPS on an axis of 0–150 000 over ~230 pt are
			// 0.01 pt apart; TestRingsOnePath counts exactly).
			if longest < 1 || rings < 40-6 {
				t.Errorf("%s: %d rings, the longest path with %d segments", p, rings, longest)
			}
		}
		if !strings.Contains(svg, ">0<") && !strings.Contains(svg, ">0 <") {
			t.Errorf("%s: the y axis does not start at 0", p)
		}
	}
	var md strings.Builder
	r.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "- tps-time-select1_c2_cpuall_pgss.max=1000.svg: not drawn") {
		t.Errorf("the report does not say which plot was not drawn")
	}
}

// TestTickLabelsTrimmed: a linear axis's labels lose gonum's padding
// (50000.00 read as a precision the data do not have) and keep what
// tells ticks apart; tiny and huge axes keep their SI prefixes.
func TestTickLabelsTrimmed(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 52000, []string{"0", "25000", "50000"}},
		{0, 1.2, []string{"0", "0.5", "1"}},
		{0, 2.6e-5, []string{"0", "25µ"}},
	} {
		var got []string
		for _, tk := range (siTicks{plot.DefaultTicks{}}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ticks of %g … %g: %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
}
