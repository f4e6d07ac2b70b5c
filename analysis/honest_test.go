package analysis

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/gatesim"
)

// TestDeltaAgreesWithMedians: in every format, a Δ whose sign
// contradicts the medians shown beside it carries the mark and its note,
// and no ∞ is shown. It reads the golden fixture's report and one made
// so that the paired estimate (+9 %) and the medians (295 → 290)
// disagree.
func TestDeltaAgreesWithMedians(t *testing.T) {
	in := input([]float64{100, 290, 310, 300}, []float64{150, 280, 300, 305})
	in.Plan.Options.Repeats, in.Plan.Options.Workloads = 4, []string{"select1"}
	disagreeing, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fixture, _ := fixtureReport(t)
	marked := 0
	for name, r := range map[string]*Report{"fixture": fixture, "disagreeing": disagreeing} {
		var md, txt, js bytes.Buffer
		if err := r.WriteMarkdown(&md); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(&txt); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		for format, out := range map[string]string{"md": md.String(), "text": txt.String(), "json": js.String()} {
			if strings.Contains(out, "∞") {
				t.Errorf("%s %s shows ∞", name, format)
			}
		}
		marked += checkMarkdownSigns(t, name, md.String())
		marked += checkTextSigns(t, name, txt.String())
		checkJSONSigns(t, name, js.Bytes())
	}
	if marked < 2 {
		t.Errorf("%d disagreeing rows found, want the made one in markdown and text", marked)
	}
}

var leadingNum = regexp.MustCompile(`^[+-]?[0-9.]+`)

func firstNum(s string) (float64, bool) {
	m := leadingNum.FindString(strings.TrimSpace(s))
	if m == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(m, 64)
	return v, err == nil
}

// contradicts reports whether a change and the medians point opposite
// ways.
func contradicts(base, cand, delta float64) bool {
	return delta != 0 && cand != base && (delta > 0) != (cand > base)
}

// checkMarkdownSigns checks the metric tables of two commits: | config |
// base | patch | Δ | p | verdict |; it returns the rows that disagree.
func checkMarkdownSigns(t *testing.T, name, md string) int {
	n := 0
	for _, line := range strings.Split(md, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) == 9 { // a workload's table: configuration, metric, …
			cells = append(cells[:2], cells[3:]...)
		}
		if len(cells) != 8 || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") {
			continue
		}
		base, ok1 := firstNum(cells[2])
		cand, ok2 := firstNum(cells[3])
		delta, ok3 := firstNum(cells[4])
		if !ok1 || !ok2 || !ok3 || !strings.Contains(cells[4], "%") {
			continue
		}
		if contradicts(base, cand, delta) {
			n++
			if !strings.Contains(cells[4], DisagreeMark) || !strings.Contains(md, DisagreeNote) {
				t.Errorf("%s markdown: Δ contradicts the medians without the note: %s", name, line)
			}
		}
	}
	return n
}

// checkTextSigns checks the text tables: metric, base, patch, Δ, verdict.
func checkTextSigns(t *testing.T, name, txt string) int {
	n := 0
	for _, line := range strings.Split(txt, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(strings.TrimRight(f[3], DisagreeMark), "%") {
			continue
		}
		base, ok1 := firstNum(f[1])
		cand, ok2 := firstNum(f[2])
		delta, ok3 := firstNum(f[3])
		if ok1 && ok2 && ok3 && contradicts(base, cand, delta) {
			n++
			if !strings.Contains(f[3], DisagreeMark) || !strings.Contains(strings.Join(strings.Fields(txt), " "), DisagreeNote) {
				t.Errorf("%s text: Δ contradicts the medians without the note: %s", name, line)
			}
		}
	}
	return n
}

// checkJSONSigns checks report.json's rows: a stat whose delta_pct
// contradicts its median against the baseline's, or whose medians'
// ratio is further from it than a quarter of the bar, says
// medians_disagree, and no other.
func checkJSONSigns(t *testing.T, name string, js []byte) {
	var doc struct {
		Rows []struct {
			Config, Metric string
			Stats          []struct {
				Commit          string   `json:"commit"`
				Median          *float64 `json:"median"`
				DeltaPct        *float64 `json:"delta_pct"`
				MediansDisagree bool     `json:"medians_disagree"`
				MinEffectPct    *float64 `json:"min_effect_pct"`
			}
		}
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	for _, row := range doc.Rows {
		if len(row.Stats) < 2 || row.Stats[0].Median == nil {
			continue
		}
		for _, st := range row.Stats[1:] {
			if st.Median == nil || st.DeltaPct == nil {
				continue
			}
			bar := math.NaN()
			if st.MinEffectPct != nil {
				bar = *st.MinEffectPct
			}
			if want := contradicts(*row.Stats[0].Median, *st.Median, *st.DeltaPct) || apart(*st.DeltaPct, *row.Stats[0].Median, *st.Median, bar); want != st.MediansDisagree {
				t.Errorf("%s json: %s %s %s: medians %v → %v, Δ %v, medians_disagree %v", name, row.Config, row.Metric, st.Commit, *row.Stats[0].Median, *st.Median, *st.DeltaPct, st.MediansDisagree)
			}
		}
	}
}

// TestAANeverBetterOrWorse (issue 23): 100 synthetic A/A runs of the
// README's design (4 configurations × 8 repeats, the full metric set, 2 %
// noise, sporadic failed transactions) print no better or worse
// anywhere: not in report.md's tables, the text tables or report.json.
func TestAANeverBetterOrWorse(t *testing.T) {
	md := regexp.MustCompile(`\| (better|worse)\b`)
	txt := regexp.MustCompile(`(?m)\s(better|worse)\*?$`)
	js := regexp.MustCompile(`"verdict": "(better|worse)"`)
	rng := rand.New(rand.NewSource(2312))
	// Run 0 is the control: a −15 % change, which every format calls
	// worse; the 100 after it are A/A.
	for run := range 101 {
		effect := 0.0
		if run == 0 {
			effect = -0.15
		}
		r := simRun(t, rng, gatesim.Design{Configs: 4, Repeats: 8, Effect: effect, Noise: gatesim.Noise{CV: 0.02}, Full: true, FailedCells: 0.01})
		r.Plan.Options.Workloads = []string{"select1", "churn", "slow_churn", "within_max"}
		var m, x, j bytes.Buffer
		if err := r.WriteMarkdown(&m); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteText(&x); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&j); err != nil {
			t.Fatal(err)
		}
		for name, found := range map[string]string{"report.md": md.FindString(m.String()), "text": txt.FindString(x.String()), "report.json": js.FindString(j.String())} {
			switch {
			case run == 0 && found == "":
				t.Fatalf("control: %s does not call a −15 %% change worse", name)
			case run > 0 && found != "":
				t.Errorf("A/A run %d: %s says %q", run, name, strings.TrimSpace(found))
			}
		}
	}
}

// TestApart: the medians' ratio beside Δ is marked when it is further
// from Δ than a quarter of the bar (issue 43's churn: medians
// 42 987 → 43 869, +2.05 %, beside Δ +3.98 % at a 2 % bar), not when
// it is within, nor without a bar or a baseline median.
func TestApart(t *testing.T) {
	for _, c := range []struct {
		delta, base, cand, bar float64
		want                   bool
	}{
		{3.98, 42987, 43869, 2, true},
		{2.9, 100, 102.5, 2, false},
		{2.9, 100, 102.5, 1, true},
		{3.98, 42987, 43869, math.NaN(), false},
		{3.98, 0, 43869, 2, false},
		{-5, 100, 95.2, 2, false},
	} {
		if got := apart(c.delta, c.base, c.cand, c.bar); got != c.want {
			t.Errorf("apart(Δ %v, %v → %v, bar %v) = %v, want %v", c.delta, c.base, c.cand, c.bar, got, c.want)
		}
	}
}

// TestRestsOnGeomeans: the overview shows geometric means beside Δ only
// where Δ is their ratio (a paired log test), never beside a median
// test's or an unpaired row's Δ, where it would show numbers whose
// ratio is not the Δ beside them.
func TestRestsOnGeomeans(t *testing.T) {
	for _, c := range []struct {
		st   Stat
		want bool
	}{
		{Stat{Geomean: 95, BaseGeomean: 100, DeltaPct: -5}, true},
		{Stat{Geomean: 95, BaseGeomean: 100, DeltaPct: -3.1}, false},
		{Stat{Geomean: 95, BaseGeomean: math.NaN(), DeltaPct: -5}, false},
		{Stat{Geomean: 95, BaseGeomean: 0, DeltaPct: -5}, false},
		{Stat{Geomean: 95, BaseGeomean: 100, DeltaPct: math.NaN()}, false},
	} {
		if got := restsOnGeomeans(c.st); got != c.want {
			t.Errorf("geomeans %v → %v, Δ %v: %v, want %v", c.st.BaseGeomean, c.st.Geomean, c.st.DeltaPct, got, c.want)
		}
	}
}
