package lint

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// MaxFileLines is the most lines a non-test Go file may have
// (DESIGN.md, Layout): a longer file holds more than one idea. Split it
// along its seams into files of the same package, each about one thing
// (issue 22).
const MaxFileLines = 800

// TestNoLongFiles walks every non-test Go file of the module and reports
// each with more than MaxFileLines lines.
func TestNoLongFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := bytes.Count(data, []byte("\n"))
		if n <= MaxFileLines {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		t.Errorf("%s: %d lines, want at most %d: split it along its seams into files of the same package", rel, n, MaxFileLines)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
