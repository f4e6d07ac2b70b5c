package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

func TestCheckShown(t *testing.T) {
	for _, tc := range []struct {
		v         string
		max       int
		multiline bool
		why       string // "" when taken
	}{
		{`<img src=x onerror="window.__xss=1">`, store.MaxName, false, ""}, // markup is text: the pages escape it
		{"café ☕ 東京", 9, false, ""},
		{strings.Repeat("é", store.MaxName), store.MaxName, false, ""},
		{strings.Repeat("é", store.MaxName+1), store.MaxName, false, "201 characters, at most 200"},
		{"a\tb\nc", store.MaxNote, true, ""},
		{"a\tb", store.MaxName, false, "U+0009"},
		{"a\nb", store.MaxName, false, "U+000A"},
		{"a\rb", store.MaxNote, true, "U+000D"},
		{"a\x00b", store.MaxNote, true, "U+0000"},
		{"\x1b[2Jhead", store.MaxName, false, "U+001B"},
		{"head\x7f", store.MaxName, false, "U+007F"},
		{"head\u0085", store.MaxName, false, "U+0085"},
		{"abc\u202edaeh", store.MaxName, false, "U+202E"},
		{"head\u2066", store.MaxName, false, "U+2066"},
		{"head\xff", store.MaxName, false, "not UTF-8"},
	} {
		err := store.CheckShown("--x", tc.v, tc.max, tc.multiline, "give another")
		if tc.why == "" {
			if err != nil {
				t.Errorf("%q: %v, want it taken", tc.v, err)
			}
			continue
		}
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.why) || !strings.HasPrefix(err.Error(), "--x ") ||
			!strings.HasSuffix(err.Error(), "; give another") || strings.ContainsAny(err.Error(), "\n\r\x1b") || len(err.Error()) > 200 {
			t.Errorf("%q: %v (exit %d), want exit 2 with %q on one short line", tc.v, err, exitcode.Code(err), tc.why)
		}
	}
}

// counts is how many rows the tables an import writes hold.
func counts(t *testing.T, s *store.Store) string {
	t.Helper()
	var out []string
	for _, table := range []string{"runs", "run_shards", "hosts", "commits", "configurations", "cells", "annotations"} {
		var n int
		if err := s.DB().QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d", table, n))
	}
	return strings.Join(out, ", ")
}

// TestImportRefusesTextItCannotShow: a results directory whose plan has
// a commit label, ref or sha or a host name the store does not take
// (CheckShown) is refused, exit 2 on one line naming the field and the
// file to correct, and nothing is stored: of it, nor of a good
// directory imported with it.
func TestImportRefusesTextItCannotShow(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	good, err := storetest.Nights(filepath.Join(root, "nights"), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, edit func(*storetest.Run)) string {
		dir := filepath.Join(root, name)
		r := storetest.Run{
			Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Seed: 1, Repeats: 2,
			Commits: []results.Commit{
				{Label: "base", Ref: "REL_17_0", SHA: storetest.BaseSHA, Build: "base"},
				{Label: "head", Ref: "master", SHA: storetest.NightSHA(1), Build: "head"},
			},
			Configs: []results.Config{storetest.Config},
			Host:    host.Host{Hostname: "bench1"},
			Value: func(results.Commit, results.Config, int) map[string]float64 {
				return map[string]float64{results.MetricTPS: 1000}
			},
		}
		edit(&r)
		if _, err := storetest.Write(dir, r); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name, field string
		edit        func(*storetest.Run)
	}{
		{"label", "commits[1].label", func(r *storetest.Run) { r.Commits[1].Label = "head\x1b[2J" }},
		{"ref", "commits[1].ref", func(r *storetest.Run) { r.Commits[1].Ref = "master\u202e" }},
		{"sha", "commits[0].sha", func(r *storetest.Run) { r.Commits[0].SHA = strings.Repeat("1", store.MaxName+1) }},
		{"host", "host.hostname", func(r *storetest.Run) { r.Host.Hostname = strings.Repeat("h", store.MaxName+1) }},
		{"baseline", "baseline", func(r *storetest.Run) { r.Commits[0].Label = "base\x00" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openSQLite(t)
			before := counts(t, s)
			bad := write(tc.name, tc.edit)
			for _, imp := range []func() error{
				func() error { _, err := s.Import(ctx, bad); return err },
				func() error { _, err := history.ImportAll(ctx, s, append(good, bad), nil, nil); return err },
			} {
				err := imp()
				msg := fmt.Sprint(err)
				if exitcode.Code(err) != exitcode.Usage || !strings.Contains(msg, tc.field) || !strings.Contains(msg, filepath.Join(bad, results.PlanFile)) ||
					strings.ContainsAny(msg, "\n\x1b\x00\u202e") {
					t.Errorf("import: %q (exit %d), want exit 2 on one line naming %s and the plan", msg, exitcode.Code(err), tc.field)
				}
				if after := counts(t, s); after != before {
					t.Errorf("import refused, yet the store changed: %s, was %s", after, before)
				}
			}
		})
	}
	// The same directory with its texts corrected imports.
	s := openSQLite(t)
	if _, err := s.Import(ctx, write("fine", func(r *storetest.Run) { r.Commits[1].Label = `<img src=x onerror="window.__xss=1">` })); err != nil {
		t.Errorf("a label with markup (text, escaped by the pages): %v", err)
	}
}

// TestAnnotateRefusesTextItCannotShow: a note with a control character
// (but tab and newline) or over MaxNote characters, or a metric name
// over MaxName, is refused (exit 2, one line naming the flag) and
// nothing is stored; markup, tabs and newlines are notes like others.
func TestAnnotateRefusesTextItCannotShow(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	dirs, err := storetest.Nights(t.TempDir(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.ImportAll(ctx, s, dirs, nil, nil); err != nil {
		t.Fatal(err)
	}
	sha := storetest.NightSHA(0)
	for _, tc := range []struct{ metric, note, flag string }{
		{"tps", "expected\x07", "--note"},
		{"tps", "expected\r\nfaster", "--note"},
		{"tps", "\x1b]8;;http://x\x07link", "--note"},
		{"tps", strings.Repeat("n", store.MaxNote+1), "--note"},
		{"tps\n", "expected", "--metric"},
		{strings.Repeat("m", store.MaxName+1), "expected", "--metric"},
	} {
		before := counts(t, s)
		_, err := s.AnnotateRef(ctx, sha[:8], tc.metric, "", tc.note)
		if msg := fmt.Sprint(err); exitcode.Code(err) != exitcode.Usage || !strings.HasPrefix(msg, "annotate "+tc.flag) || strings.ContainsAny(msg, "\n\r\x07\x1b") {
			t.Errorf("annotate %q %q: %q (exit %d), want exit 2 on one line about %s", tc.metric, tc.note, msg, exitcode.Code(err), tc.flag)
		}
		if after := counts(t, s); after != before {
			t.Errorf("annotate refused, yet the store changed: %s, was %s", after, before)
		}
	}
	for _, note := range []string{"<img src=x onerror=window.__xss=3>", "expected:\tfaster\nsee the thread", strings.Repeat("n", store.MaxNote)} {
		if _, err := s.AnnotateRef(ctx, sha[:8], "tps", "", note); err != nil {
			t.Errorf("annotate %.40q: %v", note, err)
		}
	}
}
