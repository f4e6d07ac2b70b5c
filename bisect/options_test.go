package bisect

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/matrix"
)

// TestOptionsRequest: one configuration (at one offered rate) from the
// options; an exact metric takes one repeat per step unless repeats
// were given; bad values are exit 2.
func TestOptionsRequest(t *testing.T) {
	o := Options{Good: "g", Bad: "b", Metric: "tps", Repeats: 8, MaxRepeats: 20, Matrix: matrix.Options{Workloads: "churn", PgssMax: "1000",
		Axes:    map[string][]string{"clients": {"16"}, "cpus": {"2"}, "settings": {"work_mem=8MB"}, "rate": {"1500"}},
		Seconds: 10, Warmup: 2, Protocol: "simple", Build: "release", Given: func(f string) bool { return f == "cpus" }}}
	r, err := o.Request()
	if err != nil {
		t.Fatal(err)
	}
	m := r.Matrix
	if r.Repeats != 8 || fmt.Sprint(m.Workloads, m.Axes["clients"], m.Axes["cpus"]) != "[churn] [16] [2]" || m.Duration != 10*time.Second ||
		m.Warmup != 2*time.Second || fmt.Sprint(m.Axes["rate"]) != "[1500]" || fmt.Sprint(m.Axes["settings"]) != "[pg_stat_statements.max=1000 work_mem=8MB]" {
		t.Errorf("request = %+v", r)
	}
	if fmt.Sprint(r.ReuseFrom()) != "[b-]" {
		t.Errorf("no --reuse: ReuseFrom %v, want [b-]", r.ReuseFrom())
	}
	o.Reuse = []string{"pg-", "mine"}
	if r, _ := o.Request(); fmt.Sprint(r.ReuseFrom()) != "[b- pg- mine]" {
		t.Errorf("--reuse pg- --reuse mine: ReuseFrom %v", r.ReuseFrom())
	}
	o.Matrix.Axes["rate"] = []string{"0"}
	if r, _ := o.Request(); r.Matrix.Axes["rate"] != nil {
		t.Errorf("--rate 0: rates %v, want none (the closed loop of no --rate)", r.Matrix.Axes["rate"])
	}
	o.Metric = "instructions_per_tx"
	if r, _ := o.Request(); r.Repeats != 1 {
		t.Errorf("exact metric: %d repeats, want 1", r.Repeats)
	}
	o.RepeatsGiven = true
	if r, _ := o.Request(); r.Repeats != 8 {
		t.Errorf("exact metric, -r 8 given: %d repeats", r.Repeats)
	}
	for want, bad := range map[string]Options{
		"unknown workload":  {Matrix: matrix.Options{Workloads: "nosuch", Build: "release", PgssMax: "1000"}},
		"-d -1":             {Matrix: matrix.Options{Workloads: "select1", Seconds: -1, Build: "release", PgssMax: "1000"}},
		"build type":        {Matrix: matrix.Options{Workloads: "select1", Build: "x", PgssMax: "1000"}},
		"-m 5":              {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "5"}},
		`-R "fast"`:         {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "1000", Axes: map[string][]string{"rate": {"fast"}}}},
		"one offered rate":  {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "1000", Seconds: 10, Axes: map[string][]string{"clients": {"1"}, "rate": {"500,1000"}}}},
		`reuse ""`:          {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "1000"}, Reuse: []string{""}},
		"--threshold 1e+09": {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "1000"}, Threshold: 1e9},
		"--threshold -1":    {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "1000"}, Threshold: -1},
		"--threshold NaN":   {Matrix: matrix.Options{Workloads: "select1", Build: "release", PgssMax: "1000"}, Threshold: math.NaN()},
	} {
		if _, err := bad.Request(); exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
