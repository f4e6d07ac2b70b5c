package analysis

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aclements/go-moremath/mathx"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/perf/profiles"
	"github.com/pgabtest/abtest/results"

	"github.com/google/pprof/profile"
)

// The perf diff's noise rule. A profile of a few seconds at perf's
// 499 Hz holds tens to hundreds of samples of the server, so most
// per-function differences between two of them are sampling noise. A
// function's change is listed only when all three hold:
//
//   - its sample counts differ beyond chance: Fisher's exact test of
//     the 2×2 table (its samples and the others', per side; a pooled
//     two-proportion z test beyond fisherExactMax samples of it, where
//     the normal approximation is good), with Holm's procedure at
//     family-wise perfAlpha over every function with a sample in either
//     side;
//   - its share of the samples moved by at least perfMinShift
//     percentage points;
//   - with two or more baseline profiles, the move exceeds the range of
//     the function's share between the baseline's own profiles (the
//     run's own repeat-to-repeat noise, which sampling alone understates).
const (
	perfAlpha    = 0.01
	perfMinShift = 0.5
	// perfRows and perfTop bound the rows of a change table and of the
	// baseline's top functions.
	perfRows = 10
	perfTop  = 5
	// unresolvedHintPct: above this share of unresolved samples (or
	// instructions) the report says how to get symbols.
	unresolvedHintPct = 10.0
)

// TimeWent is, for one configuration and commit, where the CPU time moved
// against the baseline, from the cells' profiles: each function's share
// of the samples (flat: the function on top of the stack).
type TimeWent struct {
	Config string `json:"config"`
	Commit string `json:"commit"`
	// BaseSamples and Samples are the samples of the baseline's and the
	// commit's profiles; BaseProfiles and Profiles how many profiles.
	BaseSamples  int64 `json:"base_samples"`
	Samples      int64 `json:"samples"`
	BaseProfiles int   `json:"base_profiles"`
	Profiles     int   `json:"profiles"`
	// Top is the baseline's largest functions (Base: share in %).
	Top []profiles.Delta `json:"top"`
	// Tested is the number of functions compared: the family the
	// multiple-comparison correction is over.
	Tested int `json:"tested"`
	// Deltas are the changes of share beyond this run's noise (see
	// perfAlpha), most significant first; empty: no difference beyond
	// noise.
	Deltas []profiles.Delta `json:"deltas"`
	// Unresolved lists, per side, the binaries whose samples perf could
	// not name, when they are over unresolvedHintPct of that side.
	Unresolved []Unresolved `json:"unresolved,omitempty"`
	// Diff is the diff profile's path once written (WritePlots).
	Diff       string `json:"diff,omitempty"`
	CallGraphs bool   `json:"call_graphs"`

	diff *profile.Profile
}

// Unresolved is the share of a commit's samples (or instructions) that
// the profiler could not attribute to a function, by binary.
type Unresolved struct {
	Commit string `json:"commit"`
	// Binary is the binary perf named ("postgres", "libc.so.6"); empty
	// when the profiler did not say.
	Binary string  `json:"binary"`
	Pct    float64 `json:"pct"`
}

// perfGroup is the profiled cells of one configuration and commit.
type perfGroup struct {
	merged *profile.Profile
	tx     float64
	graphs bool
	// counts and totals are each profile's flat samples per function
	// and its number of samples.
	counts []map[string]int64
	totals []int64
}

func (g *perfGroup) add(p *profile.Profile, perf *results.PerfInfo) {
	flat, total := profiles.FlatSamples(p)
	g.counts, g.totals = append(g.counts, flat), append(g.totals, total)
	if g.merged == nil {
		g.merged = p
	} else if m, err := profile.Merge([]*profile.Profile{g.merged, p}); err == nil {
		g.merged = m
	}
	g.tx += perf.Tx
	g.graphs = g.graphs || perf.CallGraphs
}

// sum is the group's samples per function and in all.
func (g *perfGroup) sum() (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	for i, c := range g.counts {
		for f, n := range c {
			out[f] += n
		}
		total += g.totals[i]
	}
	return out, total
}

// spread is the range of f's share (in %) between the group's profiles;
// 0 with fewer than two.
func (g *perfGroup) spread(f string) float64 {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for i, c := range g.counts {
		if g.totals[i] == 0 {
			continue
		}
		s := 100 * float64(c[f]) / float64(g.totals[i])
		lo, hi, n = math.Min(lo, s), math.Max(hi, s), n+1
	}
	if n < 2 {
		return 0
	}
	return hi - lo
}

// profiles reads the cells' profiles per configuration and commit and
// compares each commit's with the baseline's.
func (r *Report) profiles(base string) {
	type key struct{ config, commit string }
	groups := map[key]*perfGroup{}
	var keys []key
	failed, firstErr := 0, ""
	for _, rec := range r.records {
		if rec.Status != results.StatusOK || rec.Perf == nil {
			continue
		}
		if rec.Perf.Error != "" {
			if failed++; failed == 1 {
				firstErr = fmt.Sprintf("%s: %s", rec.Cell, rec.Perf.Error)
			}
			continue
		}
		if rec.Perf.Profile == "" {
			continue
		}
		p, err := readProfile(r.Dirs, rec.Perf.Profile)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("profile of %s: %v", rec.Cell, err))
			continue
		}
		k := key{rec.Config.ID(), rec.Commit}
		if groups[k] == nil {
			groups[k] = &perfGroup{}
			keys = append(keys, k)
		}
		groups[k].add(p, rec.Perf)
	}
	if failed > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("no profile in %d cell(s), left out of \"Where the time went\" (first: %s)", failed, firstErr))
	}
	for _, k := range keys {
		b := groups[key{k.config, base}]
		if k.commit == base || b == nil {
			continue
		}
		r.TimeWent = append(r.TimeWent, timeWent(k.config, base, k.commit, b, groups[k]))
	}
}

// timeWent compares commit's profiles c with the baseline's b.
func timeWent(config, base, commit string, b, c *perfGroup) TimeWent {
	tw := TimeWent{Config: config, Commit: commit, CallGraphs: b.graphs && c.graphs, BaseProfiles: len(b.counts), Profiles: len(c.counts)}
	bs, nb := b.sum()
	cs, nc := c.sum()
	tw.BaseSamples, tw.Samples = nb, nc
	tw.Top = topShares(bs, nb, perfTop)
	tw.Deltas, tw.Tested = shareShifts(b, bs, nb, cs, nc)
	if len(tw.Deltas) > perfRows {
		tw.Deltas = tw.Deltas[:perfRows]
	}
	tw.Unresolved = append(unresolved(base, bs, nb), unresolved(commit, cs, nc)...)
	if d, err := profiles.Diff(b.merged, c.merged, b.tx, c.tx); err == nil {
		tw.diff = d
	}
	return tw
}

// topShares is the n functions with the most samples.
func topShares(counts map[string]int64, total int64, n int) []profiles.Delta {
	if total == 0 {
		return nil
	}
	var out []profiles.Delta
	for f, k := range counts {
		out = append(out, profiles.Delta{Name: f, Base: 100 * float64(k) / float64(total), BaseSamples: k, Unit: "%"})
	}
	slices.SortFunc(out, func(a, b profiles.Delta) int {
		return cmp.Or(cmp.Compare(b.BaseSamples, a.BaseSamples), strings.Compare(a.Name, b.Name))
	})
	return out[:min(n, len(out))]
}

// shareShifts tests every function's change of share (see perfAlpha)
// and returns those beyond noise, smallest p first, and how many were
// tested.
func shareShifts(b *perfGroup, bs map[string]int64, nb int64, cs map[string]int64, nc int64) ([]profiles.Delta, int) {
	if nb == 0 || nc == 0 {
		return nil, 0
	}
	var all []profiles.Delta
	for f := range bs {
		all = append(all, profiles.Delta{Name: f})
	}
	for f := range cs {
		if _, ok := bs[f]; !ok {
			all = append(all, profiles.Delta{Name: f})
		}
	}
	ps := make([]float64, len(all))
	for i := range all {
		d := &all[i]
		d.BaseSamples, d.NewSamples, d.Unit = bs[d.Name], cs[d.Name], "%"
		d.Base, d.New = 100*float64(d.BaseSamples)/float64(nb), 100*float64(d.NewSamples)/float64(nc)
		d.Diff = d.New - d.Base
		d.Z = twoProportionZ(d.BaseSamples, nb, d.NewSamples, nc)
		d.P = fisherTwoSided(d.BaseSamples, nb, d.NewSamples, nc)
		if d.BaseSamples+d.NewSamples > fisherExactMax {
			d.P = math.Erfc(math.Abs(d.Z) / math.Sqrt2)
		}
		ps[i] = d.P
	}
	rejected, _ := holm(ps, perfAlpha)
	var out []profiles.Delta
	for i, d := range all {
		if rejected[i] && math.Abs(d.Diff) >= perfMinShift && math.Abs(d.Diff) > b.spread(d.Name) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(x, y profiles.Delta) int {
		return cmp.Or(cmp.Compare(x.P, y.P), cmp.Compare(math.Abs(y.Diff), math.Abs(x.Diff)), strings.Compare(x.Name, y.Name))
	})
	return out, len(all)
}

// fisherExactMax is the most samples of one function fisherTwoSided
// sums over; the cost grows with them.
const fisherExactMax = 5000

// fisherTwoSided is the two-sided p-value of Fisher's exact test that a
// of n and b of m come from one proportion: given the a+b samples, b is
// hypergeometric; the p-value sums the probabilities of every b no more
// likely than the one observed.
func fisherTwoSided(a, n, b, m int64) float64 {
	k := int(a + b)
	logP := func(x int) float64 {
		return mathx.Lchoose(k, x) + mathx.Lchoose(int(n+m)-k, int(m)-x) - mathx.Lchoose(int(n+m), int(m))
	}
	obs := logP(int(b))
	var p float64
	for x := max(0, k-int(n)); x <= min(k, int(m)); x++ {
		if lp := logP(x); lp <= obs+1e-7 {
			p += math.Exp(lp)
		}
	}
	return math.Min(1, p)
}

// twoProportionZ is the pooled two-proportion z of a of n against b of m.
func twoProportionZ(a, n, b, m int64) float64 {
	p := float64(a+b) / float64(n+m)
	se := math.Sqrt(p * (1 - p) * (1/float64(n) + 1/float64(m)))
	if se == 0 {
		return 0
	}
	return (float64(b)/float64(m) - float64(a)/float64(n)) / se
}

// unresolved is commit's unresolved share by binary, when all of it is
// over unresolvedHintPct; biggest first.
func unresolved(commit string, counts map[string]int64, total int64) []Unresolved {
	if total == 0 {
		return nil
	}
	by := map[string]int64{}
	var sum int64
	for f, n := range counts {
		if bin, ok := profiles.Unresolved(f); ok {
			by[bin] += n
			sum += n
		}
	}
	if 100*float64(sum)/float64(total) <= unresolvedHintPct {
		return nil
	}
	var out []Unresolved
	for bin, n := range by {
		out = append(out, Unresolved{Commit: commit, Binary: bin, Pct: 100 * float64(n) / float64(total)})
	}
	slices.SortFunc(out, func(a, b Unresolved) int {
		return cmp.Or(cmp.Compare(b.Pct, a.Pct), strings.Compare(a.Binary, b.Binary))
	})
	return out
}

// readProfile finds rel in one of the result directories.
func readProfile(dirs []string, rel string) (*profile.Profile, error) {
	var last error
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, rel))
		if err != nil {
			last = err
			continue
		}
		p, err := profile.Parse(f)
		f.Close()
		return p, err
	}
	return nil, last
}

// writeDiffs writes each diff profile into dir: perf's (diff-…) and
// the instructions' (instr-diff-…), each path kept relative to relTo.
func (r *Report) writeDiffs(dir, relTo string) error {
	write := func(prefix, config, commit string, p *profile.Profile, rel *string) error {
		if p == nil {
			return nil
		}
		path := filepath.Join(dir, prefix+fileSafe.ReplaceAllString(config, "_")+"-"+commit+".pb.gz")
		if err := profiles.Write(p, path); err != nil {
			return err
		}
		if r, err := filepath.Rel(relTo, path); err == nil {
			*rel = r
		}
		return nil
	}
	for i := range r.TimeWent {
		tw := &r.TimeWent[i]
		if err := write("diff-", tw.Config, tw.Commit, tw.diff, &tw.Diff); err != nil {
			return err
		}
	}
	for i := range r.Instructions {
		iw := &r.Instructions[i]
		if err := write("instr-diff-", iw.Config, iw.Commit, iw.diff, &iw.DiffProfile); err != nil {
			return err
		}
	}
	return nil
}

// timeWentBlocks are the perf diff: per configuration and commit the
// samples, the functions whose share moved beyond noise and the
// baseline's top; brief: a few lines each.
func (r *Report) timeWentBlocks(brief bool) []Block {
	if brief {
		return r.timeWentBrief()
	}
	if !r.Plan.Options.Perf {
		return nil
	}
	s := sect{&Heading{2, "Where the time went"}}
	if len(r.TimeWent) == 0 {
		s.text("No profiles to compare (perf was unavailable, or no cell of the baseline has one).")
		return s
	}
	s.para(Inline{{Text: fmt.Sprintf("Each function's share of the CPU samples (flat: the function on top of the stack) in profiles of the middle of each cell, against %s. A change is listed only beyond this run's noise: its sample counts differ by Fisher's exact test (Holm over the functions compared, α = %g), its share moved by at least %.1f percentage points, and by more than it varies between %s's own profiles. Open a diff profile with ", r.Baseline, perfAlpha, perfMinShift, r.Baseline)},
		{Text: "abtest perf view FILE", Code: true}, {Text: " (flame graph)."}})
	for _, tw := range r.TimeWent {
		s.add(r.timeWentOne(tw)...)
	}
	return s
}

// timeWentOne is one configuration and commit of the perf diff.
func (r *Report) timeWentOne(tw TimeWent) []Block {
	graphs := "call graphs"
	if !tw.CallGraphs {
		graphs = "flat profiles only: the binaries have no frame pointers (build with --profiling for call graphs)"
	}
	s := sect{&Heading{3, fmt.Sprintf("%s: %s (%s)", tw.Config, tw.Commit, graphs)}}
	samples := Inline{{Text: fmt.Sprintf("Samples: %s %d in %s, %s %d in %s.", r.Baseline, tw.BaseSamples, text.Count(tw.BaseProfiles, "profile"), tw.Commit, tw.Samples, text.Count(tw.Profiles, "profile"))}}
	if len(tw.Top) > 0 {
		samples = append(samples, Span{Text: fmt.Sprintf(" Top of %s:", r.Baseline)})
		sep := " "
		for _, t := range tw.Top {
			samples = append(samples, Span{Text: sep}, Span{Text: t.Name, Code: true}, Span{Text: fmt.Sprintf(" %.1f %% (%d)", t.Base, t.BaseSamples)})
			sep = ", "
		}
		samples = append(samples, Span{Text: "."})
	}
	s.para(samples)
	if tw.Diff != "" {
		s.para(Inline{{Text: "diff profile: "}, {Text: tw.Diff, Link: tw.Diff}})
	}
	s.add(unresolvedBlocks(tw.Unresolved, "samples")...)
	if len(tw.Deltas) == 0 {
		s.text(fmt.Sprintf("No difference beyond noise (%d and %d samples, %d functions compared).", tw.BaseSamples, tw.Samples, tw.Tested))
		return s
	}
	t := &Table{Head: []string{"function", r.Baseline + " samples", "share", tw.Commit + " samples", "share", "Δ share (points)", "p"}}
	for _, d := range tw.Deltas {
		t.Rows = append(t.Rows, []Cell{codeCell(d.Name), txt(fmt.Sprint(d.BaseSamples)), txt(fmt.Sprintf("%.1f %%", d.Base)), txt(fmt.Sprint(d.NewSamples)), txt(fmt.Sprintf("%.1f %%", d.New)), txt(fmt.Sprintf("%+.1f", d.Diff)), txt(fmt.Sprintf("%.2g", d.P))})
	}
	s.add(t)
	return s
}

// unresolvedBlocks say how to get symbols for the binaries whose
// samples (or instructions: what) the profiler could not name.
func unresolvedBlocks(us []Unresolved, what string) []Block {
	var out []Block
	for _, u := range unresolvedSides(us) {
		out = append(out, &Quote{Inline{{Text: fmt.Sprintf("Missing symbols: %.0f %% of %s's %s are unresolved%s. The profiler needs the binaries' symbols: rebuild with ", u.Pct, u.Commit, what, u.Binary)},
			{Text: "--profiling", Code: true}, {Text: " (keeps symbols and frame pointers at the same optimisation; "}, {Text: "-b debug", Code: true},
			{Text: " would change what is measured), or install the -dbgsym (-debuginfo) package of a binary abtest did not build."}}})
	}
	return out
}

// unresolvedSides sums us per commit: Pct the commit's unresolved
// share, Binary the binaries perf named (" (postgres 18 %, libc.so.6
// 2 %)"; those under 0.5 % left out), or "" when it named none.
func unresolvedSides(us []Unresolved) []Unresolved {
	var out []Unresolved
	var parts [][]string
	var named []bool
	for _, u := range us {
		i := slices.IndexFunc(out, func(o Unresolved) bool { return o.Commit == u.Commit })
		if i < 0 {
			i = len(out)
			out, parts, named = append(out, Unresolved{Commit: u.Commit}), append(parts, nil), append(named, false)
		}
		out[i].Pct += u.Pct
		if u.Pct >= 0.5 {
			name := u.Binary
			if name == "" {
				name = "binary not named"
			}
			parts[i] = append(parts[i], fmt.Sprintf("%s %.0f %%", name, u.Pct))
			named[i] = named[i] || u.Binary != ""
		}
	}
	for i := range out {
		if named[i] {
			out[i].Binary = " (" + strings.Join(parts[i], ", ") + ")"
		}
	}
	return out
}

// timeWentBrief is the perf diff of the text report: per commit its
// samples, the changes beyond noise (or that there are none) and the
// baseline's top functions.
func (r *Report) timeWentBrief() []Block {
	if len(r.TimeWent) == 0 {
		return nil
	}
	var items []Item
	for _, tw := range r.TimeWent {
		head := fmt.Sprintf("%s %s: %d samples (%s %d)", tw.Config, tw.Commit, tw.Samples, r.Baseline, tw.BaseSamples)
		if len(tw.Deltas) == 0 {
			head += ": no difference beyond noise"
		}
		it := Item{Text: plain(head)}
		sub := func(f string, a ...any) { it.Sub = append(it.Sub, Item{Text: plain(fmt.Sprintf(f, a...))}) }
		for _, d := range tw.Deltas {
			sub("%s %.1f %% → %.1f %% (%+.1f points; %d → %d samples, p %.2g)", d.Name, d.Base, d.New, d.Diff, d.BaseSamples, d.NewSamples, d.P)
		}
		var top []string
		for _, t := range tw.Top {
			top = append(top, fmt.Sprintf("%s %.0f %%", t.Name, t.Base))
		}
		if len(top) > 0 {
			sub("top of %s: %s", r.Baseline, strings.Join(top, ", "))
		}
		for _, u := range unresolvedSides(tw.Unresolved) {
			sub("missing symbols: %.0f %% of %s's samples unresolved%s: rebuild with --profiling, or install the -dbgsym package of a binary abtest did not build", u.Pct, u.Commit, u.Binary)
		}
		items = append(items, it)
	}
	return []Block{&Heading{2, "Where the time went (share of CPU samples, changes beyond noise)"}, &List{items}}
}
