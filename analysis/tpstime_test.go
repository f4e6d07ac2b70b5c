package analysis

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/results"
)

func load(t *testing.T, dir string) *Input {
	t.Helper()
	in, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// drawPlots analyses in and returns its SVG plots by name.
func drawPlots(t *testing.T, in *Input) map[string][]byte {
	t.Helper()
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := r.WritePlots(dir, dir); err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.svg"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = data
	}
	return out
}

// firstDiff shows where got and want part.
func firstDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(0, i-80)
	return "got:  …" + string(got[from:min(len(got), i+80)]) + "\nwant: …" + string(want[from:min(len(want), i+80)])
}

// TestTPSTimePlotsAsAlone: tps-time plots drawn one after another,
// several at once on the save workers, are the bytes each one's is
// when it is the only plot.
func TestTPSTimePlotsAsAlone(t *testing.T) {
	var cfgs []results.Config
	var recs []results.Record
	for c := range 24 {
		cfg := results.Config{Workload: "select1", Clients: c + 1}
		cfgs = append(cfgs, cfg)
		for _, commit := range []string{"base", "patch"} {
			for r := range 100 {
				var progress []results.Progress
				for k := range 2 + (c+r)%5 {
					progress = append(progress, results.Progress{T: float64(k + 1), TPS: float64(1000*(c+1) + 10*k + r)})
				}
				recs = append(recs, results.Record{Cell: fmt.Sprintf("%s/r%d/%s", cfg.ID(), r+1, commit), Commit: commit, Config: cfg, Repeat: r + 1,
					Status: results.StatusOK, Metrics: results.ValuesOf(map[string]float64{"tps": float64(1000 * (c + 1))}), Progress: progress})
			}
		}
	}
	plan := func(cfgs []results.Config) *results.Plan {
		return &results.Plan{Version: results.Version, Baseline: "base", Commits: []results.Commit{{Label: "base"}, {Label: "patch"}},
			Configs: cfgs, Metrics: results.Builtin}
	}
	all := drawPlots(t, &Input{Plan: plan(cfgs), Records: recs})
	for c, cfg := range cfgs {
		name := "tps-time-" + fileSafe.ReplaceAllString(cfg.ID(), "_") + ".svg"
		alone := drawPlots(t, &Input{Plan: plan(cfgs[c : c+1]), Records: recs[200*c : 200*c+200]})
		if len(alone[name]) == 0 || !bytes.Equal(all[name], alone[name]) {
			t.Fatalf("%s drawn among others differs from it drawn alone:\n%s", name, firstDiff(all[name], alone[name]))
		}
	}
}

// TestPlotsEscapeLabels: a commit label with markup, drawn by vgsvg in
// the legends and the strips' tick labels, stays text: every plot is
// well-formed XML with no element of the label's, and the label reads
// back whole from the texts.
func TestPlotsEscapeLabels(t *testing.T) {
	const label = `<script>alert("x")</script>&amp;`
	in := load(t, "../demo/testdata/run")
	for i := range in.Records {
		if in.Records[i].Commit == "patch" {
			in.Records[i].Commit = label
		}
	}
	for i := range in.Plan.Commits {
		if in.Plan.Commits[i].Label == "patch" {
			in.Plan.Commits[i].Label = label
		}
	}
	plots := drawPlots(t, in)
	if len(plots) < 5 {
		t.Fatalf("%d plots", len(plots))
	}
	for name, data := range plots {
		if bytes.Contains(data, []byte("<script")) {
			t.Errorf("%s: the label's <script> is markup", name)
		}
		dec := xml.NewDecoder(bytes.NewReader(data))
		read := false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed: %v", name, err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if tok.Name.Local == "script" {
					t.Errorf("%s: a <script> element", name)
				}
			case xml.CharData:
				read = read || strings.Contains(string(tok), label)
			}
		}
		if !read {
			t.Errorf("%s: the label %q is not among its texts", name, label)
		}
	}
}
