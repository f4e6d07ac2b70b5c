package doctor

// The host's measured noise (issue 43): where a run of this host spent
// its spread, within a cell or between cells, and what design that
// asks for.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/results"
)

// NewestRun is the results directory under root (BENCH_RESULTS_DIR)
// whose cells.jsonl was written last, or "" when none has one. A
// symbolic link, to a directory or as cells.jsonl, is not a run of
// this host's: it is skipped, never followed; so is a run whose
// plan.json or cells.jsonl safefile.CheckInput refuses (another
// account's, a FIFO or a device, or over its size bound).
func NewestRun(root string) (string, error) {
	runs, err := NewestRuns(root, 1)
	if len(runs) == 0 {
		return "", err
	}
	return runs[0], err
}

// NewestRuns are at most n of the runs under root NewestRun would
// choose from, newest first.
func NewestRuns(root string, n int) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("doctor: newest run under %s: %w", root, err)
	}
	type run struct {
		dir string
		at  time.Time
	}
	var runs []run
	for _, e := range ents {
		if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		dir := filepath.Join(root, e.Name())
		fi, err := os.Lstat(filepath.Join(dir, "cells.jsonl"))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		// Both files are read, as root too: each must be an input root
		// may read (a regular file of root's or the sudo user's, in
		// directories nobody else can write, under safefile's size
		// bound). A plan.json linked to /dev/zero hung doctor before.
		if safefile.CheckInput(filepath.Join(dir, results.PlanFile)) != nil || safefile.CheckInput(filepath.Join(dir, results.CellsFile)) != nil {
			continue
		}
		runs = append(runs, run{dir, fi.ModTime()})
	}
	slices.SortStableFunc(runs, func(a, b run) int { return b.at.Compare(a.at) })
	var out []string
	for _, r := range runs[:min(n, len(runs))] {
		out = append(out, r.dir)
	}
	return out, nil
}

// measuredNoise is Noise of the newest run under root, when there is
// one that reads.
func measuredNoise(root string) (Finding, bool) {
	if root == "" {
		return Finding{}, false
	}
	dir, err := NewestRun(root)
	if err != nil || dir == "" {
		return Finding{}, false
	}
	f, err := Noise(dir)
	return f, err == nil
}

// Noise reads the run in dir and says where its noise was: "cells
// differ X %, seconds within a cell Y %" (the medians over its
// configurations of analysis.Components' Between and Within), and, when
// the cells differ more than their seconds explain, that more, shorter
// cells answer sooner. Only the cells' metrics and progress are read;
// nothing is analysed beyond the components.
func Noise(dir string) (Finding, error) {
	p, err := results.ReadPlan(dir)
	if err != nil {
		return Finding{}, fmt.Errorf("doctor: noise of %s: %w", dir, err)
	}
	recs, _, err := results.ReadRecordsNoProgress(dir)
	if err != nil {
		return Finding{}, fmt.Errorf("doctor: noise of %s: %w", dir, err)
	}
	return noiseFinding(dir, analysis.NoiseOf(p, recs)), nil
}

// noiseFinding words a run's components.
func noiseFinding(dir string, comps []analysis.Components) Finding {
	var between, within, cell, seconds []float64
	for _, c := range comps {
		if isFinite(c.Between.Pct) {
			between = append(between, c.Between.Pct)
		}
		if isFinite(c.Within.Pct) && c.Seconds > 0 && isFinite(c.CellPct) {
			within = append(within, c.Within.Pct)
			cell = append(cell, c.CellPct)
			seconds = append(seconds, c.Seconds)
		}
	}
	name := filepath.Base(dir)
	if len(between) == 0 {
		return finding("measured noise", OK, "no repeated cells in "+name, "", "")
	}
	value := fmt.Sprintf("cells differ %.1f %%", med(between))
	if len(within) == 0 {
		return finding("measured noise", OK, value+" (no per-second samples) in "+name, "", "")
	}
	w, c, s := med(within), med(cell), med(seconds)
	value += fmt.Sprintf(", seconds within a cell %.1f %%", w)
	if c > w/math.Sqrt(s) {
		return finding("measured noise", Warn, value+": more, shorter cells answer sooner ("+name+")",
			fmt.Sprintf("a cell's own effect (%.1f %%) outweighs what its %g seconds average away: a longer cell buys little, another block a lot", c, s),
			"plan with more repeats of shorter cells: matrix -n shows the design this noise asks for")
	}
	return finding("measured noise", OK, value+": longer cells answer sooner ("+name+")", "", "")
}

func med(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
