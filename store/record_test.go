package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/testing/resultstest"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/store"
)

// seriesFields are the fields of a record the store does not keep: the
// series (most of a real record's bytes, read by no verdict) stay in the
// results directory. Every other field must come back from the store as
// it was written.
var seriesFields = []string{"Samples", "Progress", "Final", "Probe"}

// fullRecord is a record with every field set, nested ones included.
func fullRecord(commit string, seq int, status results.Status) results.Record {
	return resultstest.FullRecord(commit, seq, status)
}

// unset lists the fields of v that are zero (their paths from name):
// structs and pointers are followed, maps and slices must have an
// element and their elements are followed. The series' insides are not:
// the store drops them whole.
func unset(v reflect.Value, name string) []string {
	if v.IsZero() {
		return []string{name}
	}
	switch v.Kind() {
	case reflect.Pointer:
		return unset(v.Elem(), name)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return nil
		}
		var out []string
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || v.Type() == reflect.TypeFor[results.Record]() && slices.Contains(seriesFields, f.Name) {
				continue
			}
			out = append(out, unset(v.Field(i), name+"."+f.Name)...)
		}
		return out
	case reflect.Slice:
		var out []string
		for i := range v.Len() {
			out = append(out, unset(v.Index(i), fmt.Sprintf("%s[%d]", name, i))...)
		}
		return out
	case reflect.Map:
		var out []string
		for it := v.MapRange(); it.Next(); {
			out = append(out, unset(it.Value(), fmt.Sprintf("%s[%v]", name, it.Key()))...)
		}
		return out
	}
	return nil
}

// TestFullRecordSetsEveryField: a field results.Record gains must be set
// in fullRecord, so the round trip below covers it.
func TestFullRecordSetsEveryField(t *testing.T) {
	rec := fullRecord("base", 1, results.StatusOK)
	if zero := unset(reflect.ValueOf(rec), "Record"); len(zero) > 0 {
		t.Errorf("fullRecord leaves %v zero: set every field, so the store's round trip covers it", zero)
	}
	for _, f := range seriesFields {
		if _, ok := reflect.TypeFor[results.Record]().FieldByName(f); !ok {
			t.Errorf("seriesFields names %s, which results.Record does not have", f)
		}
	}
}

// writeFullRun writes a results directory with the results package's
// writers: a plan of two commits and one record of each, every field
// set.
func writeFullRun(t *testing.T) (string, []results.Record) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	recs := []results.Record{fullRecord("base", 1, results.StatusOK), fullRecord("patch", 2, results.StatusFailed)}
	cfg := recs[0].Config
	p := &results.Plan{
		Version: results.Version, Baseline: "base",
		Commits: []results.Commit{{Label: "base", SHA: "1111111111111111111111111111111111111111", Build: "base"},
			{Label: "patch", SHA: "1111111111111111111111111111111111111111", Build: "patch", Patches: []results.Patch{{File: "x.patch", SHA256: "ffff"}}}},
		Options: results.PlanOpts{Repeats: 1, DurationS: 10, Order: "abba", Seed: 99},
		Configs: []results.Config{cfg}, Shard: "1/1", Created: time.Date(2025, 4, 1, 10, 0, 0, 0, time.UTC),
		Host: host.Host{Hostname: "bench1", CPU: "Synthetic CPU", NProc: 8, MemoryMB: 16384, Kernel: "6.1.0"},
	}
	for _, r := range recs {
		p.Cells = append(p.Cells, results.Cell{ID: r.Cell, Seq: r.Seq, Commit: r.Commit, Repeat: r.Repeat, Config: cfg})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := results.WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := results.AppendRecord(dir, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return dir, recs
}

// TestStoreRecordRoundTrip: records with every field set, written to a
// results directory, imported and read back as the analysis input, are
// the records the files give, but for the series (seriesFields), which
// stay in the files, and for the start time's zone (the store keeps the
// instant, in UTC).
func TestStoreRecordRoundTrip(t *testing.T) {
	checkRecordRoundTrip(t, openSQLite(t))
}

func TestStoreRecordRoundTripPostgres(t *testing.T) {
	s, err := store.Open(context.Background(), startPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkRecordRoundTrip(t, s)
}

func checkRecordRoundTrip(t *testing.T, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	dir, _ := writeFullRun(t)
	files, _, err := results.ReadRecords(dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("reading the records back from the files: %d, %v", len(files), err)
	}
	st, err := s.Import(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	in, err := history.Input(ctx, s, st.Run)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Records) != len(files) {
		t.Fatalf("%d records from the store, %d from the files", len(in.Records), len(files))
	}
	for i, got := range in.Records {
		want := files[i]
		want.DropProgress() // the store keeps the reports' TPS spread
		for _, f := range seriesFields {
			if v := reflect.ValueOf(&got).Elem().FieldByName(f); !v.IsZero() {
				t.Errorf("%s: the store kept %s, which it drops by design", want.Cell, f)
			}
			reflect.ValueOf(&want).Elem().FieldByName(f).SetZero()
		}
		if !got.StartedAt.Equal(want.StartedAt) {
			t.Errorf("%s: StartedAt %v from the store, %v from the files", want.Cell, got.StartedAt, want.StartedAt)
		}
		got.StartedAt, want.StartedAt = time.Time{}, time.Time{}
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for j := range gv.NumField() {
			if g, w := gv.Field(j).Interface(), wv.Field(j).Interface(); !reflect.DeepEqual(g, w) {
				t.Errorf("%s: %s from the store %+v, from the files %+v", want.Cell, gv.Type().Field(j).Name, g, w)
			}
		}
	}
}
