package analysis

// One way a number that is not finite reaches JSON: null. encoding/json
// refuses NaN and ±Inf, and the report has them on purpose (no interval
// from one value, no change from a zero baseline); every type of the
// model with such a float64 field encodes itself with finiteJSON instead
// of a hand-written shadow struct per type.

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// finiteJSON encodes v, a struct (its embedded structs' fields
// promoted), as encoding/json does, except for its float64 fields: one
// that is ±Inf or NaN is null, or left out when its tag says omitempty;
// omitzero leaves out 0 as well. A finite value is written, 0 included,
// whatever omitempty says (a Δ of exactly 0 is an answer).
func finiteJSON(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	m := mirrorOf(rv.Type())
	out := reflect.New(m.typ).Elem()
	for i, f := range m.fields {
		x := rv.FieldByIndex(f.path)
		if !f.float {
			out.Field(i).Set(x)
			continue
		}
		if y := x.Float(); isFinite(y) && !(f.omitZero && y == 0) {
			p := reflect.New(x.Type())
			p.Elem().SetFloat(y)
			out.Field(i).Set(p)
		}
	}
	return json.Marshal(out.Interface())
}

// mirror is a struct type whose float64 fields are *float64, with the
// fields' paths in the type it mirrors.
type mirror struct {
	typ    reflect.Type
	fields []mirrorField
}

type mirrorField struct {
	path            []int
	float, omitZero bool
}

var mirrors sync.Map // reflect.Type → *mirror

func mirrorOf(t reflect.Type) *mirror {
	if m, ok := mirrors.Load(t); ok {
		return m.(*mirror)
	}
	type candidate struct {
		name, opts string
		typ        reflect.Type
		mf         mirrorField
	}
	var cands []candidate
	depth := map[string]int{} // the shallowest field of each name wins
	var walk func(t reflect.Type, path []int)
	walk = func(t reflect.Type, path []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			p := append(append([]int(nil), path...), i)
			switch {
			case tag == "-" || !f.IsExported() && !f.Anonymous:
				continue
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				walk(f.Type, p)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if d, ok := depth[name]; !ok || len(p) < d {
				depth[name] = len(p)
			}
			c := candidate{name: name, typ: f.Type, mf: mirrorField{path: p}}
			if f.Type.Kind() == reflect.Float64 {
				c.mf.float, c.mf.omitZero, c.typ = true, strings.Contains(opts, "omitzero"), reflect.PointerTo(f.Type)
				if strings.Contains(opts, "omitempty") || c.mf.omitZero {
					c.opts = ",omitempty"
				}
			} else if opts != "" {
				c.opts = "," + opts
			}
			cands = append(cands, c)
		}
	}
	walk(t, nil)
	m := &mirror{}
	var sfs []reflect.StructField
	for _, c := range cands {
		if len(c.mf.path) != depth[c.name] {
			continue
		}
		depth[c.name] = -1 // once
		m.fields = append(m.fields, c.mf)
		sfs = append(sfs, reflect.StructField{Name: "F" + strconv.Itoa(len(sfs)), Type: c.typ, Tag: reflect.StructTag(`json:"` + c.name + c.opts + `"`)})
	}
	m.typ = reflect.StructOf(sfs)
	mirrors.Store(t, m)
	return m
}
