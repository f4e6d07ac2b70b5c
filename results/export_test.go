package results

// DecodeLine decodes one cells.jsonl line as DecodeRecords does.
func DecodeLine(line []byte) (rec Record, err error) {
	err = decodeLine(line, &rec)
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
