package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/text"
)

// WriteText prints s as a table, one point per line, its change points
// marked (expected ones with their annotation).
func (s *Series) WriteText(w io.Writer) {
	fmt.Fprintf(w, "# %s %s: %d points, %d change points (%d unexpected)\n", s.Metric, s.Config, len(s.Points), len(s.ChangePoints), len(s.Unexpected()))
	at := map[int]ChangePoint{}
	for _, cp := range s.ChangePoints {
		at[cp.Index] = cp
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "time\trun\tcommit\tsha\t%s\tn\t\n", s.Metric)
	for i, p := range s.Points {
		mark := ""
		if cp, ok := at[i]; ok {
			if cp.Expected {
				mark = fmt.Sprintf("<- change %+.1f%% (expected: %s)", cp.DeltaPct, cp.Note)
			} else {
				mark = fmt.Sprintf("<- CHANGE %+.1f%% p=%.3f", cp.DeltaPct, cp.P)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.6g\t%d\t%s\n", p.Time.UTC().Format("2006-01-02 15:04"), p.Run, p.Commit, text.Short(p.SHA), p.Value, p.N, mark)
	}
	tw.Flush()
}

// ParseSince reads a history query's start: an age in days (30d) or any
// Go duration (12h) before now, or a date (2025-01-31); "" is the
// beginning.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, exitcode.BadInputf("--since %q: want an age (30d, 12h) or a date (2025-01-31)", s)
}

// Location is the store a configuration names: loc (a postgres:// URL or
// a SQLite file) or, when empty, DefaultFile in the results directory.
func Location(loc, resultsDir string) string {
	if loc == "" {
		return filepath.Join(resultsDir, DefaultFile)
	}
	return loc
}

// Exists says whether Open would find a store at location rather than
// create one: a PostgreSQL URL is taken to exist (Open creates only the
// tables there); a SQLite file must.
func Exists(location string) bool {
	if location == "" {
		return false
	}
	if strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://") {
		return true
	}
	_, err := os.Stat(strings.TrimPrefix(location, "sqlite:"))
	return err == nil
}

// AnnotateRef records note on metric for the commit ref names (a stored
// sha or a prefix of one, or a commit label or ref of a stored run) in
// config (a configuration id or a prefix only one has; "" is every
// configuration), and returns the annotation stored.
func (s *Store) AnnotateRef(ctx context.Context, ref, metric, config, note string) (Annotation, error) {
	sha, err := s.ResolveCommit(ctx, ref)
	if err != nil {
		return Annotation{}, err
	}
	a := Annotation{SHA: sha, Metric: metric, Note: note}
	if config != "" {
		if a.Config, err = s.ResolveConfig(ctx, config); err != nil {
			return a, err
		}
	}
	return a, s.Annotate(ctx, a)
}

// String is the annotation as one line: what, where and the note.
func (a Annotation) String() string {
	where := "every configuration"
	if a.Config != "" {
		where = a.Config
	}
	return fmt.Sprintf("annotated %s %s in %s: %s", a.SHA, a.Metric, where, a.Note)
}
