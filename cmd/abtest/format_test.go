package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/testing/storetest"
)

// TestFlagAnalyzeFormats: --format text is the plain-text report, bench
// with -o DIR/ writes one file per commit (for plain benchstat A B), and
// an unknown format is bad input.
func TestFlagAnalyzeFormats(t *testing.T) {
	t.Parallel()
	dirs, err := storetest.Nights(filepath.Join(t.TempDir(), "nights"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := abtest(t, nil, "analyze", dirs[0], "--format", "text")
	if code != 0 || !strings.Contains(out, "\nSummary\n") || strings.Contains(out, "## ") || strings.Contains(out, "|") {
		t.Errorf("--format text: exit %d, %s\n%s", code, stderr, out)
	}
	bench := filepath.Join(t.TempDir(), "bench") + "/"
	code, _, stderr = abtest(t, nil, "analyze", dirs[0], "--format", "bench", "-o", bench)
	files, _ := filepath.Glob(bench + "*.bench")
	if code != 0 || len(files) != 2 || !strings.HasPrefix(stderr, "benchstat "+files[0][:len(bench)]) {
		t.Errorf("--format bench -o DIR/: exit %d, %q, files %v; want one per commit", code, stderr, files)
	}
	for _, f := range files {
		if data, _ := os.ReadFile(f); !strings.Contains(string(data), "Benchmark") {
			t.Errorf("%s: no benchmark lines:\n%s", f, data)
		}
	}
	if code, _, stderr := abtest(t, nil, "analyze", dirs[0], "--format", "nosuch"); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--format nosuch: exit %d, %q", code, stderr)
	}
}
