package analysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/resultstest"
	"github.com/pgabtest/abtest/results"
)

// TestLoadAsUnmarshal: a recorded run whose records set every field
// (resultstest.FullRecord) analyses to the same report, in every format
// and plot, when Load reads it (results' fast decoder) as when each line
// is decoded by json.Unmarshal alone.
func TestLoadAsUnmarshal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &results.Plan{Version: results.Version, Baseline: "base",
		Commits: []results.Commit{{Label: "base", Build: "base"}, {Label: "patch", Build: "patch"}},
		Metrics: results.Builtin, Options: results.PlanOpts{Repeats: 6, DurationS: 10, Order: "abba", Seed: 1}, Created: time.Date(2025, 4, 1, 10, 0, 0, 0, time.UTC)}
	seq := 0
	for r := 1; r <= 6; r++ {
		for i, commit := range []string{"base", "patch"} {
			seq++
			status := results.StatusOK
			if r == 6 && i == 1 {
				status = results.StatusFailed
			}
			rec := resultstest.FullRecord(commit, seq, status)
			rec.Cell, rec.Repeat, rec.Instructions, rec.Instr = fmt.Sprintf("select1/c1/r%d/%s", r, commit), r, false, nil
			// One saturated cell; the others' values count.
			if r != 5 || i != 0 {
				rec.Saturated, rec.Saturation = false, &results.Saturation{OfferedTPS: 1000, CommittedTPS: 1000, BacklogS: 0.1, BoundS: 5}
			}
			// Two progress reports make a TPS-over-time plot.
			rec.Progress = append(rec.Progress, results.Progress{T: 2, TPS: 990 + float64(r), LatMS: 1.2})
			rec.Metrics = results.ValuesOf(map[string]float64{results.MetricTPS: 1000 + 10*float64(i) + float64(r%3), results.MetricLatencyAvg: 1 + 0.01*float64(r)})
			if i == 0 && r == 1 {
				p.Configs = append(p.Configs, rec.Config)
			}
			p.Cells = append(p.Cells, results.Cell{ID: rec.Cell, Seq: seq, Commit: commit, Repeat: r, Config: rec.Config})
			if err := results.AppendRecord(dir, &rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := results.WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	fast, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Merge([]Shard{{Dir: dir, Plan: p, Records: unmarshalRecords(t, dir)}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := reportBytes(t, fast), reportBytes(t, plain)
	if len(a) < 6 {
		t.Fatalf("only %d outputs (%v): want every format, a strip plot and a TPS-over-time plot", len(a), slices.Collect(maps.Keys(a)))
	}
	for name, want := range b {
		if got := a[name]; !bytes.Equal(got, want) {
			t.Errorf("%s differs between Load and json.Unmarshal:\n%s\n---\n%s", name, got, want)
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			t.Errorf("Load's report has %s, json.Unmarshal's does not", name)
		}
	}
}

// unmarshalRecords reads dir's cells.jsonl with json.Unmarshal alone.
func unmarshalRecords(t *testing.T, dir string) []results.Record {
	f, err := os.Open(filepath.Join(dir, results.CellsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []results.Record
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec results.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// reportBytes analyses in and returns every output by name: each
// format, and each plot file.
func reportBytes(t *testing.T, in *Input) map[string][]byte {
	rep, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for name, write := range map[string]func(io.Writer) error{"md": rep.WriteMarkdown, "json": rep.WriteJSON, "text": rep.WriteText, "bench": rep.WriteBench} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		out[name] = b.Bytes()
	}
	plots := t.TempDir()
	if err := rep.WritePlots(filepath.Join(plots, "plots"), plots); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(plots, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[path[len(plots):]] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLoadForFormat: loaded for a format that draws no plot (all but md
// to a file), the records have no progress reports, and the report in
// that format is the same bytes as of everything loaded; for md to a
// file they keep them.
func TestLoadForFormat(t *testing.T) {
	for _, dir := range []string{"../results/testdata/v1", "../demo/testdata/run"} {
		all := reportBytes(t, load(t, dir))
		for _, f := range []struct{ format, out string }{{"json", ""}, {"text", "r.txt"}, {"md", ""}, {"bench", ""}, {"md", "r.md"}} {
			in, err := LoadFor(f.format, f.out, dir)
			if err != nil {
				t.Fatal(err)
			}
			progress := 0
			for _, r := range in.Records {
				progress += len(r.Progress)
			}
			if plots := f.format == "md" && f.out != ""; (progress > 0) != plots {
				t.Errorf("%s: --format %s -o %q: %d progress reports loaded", dir, f.format, f.out, progress)
			}
			if got := reportBytes(t, in)[f.format]; !bytes.Equal(got, all[f.format]) {
				t.Errorf("%s: --format %s -o %q: the report differs from that of all loaded", dir, f.format, f.out)
			}
		}
	}
}
