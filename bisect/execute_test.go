package bisect

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestExecuteDryRun: a dry run prints the range and every first-parent
// commit, puts the state under the results root by default, and runs
// and records nothing; a bad request is exit 2 before any of it.
func TestExecuteDryRun(t *testing.T) {
	d, shas := deps(t)
	var out bytes.Buffer
	d.Out = &out
	d.Record = func(context.Context, io.Writer, ...string) error { t.Error("a dry run recorded"); return nil }
	r := request("")
	root := t.TempDir()
	if err := Execute(context.Background(), d, r, root, true); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "bisect_"+shas[0][:8]+"_"+shas[3][:8]); r.Dir != want {
		t.Errorf("dir %s, want %s", r.Dir, want)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "# bisect "+shas[0][:8]+" (good) .. "+shas[3][:8]+" (bad): 3 first-parent commits") ||
		!strings.Contains(lines[0], "metric tps in select1/c2/cpuall/pgss.max=1000; state in "+r.Dir) || !strings.HasPrefix(lines[4], "  3 "+shas[3][:8]+" change 3") {
		t.Errorf("plan:\n%s", out.String())
	}
	out.Reset()
	bad := request("")
	bad.Good = ""
	if err := Execute(context.Background(), d, bad, root, true); exitcode.Code(err) != exitcode.Usage || out.Len() != 0 {
		t.Errorf("no --good: %v, printed %q", err, out.String())
	}
}
