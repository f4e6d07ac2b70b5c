package analysis

import (
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/pgabtest/abtest/results"
)

// configIDs remembers configurations' IDs, asked for once per record
// and plan cell. Cells and records come a configuration at a time: the
// configuration asked last is compared first, field by field, and any
// other looked up by its fields (fieldsKey). Its key by the registry's
// axis values (configKey: Config.AppendKey, formatted, their maps
// sorted into new slices) was 0.1 CPU-s and 650 000 allocations at 10⁵
// cells.
type configIDs struct {
	byKey map[string]string // fieldsKey → ID
	key   []byte            // fieldsKey's buffer
	// cur is the configuration asked (here, not on the heap: c.ID()
	// takes its address), last the one asked before and lastID its ID
	// (when haveLast).
	cur, last results.Config
	lastID    string
	haveLast  bool
}

func newConfigIDs() *configIDs { return &configIDs{byKey: map[string]string{}} }

// of is c.ID().
func (ids *configIDs) of(c results.Config) string {
	ids.cur = c
	if ids.haveLast && sameFields(&ids.cur, &ids.last) {
		return ids.lastID
	}
	ids.key = fieldsKey(ids.key[:0], &ids.cur)
	id, ok := ids.byKey[string(ids.key)]
	if !ok {
		id = ids.cur.ID()
		ids.byKey[string(ids.key)] = id
	}
	ids.last, ids.lastID, ids.haveLast = ids.cur, id, true
	return id
}

// sameFields reports whether a and b are equal field by field, maps by
// their content: then their IDs are. TestSameFieldsEveryField fails for
// a field it does not compare.
func sameFields(a, b *results.Config) bool {
	return a.Workload == b.Workload && a.Clients == b.Clients && a.CPUs == b.CPUs &&
		a.Instructions == b.Instructions && a.Rate == b.Rate && a.RateUnit == b.RateUnit &&
		a.Condition == b.Condition && maps.Equal(a.Settings, b.Settings) &&
		maps.Equal(a.Vars, b.Vars) && maps.Equal(a.Extra, b.Extra)
}

// fieldsKey appends to b c's fields, strings length-prefixed, maps in
// key order: configurations of one key have equal fields, so one ID
// (TestSameFieldsEveryField fails for a field it leaves out).
func fieldsKey(b []byte, c *results.Config) []byte {
	str := func(s string) {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(b, ':')
		b = append(b, s...)
	}
	str(c.Workload)
	b = strconv.AppendInt(b, int64(c.Clients), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(c.CPUs), 10)
	b = strconv.AppendBool(b, c.Instructions)
	b = strconv.AppendUint(b, math.Float64bits(c.Rate), 16)
	b = append(b, ',') // hex digits would run into the length after
	str(string(c.RateUnit))
	str(c.Condition)
	for _, m := range [...]map[string]string{c.Settings, c.Vars, c.Extra} {
		b = strconv.AppendInt(b, int64(len(m)), 10)
		b = append(b, '{')
		var buf [8]string // on the stack, for as many
		keys := buf[:0]
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			str(k)
			str(m[k])
		}
	}
	return b
}
