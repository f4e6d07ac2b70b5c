// Package pipeline is the one sequence a run goes through: prepare its
// results directory, run the matrix, analyse it, write its report
// (report.md, report.json, plots), gate it and record it in the results
// store; and the short summaries the commands print. It is where the
// matrix's callers (the CLI, the demo, nightly, bisect) meet the
// analysis.
package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/results"
)

// Write writes rep's report into its results directory dir, as every
// run does at its end: its plots (and its trend's), report.md and
// report.json.
func Write(dir string, rep *analysis.Report) error {
	plots := filepath.Join(dir, "plots")
	if err := rep.WritePlots(plots, dir); err != nil {
		return exitcode.Failure(err)
	}
	if rep.Trend != nil {
		if err := rep.Trend.WritePlots(plots, dir); err != nil {
			return exitcode.Failure(err)
		}
	}
	var md, js bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return exitcode.Failure(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		return exitcode.Failure(err)
	}
	if err := safefile.WriteFile(filepath.Join(dir, "report.md"), md.Bytes(), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	if err := safefile.WriteFile(filepath.Join(dir, "report.json"), js.Bytes(), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	return nil
}

// Summary prints the summary of rep as plain text (what the console
// shows at the end of a run, fit to paste into a mail): first a line per
// commit naming what changed (Report.AnswerLines), then the text
// report's Summary section and where dir's report.md is.
func Summary(w io.Writer, dir string, rep *analysis.Report) {
	rep.WriteTextSummary(w)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "report: %s\n", filepath.Join(dir, "report.md"))
}

// Medians prints the median TPS per configuration and commit: what a
// run prints when its report could not be made.
func Medians(w io.Writer, dir string, p *results.Plan) error {
	recs, _, err := results.ReadRecordsNoProgress(dir)
	if err != nil {
		return exitcode.Failure(err)
	}
	tps := map[string]map[string][]float64{}
	failed := 0
	for _, r := range recs {
		if r.Status != results.StatusOK || r.Saturated {
			failed++
			continue
		}
		id := r.Config.ID()
		if tps[id] == nil {
			tps[id] = map[string][]float64{}
		}
		tps[id][r.Commit] = append(tps[id][r.Commit], r.Metrics.Value(results.MetricTPS))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "configuration\t")
	for _, c := range p.Commits {
		fmt.Fprintf(tw, "%s\t", c.Label)
	}
	fmt.Fprintln(tw)
	for _, cfg := range p.Configs {
		fmt.Fprintf(tw, "%s\t", cfg.ID())
		for _, c := range p.Commits {
			if vs := tps[cfg.ID()][c.Label]; len(vs) > 0 {
				fmt.Fprintf(tw, "%.0f\t", analysis.Median(vs))
			} else {
				fmt.Fprint(tw, "—\t") // no cell measured
			}
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(w, "\nmedian TPS:")
	tw.Flush()
	if failed > 0 {
		fmt.Fprintf(w, "%d cells failed or saturated (not in the medians)\n", failed)
	}
	fmt.Fprintf(w, "results: %s\n", dir)
	return nil
}

// Undecided is the decision rule of matrix --until-decided: the
// configurations where a gated metric of a commit is neither decided
// (better, worse, same) nor answered, judged as a sequential design (the
// plan records --until-decided and --max-repeats, and the analysis spends
// α over the looks).
func Undecided(o analysis.Options) func(dir string, look int) ([]string, error) {
	return func(dir string, _ int) ([]string, error) {
		in, err := analysis.LoadSummaries(dir)
		if err != nil {
			return nil, err
		}
		rep, err := analysis.Analyze(in, o)
		if err != nil {
			return nil, err
		}
		return rep.Undecided(), nil
	}
}
