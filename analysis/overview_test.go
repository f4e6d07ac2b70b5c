package analysis

import (
	"strings"
	"testing"
)

// TestOverviewAnswersFirst: the recorded demo run's report opens with
// the answer naming pgss_deallocs and the run-level tps, then the
// overview table, all within its first 40 lines; a metric at 0 against
// 0 shows "—" with its reason, never a verdict or an absolute Δ.
func TestOverviewAnswersFirst(t *testing.T) {
	r, err := AnalyzeDirs(Options{}, "../demo/testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	var md, txt strings.Builder
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	head := strings.Join(strings.SplitN(md.String(), "\n", 41)[:40], "\n")
	for _, want := range []string{"pgss_deallocs -66.6% better on churn", "tps: unknown, could not detect <", "### Overview: patch vs base", "| churn/c8/cpuall/pgss.max=1000 | pgss_deallocs |"} {
		if !strings.Contains(head, want) {
			t.Errorf("report.md's first 40 lines lack %q:\n%s", want, head)
		}
	}
	for name, out := range map[string]string{"md": md.String(), "text": txt.String()} {
		if strings.Contains(out, "(absolute, from 0)") || strings.Contains(out, " abs ") {
			t.Errorf("%s shows an absolute Δ from 0", name)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "wal_bytes_per_tx") && strings.Contains(line, "unknown") {
				t.Errorf("%s judges a metric with no signal: %s", name, line)
			}
		}
	}
	if !strings.Contains(md.String(), "no signal: 0 against 0 in every cell") {
		t.Error("no footnote says why a row has no signal")
	}
}

// TestOverviewEscapesLabels: a commit label with markup stays text in
// the answer line and the overview.
func TestOverviewEscapesLabels(t *testing.T) {
	in, err := Load("../demo/testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	for i := range in.Records {
		if in.Records[i].Commit == "patch" {
			in.Records[i].Commit = "<script>x</script>"
		}
	}
	for i := range in.Plan.Commits {
		if in.Plan.Commits[i].Label == "patch" {
			in.Plan.Commits[i].Label = "<script>x</script>"
		}
	}
	r, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var md strings.Builder
	r.WriteMarkdown(&md)
	if strings.Contains(md.String(), "<script>") || !strings.Contains(md.String(), "&lt;script&gt;x&lt;/script&gt; vs base") {
		t.Errorf("a label's markup reached the markdown:\n%s", md.String()[:600])
	}
}
