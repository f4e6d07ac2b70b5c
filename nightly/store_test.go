package nightly

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/config"
	hist "github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
	"github.com/pgabtest/abtest/worktree"
)

// steps are the nights' TPS steps: -8 % at night 15, +6 % at 30 (the
// annotated one) and -7 % at 45.
var steps = map[int]float64{15: -8, 30: 6, 45: -7}

const stepNote = "expected: new default"

// storedNights fills the nightly's default store (root/runs/abtest.db)
// with 60 synthetic nights under root/runs, imported one by one as
// Deps.Record imports a night, and a 61st whose head failed; the step at
// night 30 is annotated (as `abtest annotate` stores it).
func storedNights(t *testing.T, root string) *store.Store {
	t.Helper()
	ctx := context.Background()
	runs := filepath.Join(root, "runs")
	s, err := store.Open(ctx, filepath.Join(runs, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dirs, err := storetest.Nights(runs, 61, steps)
	if err != nil {
		t.Fatal(err)
	}
	failHead(t, dirs[60])
	for _, d := range dirs {
		if _, err := s.Import(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Annotate(ctx, store.Annotation{SHA: storetest.NightSHA(30), Metric: "tps", Note: stepNote}); err != nil {
		t.Fatal(err)
	}
	return s
}

// failHead rewrites dir's cells so that every cell of its head failed.
func failHead(t *testing.T, dir string) {
	t.Helper()
	recs, _, err := results.ReadRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, results.CellsFile))
	for i := range recs {
		if recs[i].Commit == HeadLabel {
			recs[i].Status, recs[i].Error, recs[i].Metrics = results.StatusFailed, "pgbench: exit 1", results.Values{}
		}
		if err := results.AppendRecord(dir, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
}

// tonight writes a night under root/runs: base at the level of night 59,
// head pct off it, 12 repeats (enough pairs for the sign-flip test at
// α = 0.01).
func tonight(t *testing.T, root, name string, day int, head string, pct float64) string {
	t.Helper()
	level := 10000 * 0.92 * 1.06 * 0.93
	rng := rand.New(rand.NewSource(int64(day)))
	dir := filepath.Join(root, "runs", name)
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, day), Seed: int64(day), Repeats: 12,
		Commits: []results.Commit{
			{Label: BaseLabel, Ref: storetest.NightSHA(59), SHA: storetest.NightSHA(59), Build: "base", BuildType: "release"},
			{Label: HeadLabel, Ref: head, SHA: head, Build: "head", BuildType: "release"},
		},
		Configs: []results.Config{storetest.Config},
		Host:    host.Host{Hostname: "bench1", CPU: "Synthetic CPU", NProc: 8, MemoryMB: 16384, Kernel: "6.1.0"},
		Value: func(k results.Commit, _ results.Config, _ int) map[string]float64 {
			v := level
			if k.Label == HeadLabel {
				v *= 1 + pct/100
			}
			v *= 1 + 0.005*rng.NormFloat64()
			return map[string]float64{"tps": v, "latency_p99_ms": 16 / v * 1000 * 1.5}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNightlyFromStore is issue 17's "nightly reading from the store": 60
// synthetic nights with steps at 15 and 45 and an annotated step at 30,
// and a 61st whose head failed, stored through store's own Import. The
// nightly reads its nights, their status and its baseline from the
// store; two more nights are judged and stored: one whose head drops TPS
// by 6 % (a regression, exit 1), and one whose head an annotation
// explains (ok, the drop shown as expected). The trend section, read
// from the store after the result directories of all but the newest
// nights were removed by the retention, finds the steps at 15 and 45 as
// unexpected and shows the one at 30 as expected, where `abtest history`
// (store.History) finds them.
func TestNightlyFromStore(t *testing.T) {
	ctx := context.Background()
	nc := loadNightly(t, "baseline = \"last\"\ntrend_nights = 100\n")
	nc.Root = t.TempDir()
	s := storedNights(t, nc.Root)
	loc := filepath.Join(nc.Root, "runs", store.DefaultFile)

	p := readPastOK(t, loc, nc)
	if p.store == nil || len(p.nights) != 61 || p.step() != 30 {
		t.Fatalf("past: store %v, %d nights, step %d; want the store's 61 nights, the step at 30", p.store != nil, len(p.nights), p.step())
	}
	// Every night compares its head with REL_17_0's level: none failed,
	// none before the first step regressed, every one after it did or
	// could not answer (never ok).
	unanswered := 0
	for i, nt := range p.nights[:60] {
		if nt.SHA != storetest.NightSHA(i) || nt.Baseline != storetest.BaseSHA || nt.Date != time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02") {
			t.Fatalf("night %d = %+v", i, nt)
		}
		want := []results.GateStatus{results.GateOK, results.GateUnanswered}
		if i >= 15 {
			want = []results.GateStatus{results.GateRegression, results.GateUnanswered}
		}
		if !slices.Contains(want, nt.Status) {
			t.Errorf("night %d: status %q, want one of %q", i, nt.Status, want)
		}
		if nt.Status == results.GateUnanswered {
			unanswered++
		}
	}
	t.Logf("%d of 60 nights unanswered (5 repeats each)", unanswered)
	if p.nights[60].Status != "failed" {
		t.Errorf("the night whose head failed: %+v", p.nights[60])
	}
	// "last": the last night that did not fail; a fixed baseline moves
	// to the annotated step.
	if b, err := baselineOf(nc, tip{sha: "f00d"}, p); err != nil || b != storetest.NightSHA(59) {
		t.Errorf("baseline last = %s, %v; want night 59's head", b, err)
	}
	fixed := *nc
	fixed.Baseline = "REL_17_0"
	if b, err := baselineOf(&fixed, tip{sha: "f00d"}, p); err != nil || b != storetest.NightSHA(30) {
		t.Errorf("baseline REL_17_0 after the annotated step = %s, %v; want night 30's head", b, err)
	}
	p.close()

	// A 6 % drop nobody annotated: a regression.
	regressed := strings.Repeat("d", 40)
	out, err := judgeNight(t, nc, loc, tonight(t, nc.Root, "tonight-1", 61, regressed, -6), regressed)
	if exitcode.Code(err) != exitcode.Regression || !strings.Contains(out, "1 REGRESSION(S): select1/c16/cpuall tps -6.") {
		t.Errorf("unannotated drop: %v (exit %d)\n%s", err, exitcode.Code(err), out)
	}

	// The same drop with an annotation on its commit: expected, ok.
	explained := strings.Repeat("e", 40)
	if err := s.Annotate(ctx, store.Annotation{SHA: explained, Metric: "tps", Config: storetest.Config.ID(), Note: "expected: a safer default"}); err != nil {
		t.Fatal(err)
	}
	dir := tonight(t, nc.Root, "tonight-2", 62, explained, -6)
	out, err = judgeNight(t, nc, loc, dir, explained)
	t.Logf("annotated night: %s", out)
	if err != nil || !strings.Contains(out, ": ok; expected: select1/c16/cpuall tps -6.") || !strings.Contains(out, "(annotated: expected: a safer default)") {
		t.Errorf("annotated drop: %v\n%s", err, out)
	}
	hist := readExport(t, filepath.Join(nc.Root, "history.jsonl"))
	if len(hist) != 2 || hist[0].Status != "regression" || hist[1].Status != "ok" || len(hist[1].Expected) != 1 || len(hist[1].Regressions) != 0 {
		t.Errorf("history.jsonl (the export): %+v", hist)
	}
	checkTrend(t, s, dir)
}

func readPastOK(t *testing.T, loc string, nc *config.Nightly) *past {
	t.Helper()
	p, err := readPast(context.Background(), loc, nc, false)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readExport reads history.jsonl, the export nothing else reads back.
func readExport(t *testing.T, path string) []Night {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Night
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var n Night
		if err := json.Unmarshal([]byte(l), &n); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, n)
	}
	return out
}

// judgeNight judges the night in dir (head against night 59's head) with
// its past read from the store, and stores it as Deps.Record would.
func judgeNight(t *testing.T, nc *config.Nightly, loc, dir, head string) (string, error) {
	t.Helper()
	p := readPastOK(t, loc, nc)
	defer p.close()
	var out strings.Builder
	record := func(ctx context.Context, _ io.Writer, dirs ...string) error {
		for _, dir := range dirs {
			if _, err := p.store.Import(ctx, dir); err != nil {
				return err
			}
		}
		return nil
	}
	n := &night{
		deps: &Deps{Matrix: &matrix.Deps{Worktrees: &worktree.Manager{Root: t.TempDir()}}, Out: &out, Err: io.Discard, Record: record},
		nc:   nc, head: tip{sha: head, subject: "tonight"}, baseline: storetest.NightSHA(59), dir: dir, past: p,
		histPath: filepath.Join(nc.Root, "history.jsonl"), now: time.Date(2025, 3, 4, 2, 0, 0, 0, time.UTC),
	}
	err := n.judge(context.Background())
	return out.String(), err
}

// checkTrend checks the trend section of the report in dir against the
// store's history of the same series.
func checkTrend(t *testing.T, s *store.Store, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, ".."))
	kept := 0
	for _, e := range ents {
		if e.IsDir() {
			kept++
		}
	}
	if kept != 14 {
		t.Errorf("%d result directories kept, want 14 (keep): the trend must come from the store", kept)
	}
	ser, err := hist.Trend(context.Background(), s, store.HistoryQuery{Metric: "tps", Config: storetest.Config.ID()})
	if err != nil {
		t.Fatal(err)
	}
	var at []int
	for _, cp := range ser.ChangePoints {
		at = append(at, cp.Index)
	}
	if fmt.Sprint(at) != "[15 30 45]" || len(ser.Points) != 62 {
		t.Fatalf("store history: %d points, change points at %v", len(ser.Points), at)
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := string(data)
	label := func(i int) string {
		return fmt.Sprintf("%s %s", day(ser.Points[i].Time), text.Short(ser.Points[i].SHA))
	}
	row := ""
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, "| "+storetest.Config.ID()+" | tps | 62 |") {
			row = l
		}
	}
	t.Logf("trend row: %s", row)
	cols := strings.Split(strings.Trim(row, "| "), " | ")
	cps := strings.Split(cols[len(cols)-1], "; ")
	if len(cols) != 6 || len(cps) != 3 {
		t.Fatalf("trend row: want three change points: %q", row)
	}
	for i, want := range []string{label(15) + " (-", label(30) + " (+", label(45) + " (-"} {
		expected := i == 1
		if !strings.HasPrefix(cps[i], want) || strings.Contains(cps[i], "UNEXPECTED") == expected || strings.Contains(cps[i], ") expected, annotated: "+stepNote) != expected {
			t.Errorf("change point %d: %q, want %q…, expected %v", i, cps[i], want, expected)
		}
	}
	if !strings.Contains(report, "## Trend (last 62 nights)") {
		t.Errorf("report lacks the 62-night trend heading:\n%s", report[strings.Index(report, "## Trend"):])
	}
	if _, err := os.Stat(filepath.Join(dir, "plots", "trend-select1_c16_cpuall.svg")); err != nil {
		t.Error(err)
	}
}

// TestPastFailsClosed: the past nights come from the store alone. A
// store that does not open (unreachable, in a directory another account
// can write, a link planted at its name), or that has no night of the
// job while root/runs holds an analysed run, fails the night: exit 3, one
// line naming the store and what to do, nothing written through the
// link, history.jsonl not read instead. A store with no night and runs
// that were never analysed (a first night whose matrix failed) is a
// first night; so is a dry run with no store, which creates none.
func TestPastFailsClosed(t *testing.T) {
	ctx := context.Background()
	nc := loadNightly(t, "")
	nc.Root = t.TempDir()
	if err := AppendHistory(filepath.Join(nc.Root, "history.jsonl"), Night{Date: "2025-01-01", SHA: "abc", Run: "r", Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(nc.Root, "file")
	os.WriteFile(blocker, nil, 0o644)
	open := filepath.Join(nc.Root, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777) // past the umask, without the sticky bit
	other, err := store.Open(ctx, filepath.Join(t.TempDir(), store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	other.Close()
	planted := filepath.Join(nc.Root, "planted", store.DefaultFile)
	os.Mkdir(filepath.Dir(planted), 0o755)
	if err := os.Symlink(other.Where(), planted); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(other.Where())
	failed := filepath.Join(nc.Root, "runs", "20250101T020000Z-aaaa")
	os.MkdirAll(failed, 0o755)
	os.WriteFile(filepath.Join(failed, "plan.json"), []byte("{}"), 0o644)
	fresh := filepath.Join(nc.Root, "fresh", store.DefaultFile)
	dry := filepath.Join(nc.Root, "dry", store.DefaultFile)
	for _, tc := range []struct {
		loc        string
		dry        bool
		analysed   bool
		want, todo string
	}{
		{filepath.Join(blocker, store.DefaultFile), false, false, "unreachable", "fix it, or set store"},
		{filepath.Join(open, store.DefaultFile), false, false, "writable by others", "chmod o-w"},
		{planted, false, false, planted, "fix it, or set store"},
		{planted, true, false, planted, "fix it, or set store"},
		{fresh, false, false, "", ""},
		{dry, true, false, "", ""},
		{"", false, false, "", ""},
		{fresh, false, true, "has no night of " + nc.Root, "abtest store import " + filepath.Join(nc.Root, "runs") + "/*"},
		{dry, true, true, "store " + dry + " has no night", "abtest store import"},
	} {
		if tc.analysed {
			os.WriteFile(filepath.Join(failed, "report.json"), []byte("{}"), 0o644)
		}
		p, err := readPast(ctx, tc.loc, nc, tc.dry)
		if tc.want == "" {
			if err != nil || len(p.nights) != 0 {
				t.Errorf("%s (dry run %v): %+v, %v; want a first night", tc.loc, tc.dry, p, err)
			} else {
				p.close()
			}
			continue
		}
		t.Logf("%s (dry run %v): %v", tc.loc, tc.dry, err)
		if exitcode.Code(err) != exitcode.Infra || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.todo) ||
			!strings.Contains(err.Error(), filepath.Dir(tc.loc)) {
			t.Errorf("%s (dry run %v): exit %d, %v; want exit 3 in one line naming the store, with %q and %q", tc.loc, tc.dry, exitcode.Code(err), err, tc.want, tc.todo)
		}
	}
	if _, err := os.Stat(dry); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dry run made a store: %v", err)
	}
	if after, _ := os.ReadFile(other.Where()); !bytes.Equal(before, after) {
		t.Errorf("the store behind the planted link was written")
	}
	if _, err := os.Lstat(planted + "-wal"); err == nil {
		t.Errorf("a -wal file was made beside the planted link")
	}
}

// TestBaselineAfterAnnotatedStep: no night before an annotated step is the
// baseline of a night after it, even when every night since the step
// failed; without an annotation the last good night is.
func TestBaselineAfterAnnotatedStep(t *testing.T) {
	nc := loadNightly(t, "")
	nights := []Night{{SHA: "a", Status: "ok"}, {SHA: "b", Status: "failed"}, {SHA: "c", Status: "failed"}}
	for _, tc := range []struct {
		annotated, want string
	}{{"", "a"}, {"b", "b"}, {"a", "a"}, {"c", "c"}} {
		p := &past{nights: nights, annotated: map[string][]store.Annotation{}}
		if tc.annotated != "" {
			p.annotated[tc.annotated] = []store.Annotation{{SHA: tc.annotated, Metric: "tps", Note: "expected"}}
		}
		if b, err := baselineOf(nc, tip{sha: "head"}, p); err != nil || b != tc.want {
			t.Errorf("annotated %q: baseline %q, %v; want %q", tc.annotated, b, err, tc.want)
		}
	}
}

// TestAnnotationInRange: an annotation explains a regression when its
// commit lies between the baseline (excluded) and the head in the
// repository, in its metric and configuration only.
func TestAnnotationInRange(t *testing.T) {
	repo := testenv.NewRepo(t, map[string]string{"README": "0\n"})
	base := testenv.Git(t, repo, "rev-parse", "HEAD")
	annotated := testenv.Commit(t, repo, "the expected change", map[string]string{"README": "1\n"})
	head := testenv.Commit(t, repo, "later", map[string]string{"README": "2\n"})
	r, err := git.PlainOpen(repo)
	if err != nil {
		t.Fatal(err)
	}
	p := &past{annotated: map[string][]store.Annotation{annotated: {{SHA: annotated, Metric: "tps", Config: "select1/c16/cpuall", Note: "expected: slower"}}}}
	regs := []analysis.Change{{Config: "select1/c16/cpuall", Metric: "tps", DeltaPct: -5}, {Config: "select1/c64/cpuall", Metric: "tps", DeltaPct: -5}, {Config: "select1/c16/cpuall", Metric: "latency_avg_ms", DeltaPct: 5}}
	for _, tc := range []struct {
		baseline string
		expected int
	}{{base, 1}, {"", 1}, {annotated, 0}, {head, 0}} {
		n := &night{head: tip{sha: head, repo: r}, baseline: tc.baseline, past: p}
		others, expected := n.expected(regs)
		if len(expected) != tc.expected || len(others) != len(regs)-tc.expected {
			t.Errorf("baseline %.8s: expected %q, others %+v", tc.baseline, expected, others)
		}
	}
}
