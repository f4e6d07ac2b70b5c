package dashboard

import (
	"strings"
	"testing"
)

// TestHuman: numbers as people read them: no exponent for ordinary
// values, thousands grouped, four significant digits, no infinity.
func TestHuman(t *testing.T) {
	const nb = "\u202f"
	for x, want := range map[float64]string{
		16459.7:   "16" + nb + "460",
		1646:      "1646",
		264545.2:  "264" + nb + "545",
		0.2551:    "0.2551",
		2.17:      "2.17",
		0.000021:  "0.000021",
		0:         "0",
		-4115.5:   "−4116",
		-123456.0: "−123" + nb + "456",
	} {
		if got := human(x); got != want {
			t.Errorf("human(%v) = %q, want %q", x, got, want)
		}
	}
	for _, x := range []float64{1e300, 1.646e4, 3.5e-5} {
		if got := human(x); strings.Contains(got, "e+") {
			t.Errorf("human(%v) = %q", x, got)
		}
	}
	p := 1e-9
	if got := pval(&p); got != "< 0.0001" {
		t.Errorf("pval(1e-9) = %q", got)
	}
	d := -4.8
	if got := pnum(&d); got != "−4.80"+nb+"%" {
		t.Errorf("pnum(-4.8) = %q", got)
	}
}
