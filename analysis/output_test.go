package analysis

import (
	"bytes"
	"os"
	"path/filepath"
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
	th, err := ParseThresholds([]string{"tps=3", "latency_p99_ms=5%"})
	if err != nil || th["tps"] != 3 || th["latency_p99_ms"] != 5 {
		t.Errorf("%v, %v", th, err)
	}
	for _, bad := range []string{"tps", "tps=-1", "tps=x"} {
		if _, err := ParseThresholds([]string{bad}); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%q: %v", bad, err)
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
