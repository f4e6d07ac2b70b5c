package results

import (
	"reflect"
	"strings"
)

// DecodeLine decodes one cells.jsonl line as DecodeRecords does.
func DecodeLine(line []byte) (rec Record, err error) {
	err = newLineDecoder(false).decode(line, &rec)
	return rec, err
}

// UnmarshalLine is DecodeLine (the name the older tests use).
var UnmarshalLine = DecodeLine

// DecodePlanCells is the decoding of DecodePlan, without its checks and
// upgrades.
var DecodePlanCells = decodePlan

// DropProgress is r as ReadRecordsNoProgress reads it.
func DropProgress(r Record) Record {
	r.DropProgress()
	return r
}

// ConfigFieldsNames are the JSON names of the maps that decode through
// a cache (configFields), in order.
func ConfigFieldsNames() []string {
	typ := reflect.TypeFor[configFields]()
	var names []string
	for i := range typ.NumField() {
		names = append(names, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	return names
}
