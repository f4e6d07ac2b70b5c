package results

// DecodeLine decodes one cells.jsonl line as DecodeRecords does, and
// says whether the fast path decoded it.
func DecodeLine(line []byte) (rec Record, fast bool, err error) {
	d := newLineDecoder(newInterner())
	if d.decode(line, &rec) && rec.Cell != "" {
		return rec, true, nil
	}
	rec = Record{}
	err = d.line(line, &rec)
	return rec, false, err
}

// UnmarshalLine decodes one line by json.Unmarshal alone.
func UnmarshalLine(line []byte) (rec Record, err error) {
	err = newLineDecoder(newInterner()).unmarshal(line, &rec)
	return rec, err
}

// DecodePlanCells is the decoding of DecodePlan, without its checks and
// upgrades.
var DecodePlanCells = decodePlan

// DecodeCells says whether the fast path decodes a plan's cells.
func DecodeCells(b []byte) bool {
	_, ok := newLineDecoder(newInterner()).cells(b)
	return ok
}

// RecordFields are the keys of a Record lineDecoder reads.
var RecordFields = recordFields[:]

// CutCells says whether the fast path cuts a plan's cells out of it.
func CutCells(b []byte) bool {
	_, _, ok := cutCells(b, newLineDecoder(newInterner()))
	return ok
}

// ParseFloat is the scanner's parseFloat.
var ParseFloat = parseFloat

// Pow10Mantissa is eiselLemire's 128-bit mantissa of 10^e.
func Pow10Mantissa(e int) [2]uint64 {
	pow128Once.Do(makePow128)
	return pow128[e-pow10Min]
}
