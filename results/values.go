package results

import (
	"bytes"
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
)

// Values are a cell's measured values by metric name (Record.Metrics),
// in JSON an object as a map of them is. They are two slices, not a
// map: the names in order, shared by every record of a decoding that
// has the same ones (read, never written), and the values. A map per
// record was 53 MB of the 140 MB that 10⁵ records took in memory, and
// walking them most of analysing them.
//
// A copy of a Values shares its values, as a copy of a map does; a
// name Set adds is the copy's own.
type Values struct {
	names []string // sorted, no repeats
	vals  []float64
}

// ValuesOf returns m's values.
func ValuesOf(m map[string]float64) Values {
	if len(m) == 0 {
		return Values{}
	}
	names := slices.Sorted(maps.Keys(m))
	vals := make([]float64, len(names))
	for i, n := range names {
		vals[i] = m[n]
	}
	return Values{names: names, vals: vals}
}

// Len is the number of metrics.
func (v Values) Len() int { return len(v.names) }

// IsZero reports no metrics: the field is left out of JSON then, as an
// empty map was.
func (v Values) IsZero() bool { return len(v.names) == 0 }

// index is name's index, or -1.
func (v Values) index(name string) int {
	if i, ok := slices.BinarySearch(v.names, name); ok {
		return i
	}
	return -1
}

// Names returns the metrics' names in order, shared by the records of
// a decoding that have the same ones: read them, never write them. A
// reader of many records works out what it does with each name once
// per names (the analysis' columns: a map lookup per value was most of
// making them at 10⁵ cells).
func (v Values) Names() []string { return v.names }

// At returns the value of the i-th of Names.
func (v Values) At(i int) float64 { return v.vals[i] }

// Get returns the value of metric name and whether there is one.
func (v Values) Get(name string) (float64, bool) {
	if i := v.index(name); i >= 0 {
		return v.vals[i], true
	}
	return 0, false
}

// Value returns the value of metric name, 0 when there is none.
func (v Values) Value(name string) float64 {
	x, _ := v.Get(name)
	return x
}

// Set sets the value of metric name.
func (v *Values) Set(name string, x float64) {
	i, ok := slices.BinarySearch(v.names, name)
	if ok {
		v.vals[i] = x
		return
	}
	// The names may be shared: a new one makes them this record's own.
	v.names = slices.Insert(slices.Clip(v.names), i, name)
	v.vals = slices.Insert(slices.Clip(v.vals), i, x)
}

// Delete removes metric name.
func (v *Values) Delete(name string) {
	if i := v.index(name); i >= 0 {
		v.names = slices.Delete(slices.Clone(v.names), i, i+1)
		v.vals = slices.Delete(slices.Clone(v.vals), i, i+1)
	}
}

// All yields the metrics and their values in name order.
func (v Values) All() iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for i, n := range v.names {
			if !yield(n, v.vals[i]) {
				return
			}
		}
	}
}

// Map returns the values as a new map.
func (v Values) Map() map[string]float64 {
	m := make(map[string]float64, len(v.names))
	for i, n := range v.names {
		m[n] = v.vals[i]
	}
	return m
}

// MarshalJSON writes the object json.Marshal writes of the map: names
// in order, escaped as its keys are (the encoder around escapes HTML
// or not, as for a map's keys), values as its floats (an error for
// NaN or an infinity).
func (v Values) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, n := range v.names {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(n); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		x, err := json.Marshal(v.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(x)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads an object as json.Unmarshal reads it into a map
// (the last of a repeated name counts), a null value as NaN: not a
// measurement, where 0 would be taken for a tps of 0. It is the one
// decoder, UnmarshalJSONFrom, for encoding/json's callers (a stored
// cell's detail in the store, tests).
func (v *Values) UnmarshalJSON(data []byte) error {
	return jsonv2.Unmarshal(data, v, v1Semantics)
}

// String shows the values as a map does (tests' messages).
func (v Values) String() string {
	var b strings.Builder
	b.WriteString("map[")
	for i, n := range v.names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(v.vals[i], 'g', -1, 64))
	}
	b.WriteByte(']')
	return b.String()
}
