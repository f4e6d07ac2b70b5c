package analysis

import (
	"math"
	"reflect"

	"github.com/pgabtest/abtest/results"
)

// configIDs remembers configurations' IDs. The records and plan cells
// of one configuration share its settings and vars maps (results
// decodes them so), so a configuration is first looked up by its
// fields with the maps by identity, which costs a hash of two short
// strings; a configuration met with other maps is looked up by its
// content (configKey), and c.ID() is made once per configuration. At
// 10⁵ cells, an ID per record and per plan cell, even remembered by
// content, was 0.25 CPU-s of `analyze`.
type configIDs struct {
	bySame map[sameConfig]sameID
	byKey  map[string]string // configKey → ID
	key    []byte            // configKey's buffer
}

// sameConfig is a configuration's fields, its maps by identity.
type sameConfig struct {
	workload, condition string
	rateUnit            results.RateUnit
	clients, cpus       int
	instructions        bool
	rate                uint64 // bits: -0 and 0 apart, as c.ID() keeps them
	settings, vars      uintptr
}

// sameID is an ID and the maps it was found with: kept alive, their
// addresses are no other map's while the entry is remembered.
type sameID struct {
	id             string
	settings, vars map[string]string
}

func newConfigIDs() *configIDs {
	return &configIDs{bySame: map[sameConfig]sameID{}, byKey: map[string]string{}}
}

// of is c.ID().
func (ids *configIDs) of(c results.Config) string {
	k := sameOf(c)
	if e, ok := ids.bySame[k]; ok {
		return e.id
	}
	ids.key = configKey(ids.key[:0], c)
	id, ok := ids.byKey[string(ids.key)]
	if !ok {
		id = c.ID()
		ids.byKey[string(ids.key)] = id
	}
	ids.bySame[k] = sameID{id: id, settings: c.Settings, vars: c.Vars}
	return id
}

// sameOf is c's fields, its maps by identity.
func sameOf(c results.Config) sameConfig {
	return sameConfig{workload: c.Workload, condition: c.Condition, rateUnit: c.RateUnit, clients: c.Clients, cpus: c.CPUs, instructions: c.Instructions,
		rate: math.Float64bits(c.Rate), settings: mapAddr(c.Settings), vars: mapAddr(c.Vars)}
}

// mapAddr is where m is (0: nil).
func mapAddr(m map[string]string) uintptr {
	return uintptr(reflect.ValueOf(m).UnsafePointer())
}
