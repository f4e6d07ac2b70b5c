package analysis

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/results"
)

// Formats are the report formats Output writes: markdown, plain text (a
// terminal, a mail), JSON, and benchstat's format.
var Formats = []string{"md", "text", "json", "bench"}

// CheckFormat refuses a format Output does not write.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return exitcode.BadInputf("--format %q: use md, text, json or bench", format)
	}
	return nil
}

// Output writes r in format (one of Formats) to w when out is empty,
// else to the file out (never over a results file; markdown gets its
// plots in a plots directory beside it), saying so on note. bench with a
// directory out (an existing one, or a trailing slash) writes one file
// per commit and says on note the benchstat command that compares them.
func (r *Report) Output(w io.Writer, format, out string, note io.Writer) error {
	return r.output(w, format, out, note, nil)
}

// AnalyzeOutput is Analyze, then Output of the report, but a markdown
// report's tps-time plots are drawn while the analysis runs, on the
// core it leaves free: the plots directory is made (or refused) once
// the options are checked, before the analysis.
func AnalyzeOutput(in *Input, o Options, w io.Writer, format, out string, note io.Writer) (*Report, error) {
	a, err := newAnalyzer(in, o)
	if err != nil {
		return nil, err
	}
	var early *timePlots
	if format == "md" && out != "" && CheckOutput(format, out) == nil {
		report := ReportPath(format, out)
		dir := filepath.Join(filepath.Dir(report), "plots")
		if err := plotsDir(dir); err != nil {
			return nil, exitcode.Failure(err)
		}
		early = a.r.startTimePlots(dir, filepath.Dir(report))
	}
	a.run()
	return a.r, a.r.output(w, format, out, note, early)
}

// output is Output, early the tps-time plots drawn while analysing (nil:
// none); it returns once they are written.
func (r *Report) output(w io.Writer, format, out string, note io.Writer, early *timePlots) error {
	defer early.wait()
	if err := CheckOutput(format, out); err != nil {
		return err
	}
	out = ReportPath(format, out)
	if format == "bench" && isDir(out) {
		paths, err := r.WriteBenchFiles(out)
		if err != nil {
			return exitcode.Failure(err)
		}
		fmt.Fprintf(note, "benchstat %s\n", strings.Join(paths, " "))
		return nil
	}
	var buf bytes.Buffer
	if out != "" {
		w = &buf
		if format == "md" {
			dir := filepath.Join(filepath.Dir(out), "plots")
			var err error
			if early == nil {
				err = plotsDir(dir) // made before the analysis otherwise
			}
			if err == nil {
				err = r.writePlots(dir, filepath.Dir(out), early)
			}
			if err != nil {
				return exitcode.Failure(err)
			}
		}
	}
	write := map[string]func(io.Writer) error{"md": r.WriteMarkdown, "text": r.WriteText, "json": r.WriteJSON, "bench": r.WriteBench}[format]
	if err := write(w); err != nil {
		return exitcode.Failure(err)
	}
	if out == "" {
		return nil
	}
	if err := safefile.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	fmt.Fprintf(note, "report: %s\n", out)
	return nil
}

// CheckOutput refuses a format Output does not write, and an output it
// would not write to (results.CheckOutput; a directory only for bench).
func CheckOutput(format, out string) error {
	if isDir(out) {
		if _, err := os.Stat(filepath.Join(out, results.PlanFile)); err == nil {
			return exitcode.BadInputf("-o %s: is a results directory, whose report is the run's own; write this one elsewhere", out)
		}
	}
	out = ReportPath(format, out)
	if err := CheckFormat(format); err != nil || out == "" || format == "bench" && isDir(out) {
		return err
	}
	return results.CheckOutput(out)
}

// ReportPath is where -o out puts a report of format: a directory
// (an existing one, or a name ending in /) gets report.md (its plots
// beside it, in plots/), report.txt or report.json inside it, as a run's
// results directory does; bench writes its files there itself; a file
// name is that file.
func ReportPath(format, out string) string {
	if !isDir(out) || format == "bench" {
		return out
	}
	name := map[string]string{"md": "report.md", "text": "report.txt", "json": "report.json"}[format]
	if name == "" {
		return out
	}
	return filepath.Join(out, name)
}

// OutputIsDir reports whether -o out names a directory (an existing
// one, or a name ending in /): where a report and its plots go. A file
// name is the deprecated spelling (issue 42: -o is a directory for
// every output of more than one file).
func OutputIsDir(out string) bool { return isDir(out) }

// isDir: a trailing slash or an existing directory.
func isDir(out string) bool {
	if out == "" {
		return false
	}
	st, err := os.Stat(out)
	return strings.HasSuffix(out, "/") || err == nil && st.IsDir()
}

// ParseThresholds reads --threshold METRIC=PCT values (a trailing % is
// allowed) into Options.Thresholds.
func ParseThresholds(list []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, t := range list {
		name, v, ok := strings.Cut(t, "=")
		n, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
		if !ok || err != nil || checkThreshold(n) != nil {
			return out, exitcode.BadInputf("--threshold %q: want METRIC=PCT with PCT from 0 to %d, e.g. tps=3", t, maxThresholdPct)
		}
		out[name] = n
	}
	return out, nil
}

// CheckAlpha refuses a significance level that is not above 0 and below
// 0.5: NaN or 0 would test nothing, and at 0.5 or above the report's
// 1−2α confidence interval is empty.
func CheckAlpha(alpha float64) error {
	if !(alpha > 0 && alpha < 0.5) {
		return exitcode.BadInputf("--alpha %v: want a significance level above 0 and below 0.5, e.g. 0.01", alpha)
	}
	return nil
}

// maxThresholdPct is the largest bar --threshold takes: a bar the size
// of the measurement calls a halved TPS the same (--threshold tps=1e9
// and 1e308 were accepted, issues 39 and 40).
const maxThresholdPct = 50

// checkThreshold refuses a minimum effect that is negative, NaN, or
// above maxThresholdPct.
func checkThreshold(pct float64) error {
	if !(pct >= 0 && pct <= maxThresholdPct) {
		return fmt.Errorf("%v: want a percentage from 0 to %d", pct, maxThresholdPct)
	}
	return nil
}

// AnalyzeDirs loads results directories (Load) and analyses them.
func AnalyzeDirs(o Options, dirs ...string) (*Report, error) {
	in, err := Load(dirs...)
	if err != nil {
		return nil, err
	}
	return Analyze(in, o)
}
