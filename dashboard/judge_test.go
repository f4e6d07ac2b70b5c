package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// TestSiteJudgesEachRunOnce: a site write judges each run once, for its
// pages and its index row alike, and a second write as many times again
// (nothing is kept between writes); the index words each run's answer
// as its report does, and a label that is markup stays text there.
func TestSiteJudgesEachRunOnce(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dirs, err := storetest.Nights(filepath.Join(root, "nights"), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(root, "hostile")
	if _, err := storetest.Write(hostile, storetest.Run{
		Created: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC), Seed: 3, Repeats: 5, Configs: []results.Config{storetest.Config},
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "<script>alert(1)</script>", SHA: storetest.NightSHA(9), Build: "head"}},
		Value: func(k results.Commit, _ results.Config, rep int) map[string]float64 {
			v := 1000 + float64(rep%3)
			if k.Label != "base" {
				v *= 0.8
			}
			return map[string]float64{results.MetricTPS: v}
		},
	}); err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, hostile)
	s, err := store.Open(ctx, filepath.Join(root, store.DefaultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, d := range dirs {
		if _, err := s.Import(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	judged := map[string]int{}
	var lines []string
	saved := judge
	judge = func(ctx context.Context, s *store.Store, run string, o analysis.Options) (*analysis.Report, error) {
		rep, err := saved(ctx, s, run, o)
		if err == nil {
			judged[run]++
			lines = append(lines, rep.AnswerLines()...)
		}
		return rep, err
	}
	t.Cleanup(func() { judge = saved })
	for write := 1; write <= 2; write++ {
		site, err := Write(ctx, s, filepath.Join(root, "site"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(judged) != len(dirs) {
			t.Fatalf("write %d judged %d runs of %d", write, len(judged), len(dirs))
		}
		for run, n := range judged {
			if n != write {
				t.Errorf("write %d: run %s judged %d times in all, want %d", write, run, n, write)
			}
		}
		index, err := os.ReadFile(site.Index)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(dirs)*write {
			t.Fatalf("%d answer lines, want %d", len(lines), len(dirs)*write)
		}
		for _, l := range lines {
			if !strings.Contains(string(index), "<div>"+strings.ReplaceAll(strings.ReplaceAll(l, "<", "&lt;"), ">", "&gt;")+"</div>") {
				t.Errorf("the index lacks the report's answer line %q", l)
			}
		}
		if strings.Contains(string(index), "<script>alert") || !strings.Contains(string(index), "&lt;script&gt;alert(1)&lt;/script&gt; vs base: tps -20") {
			t.Errorf("the hostile label's answer on the index:\n%s", index)
		}
	}
}
