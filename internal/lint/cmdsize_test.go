package lint

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MaxCmdLines bounds cmd/abtest's non-test Go lines: the command line
// turns flags into typed requests and prints results; use cases live in
// the packages (issue 12). It was 2 970 lines before they moved.
const MaxCmdLines = 1500

// TestCmdIsThin fails when cmd/abtest's non-test Go files have
// MaxCmdLines lines or more, and names the biggest files.
func TestCmdIsThin(t *testing.T) {
	dir := filepath.Join("..", "..", "cmd", "abtest")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	total, sizes := 0, map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(data, []byte("\n"))
		total += n
		sizes[filepath.Base(f)] = n
	}
	if total >= MaxCmdLines {
		t.Errorf("cmd/abtest has %d non-test lines, want under %d: move use-case logic into its package (files: %v)", total, MaxCmdLines, sizes)
	}
}
