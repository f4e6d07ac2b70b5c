package store

import (
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestPointTextUnchanged: the configurations table's point column of
// every axis keeps the text earlier imports wrote (the registry derives
// it now), and reads back into the same configuration.
func TestPointTextUnchanged(t *testing.T) {
	for _, tc := range []struct {
		c    results.Config
		want string
	}{
		{results.Config{Workload: "select1", Clients: 8, Settings: map[string]string{"a": "1"}}, ``},
		{results.Config{Workload: "churn", Clients: 64, Rate: 1000}, `{"rate":1000}`},
		{results.Config{Workload: "churn", Rate: 2000, RateUnit: results.PerOp, Vars: map[string]string{"n": "a/b", "batch": "<script>"}}, `{"rate":2000,"rate_unit":"ops","vars":{"batch":"\u003cscript\u003e","n":"a/b"}}`},
		{results.Config{Workload: "churn", Rate: 0.5, Condition: "xmin-holder", Vars: map[string]string{"x": "1"}}, `{"rate":0.5,"vars":{"x":"1"},"condition":"xmin-holder"}`},
		{results.Config{Workload: "churn", Condition: "file:/tmp/c d.sh"}, `{"condition":"file:/tmp/c d.sh"}`},
	} {
		got := pointText(tc.c)
		if got != tc.want {
			t.Errorf("%s: point %s, want %s", tc.c.ID(), got, tc.want)
		}
		back := tc.c
		back.Rate, back.RateUnit, back.Vars, back.Condition = 0, "", nil, ""
		if err := readPoint(got, &back); err != nil {
			t.Fatal(err)
		}
		if back.ID() != tc.c.ID() {
			t.Errorf("point %s read back as %s, want %s", got, back.ID(), tc.c.ID())
		}
	}
	if err := readPoint(`{"rate":"x"}`, new(results.Config)); err == nil {
		t.Error("a point of another shape read without an error")
	}
}
