// Package profiles reads, writes, summarises and compares pprof profiles
// (github.com/google/pprof/profile): the top functions of one, the
// per-transaction change of every function between two, and a diff
// profile. It runs nothing, so the analysis can compare the profiles of
// results copied from another host.
package profiles

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
)

// FuncStat is one function's share of a profile.
type FuncStat struct {
	Name string `json:"name"`
	// Flat is the time (the profile's unit) with the function on top
	// of the stack, Cum with it anywhere on it.
	Flat    int64   `json:"flat"`
	Cum     int64   `json:"cum"`
	FlatPct float64 `json:"flat_pct"`
	CumPct  float64 `json:"cum_pct"`
}

// Funcs returns every function's flat and cumulative values, sorted by
// flat (or cum) descending, and the profile's total.
func Funcs(p *profile.Profile, byCum bool) ([]FuncStat, int64) {
	flat := map[string]int64{}
	cum := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		if len(s.Value) == 0 {
			continue
		}
		v := s.Value[0]
		total += v
		seen := map[string]bool{}
		for i, loc := range s.Location {
			for j, line := range loc.Line {
				if line.Function == nil {
					continue
				}
				name := line.Function.Name
				if i == 0 && j == 0 {
					flat[name] += v
				}
				if !seen[name] {
					seen[name] = true
					cum[name] += v
				}
			}
		}
	}
	out := make([]FuncStat, 0, len(cum))
	for name, c := range cum {
		fs := FuncStat{Name: name, Flat: flat[name], Cum: c}
		if total > 0 {
			fs.FlatPct = 100 * float64(fs.Flat) / float64(total)
			fs.CumPct = 100 * float64(fs.Cum) / float64(total)
		}
		out = append(out, fs)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Flat, out[j].Flat
		if byCum {
			a, b = out[i].Cum, out[j].Cum
		}
		if a != b {
			return a > b
		}
		return out[i].Name < out[j].Name
	})
	return out, total
}

// WriteTop prints the top n functions.
func WriteTop(w io.Writer, p *profile.Profile, n int, byCum bool) {
	fs, total := Funcs(p, byCum)
	fmt.Fprintf(w, "%d samples, %.2f s of CPU\n%10s %7s %10s %7s  %s\n", len(p.Sample), float64(total)/1e9, "flat", "flat%", "cum", "cum%", "function")
	for i, f := range fs {
		if i == n {
			break
		}
		fmt.Fprintf(w, "%9.3fs %6.2f%% %9.3fs %6.2f%%  %s\n", float64(f.Flat)/1e9, f.FlatPct, float64(f.Cum)/1e9, f.CumPct, f.Name)
	}
}

// Delta is one function's change between two profiles: flat time per
// transaction when transaction counts are known, else share of the
// profile.
type Delta struct {
	Name string  `json:"name"`
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	Diff float64 `json:"diff"`
	// Unit is the profile's unit per transaction ("ns/tx" for CPU
	// time, "instructions/tx" for instruction counts) or "%".
	Unit string `json:"unit"`
	// Z is the change in standard errors: sample counts are Poisson, so
	// a function's count n has variance n. A large |Z| is a change the
	// sampling cannot explain, however small the function.
	Z float64 `json:"z"`
	// BaseSamples and NewSamples are the function's flat samples in each
	// side, and P the two-sided p-value of the change, when the delta
	// comes from a test of sample counts (the analysis's perf diff).
	BaseSamples int64   `json:"base_samples,omitzero"`
	NewSamples  int64   `json:"new_samples,omitzero"`
	P           float64 `json:"p,omitzero,omitempty"`
}

// FlatSamples returns the number of samples with each function on top
// of the stack, and the profile's number of samples. A sample's count is
// its value over the profile's period, rounded and at least 1: pprof
// merges samples of one stack into one (profile.Merge), and a merged
// sample must count as the samples it holds. A profile without a period
// (instruction counts) counts one per sample.
func FlatSamples(p *profile.Profile) (map[string]int64, int64) {
	flat := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		if len(s.Value) == 0 || s.Value[0] == 0 {
			continue
		}
		n := int64(1)
		if p.Period > 0 {
			n = max(1, int64(math.Round(math.Abs(float64(s.Value[0]))/float64(p.Period))))
		}
		total += n
		if len(s.Location) > 0 && len(s.Location[0].Line) > 0 && s.Location[0].Line[0].Function != nil {
			flat[s.Location[0].Line[0].Function.Name] += n
		}
	}
	return flat, total
}

// UnresolvedAddresses names the row that Unresolved functions of an
// instruction profile are summed into.
const UnresolvedAddresses = "[unresolved addresses]"

// Unresolved says whether name is a function the profiler could not
// name, and in which binary when it says: perf's "[unknown]" (named
// "[unknown] BINARY" by perf.Profile), valgrind's bare addresses
// ("0x00000000004a1b20") and the row they are summed into.
func Unresolved(name string) (binary string, ok bool) {
	if rest, ok := strings.CutPrefix(name, "[unknown]"); ok {
		return strings.TrimSpace(rest), true
	}
	if name == UnresolvedAddresses {
		return "", true
	}
	hex, ok := strings.CutPrefix(name, "0x")
	if !ok || hex == "" {
		return "", false
	}
	for _, c := range hex {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return "", false
		}
	}
	return "", true
}

// Compare lists per-function changes from base to cur, biggest increase
// (regression) first. With txBase and txNew > 0 the values are
// nanoseconds of CPU per transaction; otherwise percentages of each
// profile, which survive different durations but not different
// throughput.
func Compare(base, cur *profile.Profile, txBase, txNew float64) []Delta {
	fb, tb := Funcs(base, false)
	fn, tn := Funcs(cur, false)
	perTx := txBase > 0 && txNew > 0
	norm := func(v int64, total int64, tx float64) float64 {
		if perTx {
			return float64(v) / tx
		}
		if total == 0 {
			return 0
		}
		return 100 * float64(v) / float64(total)
	}
	vals := map[string]*Delta{}
	// Variance of each normalised value, from the sample counts.
	varB, varN := map[string]float64{}, map[string]float64{}
	variance := func(v int64, period int64, total int64, tx float64) float64 {
		if period <= 0 {
			return 0
		}
		n := float64(v) / float64(period) // samples
		if perTx {
			return n * float64(period) * float64(period) / (tx * tx)
		}
		if total == 0 {
			return 0
		}
		return n * math.Pow(100*float64(period)/float64(total), 2)
	}
	unit := "%"
	if perTx {
		unit = perTxUnit(base)
	}
	get := func(name string) *Delta {
		d := vals[name]
		if d == nil {
			d = &Delta{Name: name, Unit: unit}
			vals[name] = d
		}
		return d
	}
	for _, f := range fb {
		get(f.Name).Base = norm(f.Flat, tb, txBase)
		varB[f.Name] = variance(f.Flat, base.Period, tb, txBase)
	}
	for _, f := range fn {
		get(f.Name).New = norm(f.Flat, tn, txNew)
		varN[f.Name] = variance(f.Flat, cur.Period, tn, txNew)
	}
	out := make([]Delta, 0, len(vals))
	for _, d := range vals {
		d.Diff = d.New - d.Base
		if d.Base == 0 && d.New == 0 {
			continue
		}
		if v := varB[d.Name] + varN[d.Name]; v > 0 {
			d.Z = d.Diff / math.Sqrt(v)
		}
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Diff != out[j].Diff {
			return out[i].Diff > out[j].Diff
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// SortByMagnitude orders deltas by |Diff|, biggest first.
func SortByMagnitude(ds []Delta) {
	sort.SliceStable(ds, func(i, j int) bool { return math.Abs(ds[i].Diff) > math.Abs(ds[j].Diff) })
}

// Diff returns cur with base subtracted, as pprof's -diff_base does: base
// samples negated and tagged pprof::base, so that pprof and flame-graph
// viewers show what grew and what shrank. Values are scaled per
// transaction when both counts are known.
func Diff(base, cur *profile.Profile, txBase, txNew float64) (*profile.Profile, error) {
	b := base.Copy()
	c := cur.Copy()
	if txBase > 0 && txNew > 0 {
		// Scale both to per-transaction time, in the units of base.
		c.Scale(txBase / txNew)
	}
	for _, s := range b.Sample {
		if s.Label == nil {
			s.Label = map[string][]string{}
		}
		s.Label["pprof::base"] = []string{"true"}
	}
	b.Scale(-1)
	return profile.Merge([]*profile.Profile{c, b})
}

// Write writes p gzipped to path.
func Write(p *profile.Profile, path string) error {
	if err := safefile.MkdirFor(path, 0o755); err != nil {
		return err
	}
	f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := p.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Read reads a profile file.
func Read(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, exitcode.BadInputf("%s: not a pprof profile: %v", path, err)
	}
	return p, nil
}

// perTxUnit is the unit of a profile's last sample type per transaction:
// nanoseconds for perf's CPU profiles, the count's own name otherwise
// (instruction profiles from cachegrind).
func perTxUnit(p *profile.Profile) string {
	if n := len(p.SampleType); n > 0 && p.SampleType[n-1].Type == "instructions" {
		return "instructions/tx"
	}
	return "ns/tx"
}
