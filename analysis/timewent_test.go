package analysis

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/pgabtest/abtest/perf/profiles"
	"github.com/pgabtest/abtest/results"
)

// perfPeriod is perf's nominal period at 499 Hz, in nanoseconds.
const perfPeriod = 2004008

// share is one function's probability of being on top of a sample.
type share struct {
	name string
	p    float64
}

// serverMix is a pgbench server's flat profile, roughly: the shape of
// the A/A run (LWLockAcquire, __send, …).
var serverMix = []share{
	{"LWLockAcquire", 0.14}, {"__send", 0.10}, {"ExecInterpExpr", 0.10}, {"hash_search_with_hash_value", 0.08},
	{"AllocSetAlloc", 0.07}, {"__recv", 0.07}, {"PostgresMain", 0.06}, {"pq_getbyte", 0.05},
	{"LWLockRelease", 0.05}, {"ReadBuffer_common", 0.05}, {"palloc", 0.04}, {"memcpy", 0.04},
	{"exec_simple_query", 0.04}, {"finish_xact_command", 0.04}, {"pgstat_report_stat", 0.07},
}

// synthProfile draws n samples from mix, as perf.Profile writes them:
// one sample per event, its value the period.
func synthProfile(rng *rand.Rand, mix []share, n int) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     perfPeriod,
	}
	locs := map[string]*profile.Location{}
	for range n {
		u, name := rng.Float64(), mix[len(mix)-1].name
		for _, s := range mix {
			if u < s.p {
				name = s.name
				break
			}
			u -= s.p
		}
		loc := locs[name]
		if loc == nil {
			fn := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name}
			loc = &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: fn}}}
			p.Function, p.Location, locs[name] = append(p.Function, fn), append(p.Location, loc), loc
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{perfPeriod}})
	}
	return p
}

// perfPair is the perf diff of repeats profiles of n samples each per
// side, drawn from base and cur, through the report's own reading path
// (files, records, merging).
func perfPair(t *testing.T, seed uint64, base, cur []share, n, repeats int) TimeWent {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	r := &Report{Dirs: []string{dir}, Baseline: "base"}
	for i := range repeats {
		for _, c := range []string{"base", "patch"} {
			mix := map[string][]share{"base": base, "patch": cur}[c]
			rel := fmt.Sprintf("cells/%s-%d/profile.pb.gz", c, i)
			if err := profiles.Write(synthProfile(rng, mix, n), filepath.Join(dir, rel)); err != nil {
				t.Fatal(err)
			}
			r.records = append(r.records, results.Record{Cell: fmt.Sprintf("%s-%d", c, i), Commit: c, Config: results.Config{Workload: "select1", Clients: 2}, Repeat: i, Status: results.StatusOK,
				Perf: &results.PerfInfo{Profile: rel, Samples: n, Tx: 1000}})
		}
	}
	r.profiles("base")
	if len(r.TimeWent) != 1 {
		t.Fatalf("time went: %+v (warnings %v)", r.TimeWent, r.Warnings)
	}
	return r.TimeWent[0]
}

// perfPairMem is perfPair without files: the groups made in memory,
// for the loops over many seeds.
func perfPairMem(seed uint64, base, cur []share, n, repeats int) TimeWent {
	rng := rand.New(rand.NewPCG(seed, 1))
	b, c := &perfGroup{}, &perfGroup{}
	for range repeats {
		b.add(synthProfile(rng, base, n), &results.PerfInfo{Tx: 1000})
		c.add(synthProfile(rng, cur, n), &results.PerfInfo{Tx: 1000})
	}
	return timeWent("select1/c2/cpuall", "base", "patch", b, c)
}

// timeWentMarkdown renders tw as the report does.
func timeWentMarkdown(tw TimeWent) string {
	r := &Report{Baseline: "base", Plan: &results.Plan{Options: results.PlanOpts{Perf: true}}, TimeWent: []TimeWent{tw}}
	var b bytes.Buffer
	writeMarkdownBlocks(&b, r.timeWentBlocks(false))
	return b.String()
}

// TestTimeWentAANoise is issue 23's A/A run: two profiles of one binary
// with ~38 samples each list nothing, and say so with the sample counts
// and the baseline's top functions. Over 200 such pairs (and 100 of
// three repeats a side) not one function is called changed: sampling
// noise is not a finding.
func TestTimeWentAANoise(t *testing.T) {
	tw := perfPair(t, 1, serverMix, serverMix, 38, 1)
	md := timeWentMarkdown(tw)
	for _, want := range []string{
		"Samples: base 38 in 1 profile, patch 38 in 1 profile.",
		"Top of base: `",
		"No difference beyond noise (38 and 38 samples, ",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| function |") {
		t.Errorf("an A/A pair has a change table:\n%s", md)
	}
	var listed []string
	for seed := range uint64(200) {
		for _, d := range perfPairMem(100+seed, serverMix, serverMix, 38, 1).Deltas {
			listed = append(listed, fmt.Sprintf("seed %d: %s %+.1f (p %.2g)", seed, d.Name, d.Diff, d.P))
		}
	}
	for seed := range uint64(100) {
		for _, d := range perfPairMem(1000+seed, serverMix, serverMix, 40, 3).Deltas {
			listed = append(listed, fmt.Sprintf("3 repeats, seed %d: %s %+.1f (p %.2g)", seed, d.Name, d.Diff, d.P))
		}
	}
	if len(listed) > 0 {
		t.Errorf("A/A pairs list changes:\n%s", strings.Join(listed, "\n"))
	}
}

// TestTimeWentRealShift: a function that goes from 5 % to 40 % of the
// samples (a new lock contention, say) is listed first, with both
// sides' sample counts. (At 40 samples a side the rule finds that shift
// in 57 % of pairs, and a 5 % → 50 % one in 88 %: so few samples show
// only a drastic change.)
func TestTimeWentRealShift(t *testing.T) {
	shifted := slices.Clone(serverMix)
	shifted[0] = share{"LWLockAcquire", 0.40}
	// The others shrink in proportion: scale by what is left.
	for i := 1; i < len(shifted); i++ {
		shifted[i].p *= 0.60 / 0.86
	}
	base := slices.Clone(serverMix)
	base[0] = share{"LWLockAcquire", 0.05}
	for i := 1; i < len(base); i++ {
		base[i].p *= 0.95 / 0.86
	}
	for _, n := range []int{100, 400} {
		tw := perfPair(t, 7, base, shifted, n, 1)
		if len(tw.Deltas) == 0 || tw.Deltas[0].Name != "LWLockAcquire" || tw.Deltas[0].Diff < 20 {
			t.Fatalf("%d samples: deltas %+v", n, tw.Deltas)
		}
		d := tw.Deltas[0]
		row := fmt.Sprintf("| `LWLockAcquire` | %d | %.1f %% | %d | %.1f %% | %+.1f |", d.BaseSamples, d.Base, d.NewSamples, d.New, d.Diff)
		if md := timeWentMarkdown(tw); !strings.Contains(md, row) || strings.Contains(md, "No difference") {
			t.Errorf("%d samples: markdown lacks %q:\n%s", n, row, md)
		}
		if d.BaseSamples+d.NewSamples == 0 || tw.BaseSamples != int64(n) || tw.Samples != int64(n) {
			t.Errorf("%d samples: counts %+v, samples %d and %d", n, d, tw.BaseSamples, tw.Samples)
		}
	}
}

// TestTimeWentUnknownHint: a profile with a quarter of its samples in
// "[unknown] postgres" (a release build without symbols) says which
// binary and how to get symbols; one under 10 % does not.
func TestTimeWentUnknownHint(t *testing.T) {
	mix := append(slices.Clone(serverMix), share{"[unknown] postgres", 0.26})
	for i := range serverMix {
		mix[i].p *= 0.74
	}
	tw := perfPair(t, 3, mix, mix, 1000, 1)
	// A binary with a sample or two is not named (the real run's
	// "libgnutls.so.30.34.3 0 %").
	tw.Unresolved = append(tw.Unresolved, Unresolved{Commit: "base", Binary: "libgnutls.so.30", Pct: 0.1})
	md := timeWentMarkdown(tw)
	if strings.Contains(md, "libgnutls") {
		t.Errorf("a binary under 0.5 %% is named:\n%s", md)
	}
	if !regexp.MustCompile(`Missing symbols: \d+ % of base's samples are unresolved \(postgres \d+ %\).*--profiling.*-dbgsym`).MatchString(md) {
		t.Errorf("no hint for base:\n%s", md)
	}
	for _, u := range tw.Unresolved[:len(tw.Unresolved)-1] {
		if u.Binary != "postgres" || u.Pct < 20 || u.Pct > 32 {
			t.Errorf("unresolved %+v, want postgres at about 26 %%", u)
		}
	}
	if !strings.Contains(md, "of patch's samples are unresolved") {
		t.Errorf("no hint for patch:\n%s", md)
	}
	small := append(slices.Clone(serverMix), share{"[unknown] postgres", 0.02})
	if tw := perfPair(t, 3, small, small, 1000, 1); len(tw.Unresolved) > 0 {
		t.Errorf("hint at 2 %%: %+v", tw.Unresolved)
	}
}

// TestTimeWentText: the text report's perf diff says the same within 80
// columns: the A/A pair has no difference beyond noise, the shift is
// listed with its samples, the unresolved share is named.
func TestTimeWentText(t *testing.T) {
	shifted := slices.Clone(serverMix)
	shifted[0] = share{"LWLockAcquire", 0.60}
	unknown := append(slices.Clone(serverMix), share{"[unknown] postgres", 0.26})
	for i := range serverMix {
		shifted[i].p *= 0.40 / 0.86
		unknown[i].p *= 0.74
	}
	shifted[0].p = 0.60
	r := &Report{Baseline: "base", TimeWent: []TimeWent{
		perfPairMem(1, serverMix, serverMix, 38, 1),
		perfPairMem(2, serverMix, shifted, 200, 1),
		perfPairMem(3, unknown, unknown, 1000, 1),
	}}
	var b bytes.Buffer
	writeTextBlocks(&b, r.timeWentBlocks(true))
	out := b.String()
	for _, want := range []string{
		"select1/c2/cpuall patch: 38 samples (base 38): no difference beyond noise",
		"LWLockAcquire 1",
		"missing symbols: 2",
		"% of base's samples unresolved (postgres ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`LWLockAcquire \d+\.\d % → \d+\.\d % \(\+\d+\.\d points; \d+ → \d+ samples`).MatchString(out) {
		t.Errorf("no shift line:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if n := len([]rune(strings.TrimSuffix(line, "\n"))); n > 80 {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
}

// A cell whose profile holds no sample of the server (perf started after
// the workload ended, on a busy host) is left out of the comparison and
// said in the warnings, not compared as an empty profile.
func TestTimeWentSkipsFailedProfiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	dir := t.TempDir()
	r := &Report{Dirs: []string{dir}, Baseline: "base"}
	for i := range 2 {
		for _, c := range []string{"base", "patch"} {
			rel := fmt.Sprintf("cells/%s-%d/profile.pb.gz", c, i)
			n := 200
			info := &results.PerfInfo{Profile: rel, Samples: n, Tx: 1000}
			if c == "patch" && i == 1 {
				n = 0
				info.Samples, info.Error = 0, "perf recorded no sample of the server in its 2s window"
			}
			if err := profiles.Write(synthProfile(rng, serverMix, n), filepath.Join(dir, rel)); err != nil {
				t.Fatal(err)
			}
			r.records = append(r.records, results.Record{Cell: fmt.Sprintf("%s-%d", c, i), Commit: c, Config: results.Config{Workload: "select1", Clients: 2}, Repeat: i, Status: results.StatusOK, Perf: info})
		}
	}
	r.profiles("base")
	if len(r.TimeWent) != 1 || r.TimeWent[0].Samples != 200 {
		t.Fatalf("time went %+v: want patch's one good profile of 200 samples", r.TimeWent)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "no profile in 1 cell(s)") || !strings.Contains(r.Warnings[0], "patch-1: perf recorded no sample") {
		t.Errorf("warnings %q", r.Warnings)
	}
}
