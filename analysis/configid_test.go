package analysis

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/pgabtest/abtest/results"
)

// TestConfigIDsAreID: a remembered ID is c.ID(), for configurations
// sharing maps, with equal maps of their own, nil and empty maps, -0 and
// 0, NaN rates, and maps made, dropped and collected between lookups
// (one made at a dropped one's address is another map).
func TestConfigIDsAreID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shared := []map[string]string{nil, {}, {"work_mem": "4MB"}, {"work_mem": "8MB"}, {"a": "1", "b": "2"}}
	ids := newConfigIDs()
	for i := range 20000 {
		pick := func() map[string]string {
			switch rng.IntN(3) {
			case 0:
				return shared[rng.IntN(len(shared))]
			case 1: // a map of its own, equal to a shared one or not
				m := map[string]string{}
				for k, v := range shared[rng.IntN(len(shared))] {
					m[k] = v
				}
				if rng.IntN(2) == 0 {
					m["x"] = fmt.Sprint(rng.IntN(5))
				}
				return m
			}
			return map[string]string{"y": fmt.Sprint(i)} // new every time
		}
		c := results.Config{Workload: []string{"select1", "churn"}[rng.IntN(2)], Clients: rng.IntN(3), CPUs: rng.IntN(2),
			Instructions: rng.IntN(2) == 0, Rate: []float64{0, math.Copysign(0, -1), 100, math.NaN()}[rng.IntN(4)],
			Settings: pick(), Vars: pick(), Condition: []string{"", "xmin-holder"}[rng.IntN(2)]}
		if got, want := ids.of(c), c.ID(); got != want {
			t.Fatalf("lookup %d: %q, c.ID() %q (%+v)", i, got, want, c)
		}
		if i%1000 == 0 {
			runtime.GC()
		}
	}
}

// TestSameFieldsEveryField: configurations that differ in any one field
// of results.Config are not the same to sameFields, and the IDs they are
// given are their own, asked one after the other and in turn (by
// fieldsKey); a field this test cannot vary fails it (teach sameFields,
// fieldsKey and the test the new field).
func TestSameFieldsEveryField(t *testing.T) {
	base := results.Config{Workload: "churn", Clients: 8, CPUs: 2, Settings: map[string]string{"work_mem": "4MB"},
		Instructions: false, Rate: 100, RateUnit: "ops", Vars: map[string]string{"batch": "10"}, Condition: "xmin-holder",
		Extra: map[string]string{"think_ms": "5"}}
	typ := reflect.TypeFor[results.Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		other := base
		v := reflect.ValueOf(&other).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int:
			v.SetInt(v.Int() + 1)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Float64:
			v.SetFloat(v.Float() + 1)
		case reflect.Map:
			m := reflect.MakeMap(v.Type())
			m.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf("v"))
			v.Set(m)
		default:
			t.Fatalf("results.Config.%s is a %s: teach sameFields and this test to compare it", f.Name, v.Kind())
		}
		if sameFields(&base, &other) || sameFields(&other, &base) {
			t.Errorf("configurations differing in %s are the same to sameFields", f.Name)
		}
		// Asked in turn, each is looked up by its key.
		ids := newConfigIDs()
		for _, c := range []results.Config{base, other, other, base, other} {
			if got, want := ids.of(c), c.ID(); got != want {
				t.Errorf("differing in %s: ID %q, want %q", f.Name, got, want)
			}
		}
	}
	if copy := base; !sameFields(&base, &copy) {
		t.Error("a configuration is not the same as its copy")
	}
}

// TestFieldsKeyApart: configurations whose fields would run together
// written one after another (a key holding the separator, a map's entry
// moved to the next map, digits moved from the workload to the clients,
// more entries than the key's stack buffer) have keys and IDs of their
// own, asked in any order.
func TestFieldsKeyApart(t *testing.T) {
	many := map[string]string{}
	for i := range 20 {
		many[fmt.Sprint("k", i)] = fmt.Sprint(i)
	}
	configs := []results.Config{
		{Workload: "w", Settings: map[string]string{"a:1": "b"}},
		{Workload: "w", Settings: map[string]string{"a": "1:b"}},
		{Workload: "w", Settings: map[string]string{"x": "1"}},
		{Workload: "w", Vars: map[string]string{"x": "1"}},
		{Workload: "w", Extra: map[string]string{"x": "1"}},
		{Workload: "a1", Clients: 2},
		{Workload: "a", Clients: 12},
		{Workload: "w", Settings: many},
		{Workload: "w", Settings: maps.Clone(many), Vars: map[string]string{"k0": "0"}},
		{Workload: "w", Condition: "1:x"},
		{Workload: "w", RateUnit: "1:x"},
	}
	ids := newConfigIDs()
	keys := map[string]int{}
	for round := range 3 {
		for i := range configs {
			c := configs[(i*7+round)%len(configs)]
			if got, want := ids.of(c), c.ID(); got != want {
				t.Errorf("%+v: ID %q, want %q", c, got, want)
			}
		}
	}
	for i := range configs {
		k := string(fieldsKey(nil, &configs[i]))
		if j, dup := keys[k]; dup {
			t.Errorf("configurations %d and %d have one key %q", j, i, k)
		}
		keys[k] = i
	}
}
