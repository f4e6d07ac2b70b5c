package doctor

import (
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
)

// FixHost is doctor --fix on the host at root: it applies Fixes, writes
// the undo script into dir (doctor-undo-TIME.sh, TIME from now) and
// says on w what it changed and how to undo it. Fixes need root (euid
// 0): anything to change without it is a usage error, and nothing is
// written.
func FixHost(w io.Writer, root, dir string, euid int, now time.Time) error {
	fixes := Fixes(root)
	if len(fixes) == 0 {
		fmt.Fprintln(w, "doctor --fix: nothing to change (or the knobs are not exposed, as on a VM)")
		return nil
	}
	if euid != 0 {
		return exitcode.BadInputf("doctor --fix: %d settings to change need root; run it as root", len(fixes))
	}
	undo := filepath.Join(dir, "doctor-undo-"+now.UTC().Format("20060102T150405Z")+".sh")
	if err := safefile.MkdirAll(dir, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	done, err := Apply(root, fixes)
	if werr := safefile.WriteFile(undo, []byte(UndoScript(root, done)), 0o755); werr != nil && err == nil {
		err = werr
	}
	for _, f := range done {
		fmt.Fprintf(w, "doctor --fix: %s: %s → %s (/%s)\n", f.Check, f.From, f.To, f.Path)
	}
	if len(done) > 0 {
		fmt.Fprintf(w, "doctor --fix: to undo: sh %s\n", undo)
	}
	return exitcode.Failure(err)
}

// WriteText prints findings as a table, then why and how to fix each
// one that is not OK, then the overall status.
func WriteText(w io.Writer, fs []Finding) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range fs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Status, f.Check, f.Value)
	}
	tw.Flush()
	for _, f := range fs {
		if f.Status != OK {
			fmt.Fprintf(w, "\n%s: %s\n  why: %s\n  fix: %s\n", f.Check, f.Value, f.Why, f.Fix)
		}
	}
	fmt.Fprintf(w, "\noverall: %s\n", Worst(fs))
}
