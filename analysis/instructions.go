package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/perf/profiles"
	"github.com/pgabtest/abtest/results"
)

// InstrWent is, for one instruction configuration (matrix
// --instructions) and commit, the instructions per transaction against
// the baseline, as an absolute and a relative change, and where they
// went by function. Instruction counts are exact, so the change is a
// number of instructions, not an interval.
type InstrWent struct {
	Config string `json:"config"`
	Commit string `json:"commit"`
	Method string `json:"method"`
	// Base and New are the medians of instructions_per_tx; Diff is
	// New − Base and DiffPct the same in percent of Base.
	Base    float64         `json:"base"`
	New     float64         `json:"new"`
	Diff    float64         `json:"diff"`
	DiffPct float64         `json:"diff_pct"`
	Verdict results.Verdict `json:"verdict"`
	// Deltas are the functions with the largest |Δ instructions/tx|,
	// from the cells' per-function profiles (valgrind only): functions
	// valgrind could not name (bare addresses) summed into one row
	// (profiles.UnresolvedAddresses), rows whose change rounds to 0.0
	// left out.
	Deltas []profiles.Delta `json:"deltas,omitempty"`
	// ProfileBase and ProfileNew are the profiles' instructions per
	// transaction over all functions: what the rows add up to.
	ProfileBase float64 `json:"profile_base,omitzero"`
	ProfileNew  float64 `json:"profile_new,omitzero"`
	// Unresolved is the share of each side's instructions in functions
	// valgrind could not name, when over unresolvedHintPct.
	Unresolved []Unresolved `json:"unresolved,omitempty"`
	// DiffProfile is the diff profile's path once written (WritePlots).
	DiffProfile string `json:"diff_profile,omitempty"`
	// Note says why there is no comparison (methods differ).
	Note string `json:"note,omitempty"`

	diff *profile.Profile
}

// instrGroup is one configuration × commit of instruction cells.
type instrGroup struct {
	values  []float64
	methods []string
	prof    *profile.Profile
	tx      float64
}

// instructions compares the instruction cells of each commit with the
// baseline's: medians, verdict (from the rows), per-function deltas.
func (r *Report) instructions() {
	type key struct{ config, commit string }
	groups := map[key]*instrGroup{}
	var keys []key
	for _, rec := range r.records {
		if !rec.Instructions || rec.Status != results.StatusOK || rec.Instr == nil {
			continue
		}
		k := key{rec.Config.ID(), rec.Commit}
		g := groups[k]
		if g == nil {
			g = &instrGroup{}
			groups[k] = g
			keys = append(keys, k)
		}
		g.values = append(g.values, rec.Metrics.Value(results.MetricInstructionsPerTx))
		if !slices.Contains(g.methods, rec.Instr.Method) {
			g.methods = append(g.methods, rec.Instr.Method)
		}
		r.addInstrProfile(g, rec)
	}
	for _, k := range keys {
		b := groups[key{k.config, r.Baseline}]
		if k.commit == r.Baseline || b == nil {
			continue
		}
		r.Instructions = append(r.Instructions, r.instrWent(k.config, k.commit, b, groups[k]))
	}
}

// addInstrProfile merges rec's per-function profile into g.
func (r *Report) addInstrProfile(g *instrGroup, rec results.Record) {
	if rec.Instr.Profile == "" {
		return
	}
	p, err := readProfile(r.Dirs, rec.Instr.Profile)
	if err != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("instruction profile of %s: %v", rec.Cell, err))
		return
	}
	if g.prof == nil {
		g.prof = p
	} else if m, err := profile.Merge([]*profile.Profile{g.prof, p}); err == nil {
		g.prof = m
	}
	g.tx += float64(rec.Instr.Transactions)
}

func (r *Report) instrWent(config, commit string, b, c *instrGroup) InstrWent {
	iw := InstrWent{Config: config, Commit: commit, Method: strings.Join(c.methods, ",")}
	if strings.Join(b.methods, ",") != iw.Method {
		iw.Note = fmt.Sprintf("counted by %s for %s and by %s for %s: not comparable", strings.Join(b.methods, ","), r.Baseline, iw.Method, commit)
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s %s: instructions %s; its verdict is meaningless", config, commit, iw.Note))
		return iw
	}
	iw.Base, iw.New = Median(b.values), Median(c.values)
	iw.Diff = iw.New - iw.Base
	iw.DiffPct = 100 * iw.Diff / iw.Base
	for _, row := range r.rowsFor(strings.SplitN(config, "/", 2)[0], results.MetricInstructionsPerTx) {
		for _, st := range row.Stats {
			if row.Config == config && st.Commit == commit {
				iw.Verdict = st.Verdict
			}
		}
	}
	if b.prof != nil && c.prof != nil {
		r.instrDeltas(&iw, b, c)
	}
	return iw
}

// instrDeltas fills iw's per-function rows from the two sides' profiles.
func (r *Report) instrDeltas(iw *InstrWent, b, c *instrGroup) {
	ds := groupUnresolved(profiles.Compare(b.prof, c.prof, b.tx, c.tx))
	if b.tx > 0 && c.tx > 0 {
		_, tb := profiles.Funcs(b.prof, false)
		_, tc := profiles.Funcs(c.prof, false)
		iw.ProfileBase, iw.ProfileNew = float64(tb)/b.tx, float64(tc)/c.tx
	}
	for _, side := range []struct {
		commit string
		p      *profile.Profile
	}{{r.Baseline, b.prof}, {iw.Commit, c.prof}} {
		if pct := unresolvedPct(side.p); pct > unresolvedHintPct {
			iw.Unresolved = append(iw.Unresolved, Unresolved{Commit: side.commit, Pct: pct})
		}
	}
	// Shown to one decimal: a row that prints as ±0.0 says nothing.
	ds = slices.DeleteFunc(ds, func(d profiles.Delta) bool { return math.Abs(d.Diff) < 0.05 })
	profiles.SortByMagnitude(ds)
	iw.Deltas = ds[:min(10, len(ds))]
	if d, err := profiles.Diff(b.prof, c.prof, b.tx, c.tx); err == nil {
		iw.diff = d
	}
}

// unresolvedPct is the share of p's flat total in functions the
// profiler could not name.
func unresolvedPct(p *profile.Profile) float64 {
	fs, total := profiles.Funcs(p, false)
	var sum int64
	for _, f := range fs {
		if _, ok := profiles.Unresolved(f.Name); ok {
			sum += f.Flat
		}
	}
	if total <= 0 {
		return 0
	}
	return 100 * float64(sum) / float64(total)
}

// groupUnresolved sums the rows of functions valgrind could not name
// (bare addresses, one row each) into one.
func groupUnresolved(ds []profiles.Delta) []profiles.Delta {
	var out []profiles.Delta
	var sum *profiles.Delta
	for _, d := range ds {
		if _, ok := profiles.Unresolved(d.Name); !ok {
			out = append(out, d)
			continue
		}
		if sum == nil {
			sum = &profiles.Delta{Name: profiles.UnresolvedAddresses, Unit: d.Unit}
		}
		sum.Base += d.Base
		sum.New += d.New
		sum.Diff += d.Diff
	}
	if sum != nil {
		out = append(out, *sum)
	}
	return out
}

// instructionBlocks are the instruction section: a row per
// configuration and commit, then where the instructions went; brief: a
// line each.
func (r *Report) instructionBlocks(brief bool) []Block {
	if brief {
		return r.instrBrief()
	}
	if !r.Plan.Options.Instructions {
		return nil
	}
	s := sect{&Heading{2, "Instructions per transaction"}}
	if len(r.Instructions) == 0 {
		s.text("No instruction cells to compare (the host could not count instructions, or the baseline has none).")
		return s
	}
	s.text("One client, a fixed number of transactions with a fixed seed; connection start-up and shutdown taken out by the difference of two run lengths. Counts repeat to a few parts per million, so any change beyond the bar is real.")
	t := &Table{Head: []string{"configuration", "commit", "method", r.Baseline + " (instr/tx)", "commit (instr/tx)", "Δ instructions/tx", "Δ", "verdict"}}
	for _, iw := range r.Instructions {
		if iw.Note != "" {
			t.Rows = append(t.Rows, cells(iw.Config, iw.Commit, iw.Method, "-", "-", "-", "-", iw.Note))
			continue
		}
		d := txt(pct(iw.DiffPct))
		d.Value, d.Verdict, d.Unit = iw.DiffPct, iw.Verdict, "%"
		t.Rows = append(t.Rows, []Cell{txt(iw.Config), txt(iw.Commit), txt(iw.Method), txt(groupDigits(iw.Base, false)), txt(groupDigits(iw.New, false)), txt(groupDigits(iw.Diff, true)), d, txt(text.OrDash(string(iw.Verdict)))})
	}
	s.add(t)
	for _, iw := range r.Instructions {
		s.add(r.instrWentBlocks(iw)...)
	}
	return s
}

// instrWentBlocks are one "where the instructions went" table: the
// functions whose instructions per transaction changed most, against
// the profiles' totals.
func (r *Report) instrWentBlocks(iw InstrWent) []Block {
	if iw.diff == nil && iw.DiffProfile == "" && len(iw.Deltas) == 0 {
		return nil
	}
	s := sect{&Heading{3, fmt.Sprintf("Where the instructions went: %s, %s", iw.Config, iw.Commit)}}
	if iw.DiffProfile != "" {
		s.para(Inline{{Text: "diff profile: "}, {Text: iw.DiffProfile, Link: iw.DiffProfile}})
	}
	if len(iw.Deltas) == 0 {
		s.text("No function's instructions per transaction changed by 0.05 or more.")
	} else {
		t := &Table{Head: []string{"function", r.Baseline + " (instr/tx)", iw.Commit, "Δ instructions/tx"}}
		for _, d := range iw.Deltas {
			t.Rows = append(t.Rows, []Cell{codeCell(d.Name), txt(fmt.Sprintf("%.1f", d.Base)), txt(fmt.Sprintf("%.1f", d.New)), txt(fmt.Sprintf("%+.1f", d.Diff))})
		}
		if iw.ProfileBase > 0 || iw.ProfileNew > 0 {
			t.Rows = append(t.Rows, cells("all functions", fmt.Sprintf("%.1f", iw.ProfileBase), fmt.Sprintf("%.1f", iw.ProfileNew), fmt.Sprintf("%+.1f", iw.ProfileNew-iw.ProfileBase)))
		}
		s.add(t)
	}
	s.add(unresolvedBlocks(iw.Unresolved, "instructions")...)
	return s
}

// instrBrief is the instruction summary of the text report.
func (r *Report) instrBrief() []Block {
	if len(r.Instructions) == 0 {
		return nil
	}
	var items []Item
	for _, iw := range r.Instructions {
		if iw.Note != "" {
			items = append(items, Item{Text: plain(fmt.Sprintf("%s %s: %s", iw.Config, iw.Commit, iw.Note))})
			continue
		}
		line := fmt.Sprintf("%s %s: %s instructions per transaction, %s (%s): %s", iw.Config, iw.Commit, groupDigits(iw.Diff, true), pct(iw.DiffPct), iw.Method, text.OrDash(string(iw.Verdict)))
		if len(iw.Deltas) > 0 {
			line += fmt.Sprintf("; most in %s (%+.0f)", iw.Deltas[0].Name, iw.Deltas[0].Diff)
		}
		items = append(items, Item{Text: plain(line)})
	}
	return []Block{&Heading{2, "Instructions per transaction"}, &List{items}}
}

// groupDigits writes x rounded to an integer with thin groups of three
// digits ("+3 607"), signed when sign is set.
func groupDigits(x float64, sign bool) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	n := int64(math.Round(x))
	s := strconv.FormatInt(max(n, -n), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(" ")
		}
		b.WriteRune(c)
	}
	switch {
	case n < 0:
		return "-" + b.String()
	case sign:
		return "+" + b.String()
	}
	return b.String()
}
