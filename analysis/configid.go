package analysis

import (
	"maps"

	"github.com/pgabtest/abtest/results"
)

// configIDs remembers configurations' IDs by their content (configKey):
// c.ID() formats and sorts, and is asked for once per record and plan
// cell. The configuration asked last is compared first, field by field:
// cells and records come a configuration at a time, and its key
// (AppendKey: the axes' values, formatted) was 0.08 CPU-s at 10⁵ cells.
type configIDs struct {
	byKey map[string]string // configKey → ID
	key   []byte            // configKey's buffer
	// last is the configuration asked last, and lastID its ID (when
	// haveLast).
	last     results.Config
	lastID   string
	haveLast bool
}

func newConfigIDs() *configIDs { return &configIDs{byKey: map[string]string{}} }

// of is c.ID().
func (ids *configIDs) of(c results.Config) string {
	if ids.haveLast && sameFields(&c, &ids.last) {
		return ids.lastID
	}
	ids.key = configKey(ids.key[:0], c)
	id, ok := ids.byKey[string(ids.key)]
	if !ok {
		id = c.ID()
		ids.byKey[string(ids.key)] = id
	}
	ids.last, ids.lastID, ids.haveLast = c, id, true
	return id
}

// sameFields reports whether a and b are equal field by field, maps by
// their content: then their IDs are (a NaN rate is never equal, and
// looked up by its key). TestSameFieldsEveryField fails for a field it
// does not compare.
func sameFields(a, b *results.Config) bool {
	return a.Workload == b.Workload && a.Clients == b.Clients && a.CPUs == b.CPUs &&
		a.Instructions == b.Instructions && a.Rate == b.Rate && a.RateUnit == b.RateUnit &&
		a.Condition == b.Condition && maps.Equal(a.Settings, b.Settings) &&
		maps.Equal(a.Vars, b.Vars) && maps.Equal(a.Extra, b.Extra)
}
