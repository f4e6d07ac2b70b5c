package perf

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/perf/profiles"
)

// FileOptions are a recording into a profile file (abtest perf record).
type FileOptions struct {
	// Processes lists the processes to keep (see Options.Processes).
	Processes func() []int
	Duration  time.Duration
	Hz        int
	// Out is the pprof profile (profile.pb.gz). perf.data goes beside
	// it as NAME.perf.data (removed unless KeepRaw) and perf's log as
	// NAME.perf.log, NAME being Out without .pb.gz.
	Out     string
	KeepRaw bool
}

// RecordFile records like Record and writes the profile to o.Out. It
// returns the result with Path set to the profile's absolute path, or
// nil in a dry run.
func RecordFile(ctx context.Context, run *proc.Runner, o FileOptions) (*Result, error) {
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	raw := strings.TrimSuffix(strings.TrimSuffix(out, ".gz"), ".pb") + ".perf.data"
	res, err := Record(ctx, run, Options{
		Processes: o.Processes, Duration: o.Duration, Hz: o.Hz,
		Raw: raw, KeepRaw: o.KeepRaw, Log: strings.TrimSuffix(raw, ".perf.data") + ".perf.log",
	})
	if err != nil || res == nil {
		return nil, err
	}
	if err := profiles.Write(res.Profile, out); err != nil {
		return nil, exitcode.Failure(err)
	}
	res.Path = out
	return res, nil
}

// WriteSummary prints where the profile is, what it holds and, without
// call graphs, how to get them.
func (r *Result) WriteSummary(w io.Writer) {
	graphs := "call graphs"
	if !r.CallGraphs {
		graphs = "flat only (no frame pointers: build with abtest switch -b release --profiling for call graphs)"
	}
	fmt.Fprintf(w, "profile: %s (%d samples of %s, %s)\n", r.Path, r.Samples, r.Event, graphs)
	if r.Unparsed > 0 {
		fmt.Fprintf(w, "warning: %d lines of perf script could not be read\n", r.Unparsed)
	}
}

// CompareOptions are a comparison of two profile files (abtest perf
// compare).
type CompareOptions struct {
	Base, New string
	// TxBase and TxNew are the transactions in each profile's window;
	// zero compares totals instead of per-transaction figures.
	TxBase, TxNew float64
	// Top is how many functions to print.
	Top int
	// Output receives the diff profile (pprof's -diff_base convention).
	Output string
}

// CompareFiles prints the per-function change from o.Base to o.New, the
// most significant first, and writes the diff profile to o.Output.
func CompareFiles(w io.Writer, o CompareOptions) error {
	base, err := profiles.Read(o.Base)
	if err != nil {
		return err
	}
	cur, err := profiles.Read(o.New)
	if err != nil {
		return err
	}
	ds := profiles.Compare(base, cur, o.TxBase, o.TxNew)
	fmt.Fprintf(w, "%12s %12s %12s %7s  %s\n", "base", "new", "delta", "z", "function")
	n := o.Top
	if n < 0 || n > len(ds) {
		n = len(ds)
	}
	for _, d := range ds[:n] {
		fmt.Fprintf(w, "%12.1f %12.1f %+12.1f %+7.1f  %s (%s)\n", d.Base, d.New, d.Diff, d.Z, d.Name, d.Unit)
	}
	diff, err := profiles.Diff(base, cur, o.TxBase, o.TxNew)
	if err != nil {
		return exitcode.Failure(err)
	}
	if err := profiles.Write(diff, o.Output); err != nil {
		return exitcode.Failure(err)
	}
	fmt.Fprintf(w, "diff profile: %s (abtest perf view %s)\n", o.Output, o.Output)
	return nil
}

// ReportFile prints the top n functions of the profile in file, flat or
// by cumulative time (abtest perf report).
func ReportFile(w io.Writer, file string, n int, byCum bool) error {
	p, err := profiles.Read(file)
	if err != nil {
		return err
	}
	profiles.WriteTop(w, p, n, byCum)
	return nil
}

// ParsePerTx reads --per-tx TXBASE,TXNEW: two positive transaction
// counts.
func ParsePerTx(s string) (base, cur float64, err error) {
	a, b, ok := strings.Cut(s, ",")
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if !ok || err1 != nil || err2 != nil || x <= 0 || y <= 0 {
		return 0, 0, exitcode.BadInputf("--per-tx %q: want TXBASE,TXNEW, two positive transaction counts", s)
	}
	return x, y, nil
}
