package analysis

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// TestOutput: each format to a writer is the format's own writer; to a
// file it is the same bytes, said on note, with plots beside markdown;
// bench into a directory is one file per commit; results files and
// unknown formats are refused (exit 2) and nothing is written.
func TestOutput(t *testing.T) {
	rep, dir := fixtureReport(t)
	var want, got, note bytes.Buffer
	if err := rep.WriteText(&want); err != nil {
		t.Fatal(err)
	}
	if err := rep.Output(&got, "text", "", &note); err != nil || got.String() != want.String() || note.Len() != 0 {
		t.Errorf("text to stdout: %v, note %q", err, note.String())
	}
	out := filepath.Join(t.TempDir(), "r.md")
	got.Reset()
	if err := rep.Output(&got, "md", out, &note); err != nil || got.Len() != 0 || note.String() != "report: "+out+"\n" {
		t.Fatalf("md to a file: %v, stdout %d bytes, note %q", err, got.Len(), note.String())
	}
	// After the plots: the markdown links them.
	want.Reset()
	rep.WriteMarkdown(&want)
	if data, _ := os.ReadFile(out); string(data) != want.String() {
		t.Error("the file differs from WriteMarkdown")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(out), "plots")); err != nil {
		t.Errorf("no plots beside the report: %v", err)
	}
	note.Reset()
	benchDir := t.TempDir() + "/"
	if err := rep.Output(&got, "bench", benchDir, &note); err != nil || !strings.HasPrefix(note.String(), "benchstat "+benchDir) {
		t.Errorf("bench to a directory: %v, note %q", err, note.String())
	}
	if ents, _ := os.ReadDir(benchDir); len(ents) != len(rep.Commits) {
		t.Errorf("%d bench files for %d commits", len(ents), len(rep.Commits))
	}
	for _, bad := range []struct{ format, out string }{{"html", ""}, {"json", filepath.Join(dir, results.CellsFile)}} {
		before, _ := os.ReadFile(filepath.Join(dir, results.CellsFile))
		if err := rep.Output(&got, bad.format, bad.out, &note); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%s to %q: %v", bad.format, bad.out, err)
		}
		if after, _ := os.ReadFile(filepath.Join(dir, results.CellsFile)); !bytes.Equal(before, after) {
			t.Error("a refused output changed the results")
		}
	}
}

func TestParseThresholds(t *testing.T) {
	th, err := ParseThresholds([]string{"tps=3", "latency_p99_ms=5%", "wal_bytes_per_tx=50"})
	if err != nil || th["tps"] != 3 || th["latency_p99_ms"] != 5 {
		t.Errorf("%v, %v", th, err)
	}
	for _, bad := range []string{"tps", "tps=-1", "tps=x", "tps=1e9", "tps=1e308", "tps=50.01"} {
		if _, err := ParseThresholds([]string{bad}); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if th, err := ParseThresholds([]string{"tps=50"}); err != nil || th["tps"] != 50 {
		t.Errorf("tps=50: %v, %v; want the largest bar taken", th, err)
	}
	for s, want := range map[string]Bar{"": BarThreshold, "threshold": BarThreshold, "auto": BarAuto} {
		if b, err := ParseBar(s); b != want || err != nil {
			t.Errorf("ParseBar(%q) = %v, %v; want %v", s, b, err, want)
		}
	}
	for _, bad := range []string{"Auto", "2", "noise", "<script>"} {
		if _, err := ParseBar(bad); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("ParseBar(%q): %v; want exit 2", bad, err)
		}
	}
}

// TestAnalyzeDirs is Load then Analyze; a directory without results is
// an error.
func TestAnalyzeDirs(t *testing.T) {
	rep, dir := fixtureReport(t)
	got, err := AnalyzeDirs(Options{}, dir)
	if err != nil || len(got.Commits) != len(rep.Commits) {
		t.Errorf("%v, %v", got, err)
	}
	if _, err := AnalyzeDirs(Options{}, t.TempDir()); err == nil {
		t.Error("an empty directory analysed")
	}
}

// TestAnalyzeOutput: AnalyzeOutput, its tps-time plots drawn while the
// analysis runs, writes what Analyze and then Output write, byte for
// byte, in every format (go test -race: the plots and the analysis
// share the records); a plots directory it cannot make is a failure
// (exit 3) with no report written.
func TestAnalyzeOutput(t *testing.T) {
	for _, dir := range []string{"../results/testdata/v1", "../demo/testdata/run"} {
		for _, format := range Formats {
			old, neu := filepath.Join(t.TempDir(), "r."+format), filepath.Join(t.TempDir(), "r."+format)
			rep, err := Analyze(load(t, dir), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var note bytes.Buffer
			if err := rep.Output(&note, format, old, &note); err != nil {
				t.Fatal(err)
			}
			got, err := AnalyzeOutput(load(t, dir), Options{}, &note, format, neu, &note)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Plots, " ") != strings.Join(rep.Plots, " ") || strings.Join(got.PlotNotes, " ") != strings.Join(rep.PlotNotes, " ") {
				t.Errorf("%s %s: plots %q, notes %q; want %q, %q", dir, format, got.Plots, got.PlotNotes, rep.Plots, rep.PlotNotes)
			}
			if format == "md" && !slices.ContainsFunc(got.Plots, func(p string) bool { return strings.Contains(p, "tps-time-") }) {
				t.Errorf("%s: no tps-time plot in %q", dir, got.Plots)
			}
			sameFiles(t, filepath.Dir(old), filepath.Dir(neu))
		}
	}
	out := filepath.Join(t.TempDir(), "r.md")
	if err := os.WriteFile(filepath.Join(filepath.Dir(out), "plots"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var note bytes.Buffer
	if _, err := AnalyzeOutput(load(t, "../results/testdata/v1"), Options{}, &note, "md", out, &note); exitcode.Code(err) != exitcode.Infra || !errors.As(err, new(*exitcode.Error)) {
		t.Errorf("plots a file: %v", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a report written beside plots it could not write")
	}
}

// sameFiles fails unless directories a and b hold the same files with
// the same bytes.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	read := func(root string) map[string]string {
		files := map[string]string{}
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, _ := os.ReadFile(path)
				rel, _ := filepath.Rel(root, path)
				files[rel] = string(data)
			}
			return err
		})
		return files
	}
	fa, fb := read(a), read(b)
	if len(fa) != len(fb) {
		t.Errorf("%d files, want %d", len(fb), len(fa))
	}
	for name, data := range fa {
		if fb[name] != data {
			t.Errorf("%s differs", name)
		}
	}
}

// TestOutputIntoDirectory (issue 42: -o is a directory for a report
// with files beside it): -o DIR writes DIR/report.md and DIR/plots/,
// DIR/report.txt or DIR/report.json; a DIR/ that does not exist is bad
// input, nothing written.
func TestOutputIntoDirectory(t *testing.T) {
	dir := t.TempDir()
	for format, name := range map[string]string{"md": "report.md", "text": "report.txt", "json": "report.json"} {
		var note strings.Builder
		if _, err := AnalyzeOutput(load(t, "../demo/testdata/run"), Options{}, io.Discard, format, dir, &note); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil || !strings.Contains(note.String(), filepath.Join(dir, name)) {
			t.Errorf("-o DIR --format %s: %v, note %q", format, err, note.String())
		}
	}
	if plots, _ := filepath.Glob(filepath.Join(dir, "plots", "*.svg")); len(plots) == 0 {
		t.Error("-o DIR: no plots in DIR/plots")
	}
	missing := filepath.Join(dir, "nosuch") + "/"
	if _, err := AnalyzeOutput(load(t, "../demo/testdata/run"), Options{}, io.Discard, "md", missing, io.Discard); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("-o %s: %v, want exit 2", missing, err)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("-o %s made it", missing)
	}
	// As root, a link another account planted in place of the
	// directory is not followed: nothing is written where it points.
	if os.Geteuid() == 0 {
		target := t.TempDir()
		link := filepath.Join(t.TempDir(), "planted")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := AnalyzeOutput(load(t, "../demo/testdata/run"), Options{}, io.Discard, "text", link, io.Discard); err == nil {
			t.Errorf("-o through nobody's link: no error")
		}
		if ents, _ := os.ReadDir(target); len(ents) != 0 {
			t.Errorf("-o through nobody's link wrote %d entries where it points", len(ents))
		}
	}
	// A results directory keeps the run's own report.
	run := t.TempDir()
	plan, err := os.ReadFile("../demo/testdata/run/plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "plan.json"), plan, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AnalyzeOutput(load(t, "../demo/testdata/run"), Options{}, io.Discard, "md", run, io.Discard); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("-o RESULTS_DIR: %v, want exit 2", err)
	}
	if _, err := os.Stat(filepath.Join(run, "report.md")); err == nil {
		t.Error("-o RESULTS_DIR wrote its report.md")
	}
}
