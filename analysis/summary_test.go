package analysis

import (
	"strings"
	"testing"
)

// TestSummaryUncluttered: the recorded demo run's summary says how many
// metrics are not gated in one short line that points at the tiers
// table (it listed every one with its reason, ~1 000 characters in the
// seed's run); no "Biggest changes" repeats the overview, whose table
// holds every called change; and the same verdicts of 0 against 0 say
// so.
func TestSummaryUncluttered(t *testing.T) {
	r, err := AnalyzeDirs(Options{}, "../demo/testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	var md, txt strings.Builder
	r.WriteMarkdown(&md)
	r.WriteText(&txt)
	out := md.String()
	var notGated string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "- not gated:") {
			notGated = l
		}
	}
	if notGated == "" || len(notGated) > 120 || !strings.Contains(notGated, "9 metrics") || !strings.Contains(notGated, "(#metric-tiers)") || !strings.Contains(out, "\n## Metric tiers\n") {
		t.Errorf("not-gated line %q: want one short line with the count and a link to the tiers table", notGated)
	}
	for name, s := range map[string]string{"md": out, "text": txt.String()} {
		if strings.Contains(s, "Biggest changes") || strings.Contains(s, "Other changes") {
			t.Errorf("%s repeats the overview's changes", name)
		}
		if !strings.Contains(strings.Join(strings.Fields(s), " "), "11 same (all with no signal: 0 against 0 or one constant)") {
			t.Errorf("%s does not say its same verdicts have no signal", name)
		}
	}
	overview := out[strings.Index(out, "### Overview"):strings.Index(out, "## Summary")]
	for _, c := range r.Changes {
		if !strings.Contains(overview, "| "+r.shownConfig(c.Config)+" | "+c.Metric+" |") {
			t.Errorf("the overview lacks the change %s %s", c.Config, c.Metric)
		}
	}
	if len(r.Changes) == 0 {
		t.Fatal("the demo run called no change")
	}
}
