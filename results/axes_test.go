package results

import (
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// TestAxesHostile: values that could make one configuration read as
// another do not: an unknown axis of a newer abtest (Config.Extra)
// keeps configurations apart and escapes its name and value, a stored
// point cannot set a field that is not a point's, and the grouping key,
// SameConfig and the id agree.
func TestAxesHostile(t *testing.T) {
	base := Config{Workload: "select1", Clients: 8, Settings: map[string]string{PgssMax: "5000"}}
	a, b, c := base, base, base
	a.Extra = map[string]string{"think/ms": "<script>/x"}
	b.Extra = map[string]string{"think/ms": "<script>"}
	c.Extra = map[string]string{"think": "ms=<script>/x"}
	ids := map[string]bool{}
	for _, x := range []Config{base, a, b, c} {
		id := x.ID()
		if ids[id] {
			t.Errorf("two configurations have id %s", id)
		}
		ids[id] = true
		if strings.Count(id, "/") != 3+len(x.Extra) {
			t.Errorf("id %s: a value's / not escaped", id)
		}
	}
	if want := "select1/c8/cpuall/pgss.max=5000/+think%2Fms=<script>%2Fx"; a.ID() != want {
		t.Errorf("id %s, want %s", a.ID(), want)
	}
	for _, x := range []Config{base, a, b, c} {
		for _, y := range []Config{base, a, b, c} {
			same := x.ID() == y.ID()
			if SameConfig(&x, &y) != same || (string(x.AppendKey(nil)) == string(y.AppendKey(nil))) != same {
				t.Errorf("%s and %s: SameConfig or the key disagrees with the ids", x.ID(), y.ID())
			}
		}
	}
	pt, err := a.PointJSON()
	if err != nil || pt != `{"axes":{"think/ms":"\u003cscript\u003e/x"}}` {
		t.Fatalf("point %s, %v", pt, err)
	}
	back := base
	if err := back.ReadPoint(pt); err != nil || back.ID() != a.ID() {
		t.Errorf("point read back as %s (%v), want %s", back.ID(), err, a.ID())
	}
	for _, planted := range []string{`{"workload":"churn"}`, `{"rate":1,"settings":{"port":"1"}}`, `{"clients":1}`} {
		x := base
		if err := x.ReadPoint(planted); err == nil || x.ID() != base.ID() {
			t.Errorf("point %s: read (%v), configuration %s", planted, err, x.ID())
		}
	}
	if e := (Config{Clients: 4, CPUs: 2, Rate: 2000, RateUnit: PerOp, Vars: map[string]string{"n": "1"}, Condition: "idle-slot", Settings: map[string]string{"a": "1"}}).Effects(); e.Clients != 4 || e.CPUs != 2 || e.Rate != 2000 || e.RateUnit != PerOp || e.Vars["n"] != "1" || e.Condition != "idle-slot" || e.Settings["a"] != "1" {
		t.Errorf("effects %+v", e)
	}
}

// TestOneEffects: one configuration's flag values (bench's) take one
// value of each axis and each variable, checked, and only the axes the
// command reads: a list, a second value, a bad number or name and an
// axis it does not read (a new one included) are exit 2 in one line.
func TestOneEffects(t *testing.T) {
	takes := []string{"clients", "rate", "vars"}
	e, err := OneEffects(map[string][]string{"clients": {" 4 "}, "rate": {"250"}, "vars": {"batch=10", "n=<script>"}, "cpus": {""}}, "why", takes...)
	if err != nil || e.Clients != 4 || e.Rate != 250 || e.Vars["batch"] != "10" || e.Vars["n"] != "<script>" {
		t.Errorf("effects %+v, %v", e, err)
	}
	think := Scalar("think", "think", "think-ms", "think `LIST`", "", ByPgbench, nil, nil)
	Axes = append(Axes, think)
	defer func() { Axes = Axes[:len(Axes)-1] }()
	for want, values := range map[string]map[string][]string{
		"--clients 1,16: one value":        {"clients": {"1,16"}},
		`-c "x"`:                           {"clients": {"x"}},
		`-c "0"`:                           {"clients": {"0"}},
		`-R "fast"`:                        {"rate": {"fast"}},
		"--var batch=2: one value":         {"vars": {"batch=1", "batch=2"}},
		"--var 1x":                         {"vars": {"1x=1"}},
		"--set work_mem=1MB: why":          {"settings": {"work_mem=1MB"}},
		"--condition xmin-holder: why":     {"condition": {"xmin-holder"}},
		"--cpus 2: why; abtest matrix":     {"cpus": {"2"}},
		"--think-ms 5: why; abtest matrix": {"think": {"5"}},
	} {
		_, err := OneEffects(values, "why", takes...)
		if exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v; want one line with %q", values, err, want)
		}
	}
}
