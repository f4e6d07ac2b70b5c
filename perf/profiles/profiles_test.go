package profiles

import (
	"testing"

	"github.com/google/pprof/profile"
)

// TestFlatSamples: a merged sample counts as the samples it holds (its
// value over the period), a sample of a profile without a period as one,
// and a sample with no function only in the total.
func TestFlatSamples(t *testing.T) {
	fn := func(name string) *profile.Location {
		return &profile.Location{Line: []profile.Line{{Function: &profile.Function{Name: name}}}}
	}
	a, b := fn("a"), fn("b")
	p := &profile.Profile{Period: 1000, Sample: []*profile.Sample{
		{Location: []*profile.Location{a}, Value: []int64{1000}},
		{Location: []*profile.Location{a, b}, Value: []int64{2990}}, // three merged, periods vary
		{Location: []*profile.Location{b}, Value: []int64{400}},     // a short one is still a sample
		{Location: []*profile.Location{{}}, Value: []int64{1000}},
		{Location: []*profile.Location{b}, Value: []int64{0}},
	}}
	flat, total := FlatSamples(p)
	if flat["a"] != 4 || flat["b"] != 1 || total != 6 || len(flat) != 2 {
		t.Errorf("flat %v, total %d; want a 4, b 1, total 6", flat, total)
	}
	p.Period = 0
	if flat, total = FlatSamples(p); flat["a"] != 2 || total != 4 {
		t.Errorf("without a period: flat %v, total %d", flat, total)
	}
}

func TestUnresolved(t *testing.T) {
	for name, want := range map[string]struct {
		binary string
		ok     bool
	}{
		"[unknown] postgres":  {"postgres", true},
		"[unknown]":           {"", true},
		"0x00000000004a1b2c":  {"", true},
		"0x7fA3":              {"", true},
		UnresolvedAddresses:   {"", true},
		"0x":                  {"", false},
		"0xzz":                {"", false},
		"LWLockAcquire":       {"", false},
		"[no stack] postgres": {"", false},
		"hash_search_0x10":    {"", false},
	} {
		if b, ok := Unresolved(name); b != want.binary || ok != want.ok {
			t.Errorf("Unresolved(%q) = %q, %v; want %q, %v", name, b, ok, want.binary, want.ok)
		}
	}
}
