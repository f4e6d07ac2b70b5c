package main

import (
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/results"
)

// TestAnalyzeAllowUnknown: a run too noisy for its repeats to answer
// for TPS is exit 3 "could not answer" under --fail-on-regression, exit 0
// with one line on stderr under --allow-unknown; a regression is exit 1
// either way; --primary of an unknown metric is exit 2, one line.
func TestAnalyzeAllowUnknown(t *testing.T) {
	t.Parallel()
	// base's TPS has noise (a spread) about 10 000, head's is level ×
	// 10 000 and steady.
	run := func(name string, noise, level float64) string {
		dir := filepath.Join(t.TempDir(), name)
		rng := rand.New(rand.NewSource(1))
		_, err := storetest.Write(dir, storetest.Run{
			Created: time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC), Seed: 1, Repeats: 4,
			Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "head", SHA: storetest.NightSHA(0), Build: "head"}},
			Configs: []results.Config{storetest.Config},
			Value: func(k results.Commit, _ results.Config, _ int) map[string]float64 {
				v := 10000 * (1 + noise*rng.NormFloat64())
				if k.Label == "head" {
					v = 10000 * level * (1 + 0.002*rng.NormFloat64())
				}
				return map[string]float64{"tps": v, "latency_p99_ms": 1.5e4 / v}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return dir
	}
	noisy, slower := run("noisy", 0.15, 1), run("slower", 0.005, 0.8)
	code, out, stderr := abtest(t, nil, "analyze", "--format", "text", "--fail-on-regression", noisy)
	if code != 3 || !strings.Contains(stderr, "could not answer") || !strings.Contains(stderr, "head") {
		t.Errorf("noisy run: exit %d, stderr %q; want 3, could not answer for head\n%s", code, stderr, out)
	}
	code, _, stderr = abtest(t, nil, "analyze", "--format", "text", "--fail-on-regression", "--allow-unknown", noisy)
	if code != 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "abtest: could not answer: head ") || !strings.HasSuffix(stderr, "; exit 0 under --allow-unknown\n") {
		t.Errorf("noisy run, --allow-unknown: exit %d, stderr %q; want 0 and one line", code, stderr)
	}
	code, out, stderr = abtest(t, nil, "analyze", "--format", "text", "--fail-on-regression", "--allow-unknown", slower)
	if code != 1 || strings.Contains(stderr, "--allow-unknown") {
		t.Errorf("TPS −20 %%, --allow-unknown: exit %d, stderr %q; want 1\n%s", code, stderr, out)
	}
	code, out, stderr = abtest(t, nil, "analyze", "--primary", "tps,nosuch", noisy)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--primary nosuch: unknown metric") || out != "" {
		t.Errorf("--primary nosuch: exit %d, stdout %q, stderr %q; want 2 and one line", code, out, stderr)
	}
}

// TestAnalyzeBar: the bar is the user's (issue 40). A run whose blocks
// drift by ±40 % with a clean −5 % on the candidate exits 1 under
// --fail-on-regression; --bar auto widens the bar by the baseline's
// spread, calls it same and exits 0, and the summary says the bar and
// where it came from; --bar of no rule is exit 2, one line.
func TestAnalyzeBar(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "drift")
	rng := rand.New(rand.NewSource(5))
	_, err := storetest.Write(dir, storetest.Run{
		Created: time.Date(2025, 1, 1, 2, 0, 0, 0, time.UTC), Seed: 1, Repeats: 6,
		Commits: []results.Commit{{Label: "base", SHA: storetest.BaseSHA, Build: "base"}, {Label: "head", SHA: storetest.NightSHA(0), Build: "head"}},
		Configs: []results.Config{storetest.Config},
		Value: func(k results.Commit, _ results.Config, rep int) map[string]float64 {
			v := 10000 * (1 + 0.4*float64(rep%3-1)) * (1 + 0.002*rng.NormFloat64())
			if k.Label == "head" {
				v *= 0.95
			}
			return map[string]float64{"tps": v}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := abtest(t, nil, "analyze", "--format", "text", "--fail-on-regression", dir)
	if code != 1 || !strings.Contains(stderr, "regression") {
		t.Errorf("−5 %% under a ±40 %% drift: exit %d, stderr %q; want 1\n%s", code, stderr, out)
	}
	code, out, stderr = abtest(t, nil, "analyze", "--format", "text", "--fail-on-regression", "--bar", "auto", dir)
	if code != 0 || !strings.Contains(out, "--bar auto: bars widened by the baseline's spread, up to ±") || !strings.Contains(out, "same ±") {
		t.Errorf("--bar auto: exit %d, stderr %q; want 0, the widened bar said\n%s", code, stderr, out)
	}
	code, out, stderr = abtest(t, nil, "analyze", "--bar", "<script>", dir)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, `--bar "<script>"`) || out != "" {
		t.Errorf("--bar <script>: exit %d, stdout %q, stderr %q; want 2 and one line", code, out, stderr)
	}
}
