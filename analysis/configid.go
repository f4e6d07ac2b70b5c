package analysis

import "github.com/pgabtest/abtest/results"

// configIDs remembers configurations' IDs by their content (configKey):
// c.ID() formats and sorts, and is asked for once per record and plan
// cell.
type configIDs struct {
	byKey map[string]string // configKey → ID
	key   []byte            // configKey's buffer
}

func newConfigIDs() *configIDs { return &configIDs{byKey: map[string]string{}} }

// of is c.ID().
func (ids *configIDs) of(c results.Config) string {
	ids.key = configKey(ids.key[:0], c)
	if id, ok := ids.byKey[string(ids.key)]; ok {
		return id
	}
	id := c.ID()
	ids.byKey[string(ids.key)] = id
	return id
}
