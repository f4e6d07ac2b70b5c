package store

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/results"
)

// How a results.Record is stored, said once here for Import (record to
// row) and Input (row to record):
//
//   - the fields of cellColumns are columns of the cells table, of the
//     same name and order;
//   - its configuration (results.Config: workload, clients, CPUs,
//     settings, instructions) is a row of the configurations table that
//     the cell's config column names;
//   - its metrics are the cells table's metrics column, a JSON object
//     by name (metricsText), which the metrics view unfolds into a row
//     per metric;
//   - its series (Samples, Progress, Final, Probe: most of a real
//     record's bytes, read by no verdict) are not stored: they stay in the
//     results directory; the spread of its per-second TPS (TPSSpread,
//     the within-cell noise) is kept in the detail; its Waits (counts by wait event, a few hundred
//     bytes) are kept in the detail: the analysis decides from them
//     whether a share (db_time_pct) rests on enough samples to compare,
//     and the store's analysis must be the files';
//   - everything else is the cell's detail, the record as JSON with the
//     above left out. A field records gain later lands there with no
//     change here.
//
// The cells table's run_id, shard, config and artifacts columns are not
// fields of the record: artifacts (the record's artifacts and its
// profile) is for the dashboard's links and never read back; the record's
// Artifacts and Perf are in the detail.

// column is a column of the cells table and the record field it holds:
// ptr points at the field, or at an adapter of it (intBool, utcTime).
type column struct {
	name string
	ptr  any
}

// cellColumns are r's fields that the cells table holds as columns: the
// insert writes them, the read scans into them, the detail leaves them
// out.
func cellColumns(r *results.Record) []column {
	return []column{
		{"cell", &r.Cell},
		{"commit_label", &r.Commit},
		{"repeat", &r.Repeat},
		{"seq", &r.Seq},
		{"status", &r.Status},
		{"saturated", (*intBool)(&r.Saturated)},
		{"started_at", (*utcTime)(&r.StartedAt)},
		{"duration_s", &r.DurationS},
		{"error", &r.Error},
	}
}

// columnNames are the names of cellColumns, each with prefix, joined by
// commas.
func columnNames(prefix string) string {
	cols := cellColumns(&results.Record{})
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = prefix + c.name
	}
	return strings.Join(names, ", ")
}

// columnArgs appends r's column values to args, in cellColumns' order.
func columnArgs(args []any, r *results.Record) []any {
	for _, c := range cellColumns(r) {
		args = append(args, columnValue(c.ptr))
	}
	return args
}

// columnValue is the value a column is written with: what an adapter
// says, else the field as its underlying type (results.Status as a
// string), which both drivers take.
func columnValue(ptr any) any {
	// The types of cellColumns first, without reflection: 10⁵ cells.
	switch p := ptr.(type) {
	case *string:
		return *p
	case *int:
		return *p
	case *float64:
		return *p
	case driver.Valuer:
		x, _ := p.Value()
		return x
	}
	v := reflect.ValueOf(ptr).Elem()
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Int, reflect.Int64:
		return v.Int()
	case reflect.Float64:
		return v.Float()
	}
	panic(fmt.Sprintf("store: no column type for a record field of kind %s", v.Kind()))
}

// setConfig gives r the configuration c: the inverse of r.Config.
func setConfig(r *results.Record, c results.Config) {
	r.Workload, r.Clients, r.CPUs, r.Settings, r.Instructions = c.Workload, c.Clients, c.CPUs, c.Settings, c.Instructions
}

// dropSeries clears r's series, which the store does not keep (its
// Waits it keeps).
func dropSeries(r *results.Record) {
	r.DropProgress()
	r.Samples, r.Final, r.Probe = nil, nil, nil
}

// emptyDetail is the detail of a record that has nothing beyond its
// columns.
var emptyDetail = jsonText(results.Record{})

// cellDetail is r's detail: r as JSON without its columns, its
// configuration, its metrics and its series; "" when nothing is left.
func cellDetail(r *results.Record) string {
	d := *r
	for _, c := range cellColumns(&d) {
		reflect.ValueOf(c.ptr).Elem().SetZero()
	}
	setConfig(&d, results.Config{})
	d.Metrics = results.Values{}
	dropSeries(&d)
	// Checking for nothing left first spares 100 000 synthetic cells
	// 0.1 CPU-s of marshalling.
	if reflect.ValueOf(d).IsZero() {
		return ""
	}
	if det := jsonText(d); det != emptyDetail {
		return det
	}
	return ""
}

// cellRecord is a stored cell as a record: its detail, with the columns
// (scanned into cols) and its configuration laid over it. The metrics
// are the caller's to add.
func cellRecord(cols *results.Record, det string, c results.Config) (results.Record, error) {
	r := *cols
	if det != "" {
		r = results.Record{}
		if err := json.Unmarshal([]byte(det), &r); err != nil {
			return r, fmt.Errorf("cell %s: %v", cols.Cell, err)
		}
		to, from := cellColumns(&r), cellColumns(cols)
		for i := range to {
			reflect.ValueOf(to[i].ptr).Elem().Set(reflect.ValueOf(from[i].ptr).Elem())
		}
	}
	setConfig(&r, c)
	return r, nil
}

// intBool is a bool stored as 0 or 1: the schema spells booleans
// INTEGER, for SQLite.
type intBool bool

func (b intBool) Value() (driver.Value, error) {
	if b {
		return int64(1), nil
	}
	return int64(0), nil
}

func (b *intBool) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*b = v != 0
	case int32:
		*b = v != 0
	case bool:
		*b = intBool(v)
	default:
		return fmt.Errorf("store: %T is not a 0/1 boolean", src)
	}
	return nil
}

// utcTime is a time stored as RFC 3339 UTC text, which sorts: the
// instant is kept, the zone is not.
type utcTime time.Time

func (t utcTime) Value() (driver.Value, error) {
	return time.Time(t).UTC().Format(time.RFC3339Nano), nil
}

func (t *utcTime) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case time.Time:
		*t = utcTime(v.UTC())
		return nil
	default:
		return fmt.Errorf("store: %T is not an RFC 3339 time", src)
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	*t = utcTime(p)
	return err
}

// metricsText is the metrics column of values: a JSON object by name in
// name order, without the NaN and infinite values that JSON cannot
// hold (nor a cell_metrics row could); names are quoted as json.Marshal
// quotes them. buf is for the text's bytes.
func metricsText(buf []byte, values results.Values) ([]byte, string) {
	buf = append(buf[:0], '{')
	i := 0
	for name, v := range values.All() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(append(buf, jsonText(name)...), ':')
		buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		i++
	}
	buf = append(buf, '}')
	return buf, string(buf)
}

// parseMetrics reads a metrics column (as metricsText writes it, or as
// a migration's JSON functions did).
func parseMetrics(text string) (results.Values, error) {
	var v results.Values
	if text == "{}" {
		return v, nil
	}
	err := v.UnmarshalJSON([]byte(text))
	return v, err
}
