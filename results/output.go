package results

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// CheckOutput refuses a report file name (analyze -o) that would overwrite a results file
// (plan.json, cells.jsonl, anything under cells/ of a results directory)
// or whose directory does not exist: analyze creates no directories
// besides plots/.
func CheckOutput(out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return exitcode.BadInput(err)
	}
	if st, err := os.Stat(filepath.Dir(abs)); err != nil || !st.IsDir() {
		return exitcode.BadInputf("-o %s: directory %s does not exist; create it first", out, filepath.Dir(abs))
	}
	if st, err := os.Stat(abs); err == nil && st.IsDir() || strings.HasSuffix(out, "/") || filepath.Base(out) == "." || filepath.Base(out) == ".." {
		return exitcode.BadInputf("-o %s: is a directory; give a file name", out)
	}
	switch filepath.Base(abs) {
	case PlanFile, CellsFile, LockFile:
		return exitcode.BadInputf("-o %s: would overwrite a results file; give another name, e.g. report.md", out)
	}
	for dir := filepath.Dir(abs); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if filepath.Base(dir) != CellsDir {
			continue
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(dir), PlanFile)); err == nil {
			return exitcode.BadInputf("-o %s: is inside the cells of results directory %s; write the report elsewhere", out, filepath.Dir(dir))
		}
	}
	return nil
}
