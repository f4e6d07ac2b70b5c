package results

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// The pg_stat_statements counts of a window with evictions are void; the
// metrics describing the eviction, and those of sources that never lose
// data, are not.
func TestBuiltinValidity(t *testing.T) {
	void := map[string]bool{MetricStatementsPerTx: true, MetricRowsPerTx: true}
	evicted := Window{Deallocs: 3, DeallocsKnown: true}
	for _, m := range Builtin {
		if got := m.Validity.Void(evicted) != ""; got != void[m.Name] {
			t.Errorf("%s void in a window with evictions: %v, want %v", m.Name, got, void[m.Name])
		}
		if why := m.Validity.Void(Window{DeallocsKnown: true}); why != "" {
			t.Errorf("%s void in a window without evictions: %q", m.Name, why)
		}
		if got := m.Validity.Void(Window{}) != ""; got != void[m.Name] {
			t.Errorf("%s void where deallocations are unknown: %v, want %v", m.Name, got, void[m.Name])
		}
	}
	values := map[string]float64{MetricTPS: 1000, MetricStatementsPerTx: 0.76, MetricRowsPerTx: 0.76, MetricPGSSDeallocs: 3, MetricWALRecordsPerTx: 1, MetricTupIns: 5, MetricServerCPUPerTx: 1e-5}
	got := Builtin.Apply(values, evicted)
	if want := map[string]string{MetricStatementsPerTx: VoidEvicted, MetricRowsPerTx: VoidEvicted}; !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %v, want %v", got, want)
	}
	if keys := slices.Sorted(maps.Keys(values)); !slices.Equal(keys, []string{MetricPGSSDeallocs, MetricServerCPUPerTx, MetricTPS, MetricTupIns, MetricWALRecordsPerTx}) {
		t.Errorf("values left: %v", keys)
	}
	if got := Builtin.Apply(map[string]float64{MetricStatementsPerTx: 1}, Window{DeallocsKnown: true}); got != nil {
		t.Errorf("Apply without evictions = %v, want nil", got)
	}
}

// A record says why a value is void: the reason it recorded, or for a
// record written before validity was recorded, the rule applied to the
// deallocations it kept (its final reading, or its pgss_deallocs metric
// where the store dropped the series); no evidence, no void.
func TestRecordWhyVoid(t *testing.T) {
	def, _ := Builtin.Get(MetricStatementsPerTx)
	tps, _ := Builtin.Get(MetricTPS)
	for _, tt := range []struct {
		name string
		rec  Record
		want string
	}{
		{"recorded", Record{Void: map[string]string{MetricStatementsPerTx: VoidDeallocsUnknown}}, VoidDeallocsUnknown},
		{"final deallocs", Record{Metrics: ValuesOf(map[string]float64{MetricStatementsPerTx: 0.64}), Final: &Final{Deallocs: 2}}, VoidEvicted},
		{"final without deallocs", Record{Metrics: ValuesOf(map[string]float64{MetricStatementsPerTx: 1}), Final: &Final{}}, ""},
		{"metric deallocs", Record{Metrics: ValuesOf(map[string]float64{MetricStatementsPerTx: 0.64, MetricPGSSDeallocs: 4000})}, VoidEvicted},
		{"no evidence", Record{Metrics: ValuesOf(map[string]float64{MetricStatementsPerTx: 1})}, ""},
		{"no value", Record{Final: &Final{Deallocs: 2}}, ""},
	} {
		if got := tt.rec.WhyVoid(def); got != tt.want {
			t.Errorf("%s: WhyVoid = %q, want %q", tt.name, got, tt.want)
		}
		tt.rec.Metrics = ValuesOf(map[string]float64{MetricTPS: 1})
		if got := tt.rec.WhyVoid(tps); got != "" {
			t.Errorf("%s: tps void: %q", tt.name, got)
		}
	}
}

// The void map is part of a record's line; a line without one (every
// record before it) reads as it did.
func TestRecordVoidJSON(t *testing.T) {
	rec := Record{Cell: "churn/r1/patch", Metrics: ValuesOf(map[string]float64{MetricTPS: 1}), Void: map[string]string{MetricRowsPerTx: VoidEvicted}}
	line, err := json.Marshal(&rec)
	if err != nil {
		t.Fatal(err)
	}
	var back Record
	if err := json.Unmarshal(line, &back); err != nil || !reflect.DeepEqual(back.Void, rec.Void) {
		t.Fatalf("%s read back as %v (%v)", line, back.Void, err)
	}
	rec.Void = nil
	if line, _ := json.Marshal(&rec); string(line) != `{"cell":"churn/r1/patch","seq":0,"commit":"","workload":"","clients":0,"cpus":0,"settings":null,"repeat":0,"status":"","started_at":"0001-01-01T00:00:00Z","duration_s":0,"wall_s":0,"metrics":{"tps":1}}` {
		t.Errorf("a record without void values writes %s", line)
	}
}

// A plan written before metrics declared their validity judges by the
// built-in metrics' validity; a metric of its own keeps none.
func TestOldPlanGetsValidity(t *testing.T) {
	p, err := ReadPlan("testdata/v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{MetricStatementsPerTx, MetricTPS, MetricPGSSDeallocs} {
		m, ok := p.Metrics.Get(name)
		b, _ := Builtin.Get(name)
		if !ok || m.Validity != b.Validity {
			t.Errorf("%s validity %q (found %v), want %q", name, m.Validity, ok, b.Validity)
		}
	}
	p, err = DecodePlan([]byte(`{"version": 2, "commits": [{"label": "a"}], "metrics": [{"name": "orders_per_s", "unit": "1/s", "direction": "higher_is_better"}]}`), "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := p.Metrics.Get("orders_per_s"); m.Validity != ValidAlways {
		t.Errorf("a workload's own metric got validity %q", m.Validity)
	}
	if _, err := DecodePlan([]byte(`{"version": 2, "commits": [{"label": "a"}], "metrics": [{"name": "x", "validity": "sometimes"}]}`), "plan.json"); err == nil {
		t.Error("an unknown validity was accepted")
	}
}
