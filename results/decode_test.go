package results_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pgabtest/abtest/internal/testing/resultstest"
	"github.com/pgabtest/abtest/results"
)

// TestDecodeRecordsManyBlocks: a cells.jsonl of many blocks (full
// records, each different, bad lines, a blank one, a line longer than a
// block), read in odd pieces, decodes line by line as json.Unmarshal
// would, with a warning naming each bad line. Blocks and record slices
// are reused from chunk to chunk: a record that kept any of a block's
// bytes would be overwritten by the lines read after it, and differ.
func TestDecodeRecordsManyBlocks(t *testing.T) {
	var b strings.Builder
	var lines []string // by line number - 1
	var bad []int
	for i := range 6000 {
		var line string
		switch {
		case i == 17:
			line = ""
		case i%997 == 5:
			line = `{"cell":"torn","seq":` // a killed run's last line
			bad = append(bad, i+1)
		default:
			r := resultstest.FullRecord([]string{"base", "patch"}[i%2], i, results.StatusOK)
			r.Cell = fmt.Sprintf("w%d/c%d/r%d/%s", i%7, i%5, i, r.Commit)
			r.Settings = map[string]string{"work_mem": fmt.Sprint(i%3, "MB")}
			r.Metrics.Set("tps", float64(i)+0.25)
			r.Error = fmt.Sprintf("error of line %d", i+1)
			if i == 3000 {
				r.LogTail = []string{strings.Repeat("x", 3<<20)}
			}
			if i%11 == 0 {
				r.Commit = `pat\ch` // escaped: json.Unmarshal's
			}
			data, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			line = string(data)
		}
		lines = append(lines, line)
		b.WriteString(line + "\n")
	}
	recs, warnings, err := results.DecodeRecords(iotest.HalfReader(strings.NewReader(b.String())), "cells.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var want []results.Record
	for _, line := range lines {
		if r, err := results.UnmarshalLine([]byte(line)); err == nil {
			want = append(want, r)
		}
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if !sameRecord(recs[i], want[i]) {
			t.Fatalf("record %d:\n%+v\nwant\n%+v", i, recs[i], want[i])
		}
	}
	if len(warnings) != len(bad) {
		t.Fatalf("warnings %q, want one for each of lines %v", warnings, bad)
	}
	for i, n := range bad {
		if !strings.Contains(warnings[i], fmt.Sprintf("line %d ", n)) {
			t.Errorf("warning %q, want line %d", warnings[i], n)
		}
	}

	// Read from a file (several blocks decoded in place), the same
	// records and warnings.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	all, warnings, err := results.ReadRecords(dir)
	if err != nil || len(all) != len(want) || len(warnings) != len(bad) {
		t.Fatalf("ReadRecords: %d records, %d warnings, %v; want %d records", len(all), len(warnings), err, len(want))
	}
	for i := range want {
		if !sameRecord(all[i], want[i]) {
			t.Fatalf("ReadRecords: record %d:\n%+v\nwant\n%+v", i, all[i], want[i])
		}
	}
}

// TestReadRecordsInPlace: records read from a file block by block are
// those decoded from its bytes streamed, where lines are no record (blank, torn: the records after
// move back over them) and where the first lines are short (later
// chunks fall past the slice the first predicts).
func TestReadRecordsInPlace(t *testing.T) {
	line := func(i int, long bool) string {
		r := results.Record{Cell: fmt.Sprintf("select1/c%d/r%d/base", i%10, i), Seq: i, Commit: "base", Status: results.StatusOK,
			Config:  results.Config{Workload: "select1", Clients: i % 10},
			Metrics: results.ValuesOf(map[string]float64{"tps": float64(i) * 1.1})}
		if long {
			r.Error = strings.Repeat("e", 400)
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	files := map[string]func(i int) string{
		"gaps": func(i int) string {
			switch {
			case i%1500 == 7:
				return ""
			case i%2500 == 11:
				return `{"cell":"torn","seq":`
			}
			return line(i, false)
		},
		"longer later": func(i int) string { return line(i, i >= 5000) },
		// Records moved back over the blank lines, then the slice
		// outgrown by fewer than those.
		"gaps, longer later": func(i int) string {
			switch {
			case i >= 5000 && i < 12000:
				return ""
			case i >= 19900:
				return line(i, true)
			}
			return line(i, false)
		},
	}
	for name, lineOf := range files {
		var b strings.Builder
		for i := range 20000 {
			b.WriteString(lineOf(i) + "\n")
		}
		dir := t.TempDir()
		want, wantWarnings, err := results.DecodeRecords(strings.NewReader(b.String()), filepath.Join(dir, results.CellsFile))
		if err != nil || len(want) < 12000 {
			t.Fatalf("%s: %d records, %v", name, len(want), err)
		}
		if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		got, warnings, err := results.ReadRecords(dir)
		if err != nil || len(got) != len(want) || strings.Join(warnings, "\n") != strings.Join(wantWarnings, "\n") {
			t.Fatalf("%s: %d records, %q, %v; want %d, %q", name, len(got), warnings, err, len(want), wantWarnings)
		}
		for i := range want {
			if !sameRecord(got[i], want[i]) {
				t.Fatalf("%s: record %d: %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
}

// TestReadRecordsNoProgress: records read without their progress are
// those read with it, Progress nil; a line whose progress does not decode is
// skipped with the same warning.
func TestReadRecordsNoProgress(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		r := resultstest.FullRecord("base", i, results.StatusOK)
		r.Cell = fmt.Sprintf("w/c%d/r%d/base", i%5, i)
		if i%7 == 0 {
			r.Commit = `ba\se`
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if i%500 == 3 {
			data = []byte(strings.Replace(string(data), `"progress":[{"t":`, `"progress":[{"t":"x","u":`, 1))
		}
		b.Write(append(data, '\n'))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want, wantWarnings, err := results.ReadRecords(dir)
	if err != nil || len(wantWarnings) != 6 || len(want) != 2994 {
		t.Fatalf("%d records, warnings %q, %v", len(want), wantWarnings, err)
	}
	got, warnings, err := results.ReadRecordsNoProgress(dir)
	if err != nil || len(got) != len(want) || strings.Join(warnings, "\n") != strings.Join(wantWarnings, "\n") {
		t.Fatalf("%d records, %q, %v; want %d, %q", len(got), warnings, err, len(want), wantWarnings)
	}
	for i := range want {
		if len(want[i].Progress) == 0 || got[i].Progress != nil {
			t.Fatalf("record %d: progress %v, read with it %v", i, got[i].Progress, want[i].Progress)
		}
		w := results.DropProgress(want[i])
		if got[i].TPSSeconds() != want[i].TPSSeconds() || got[i].TPSSeconds().N == 0 || !sameRecord(got[i], w) {
			t.Fatalf("record %d:\n%+v\nwant\n%+v", i, got[i], w)
		}
	}
}

// TestDecodeRecordsReadError: a read error after some lines is returned
// with the records before it. It was set after the gathering loop could
// already have returned (go test -race saw it), and could be lost.
func TestDecodeRecordsReadError(t *testing.T) {
	r := resultstest.FullRecord("base", 1, results.StatusOK)
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk on fire")
	for range 50 {
		in := io.MultiReader(strings.NewReader(string(data)+"\n"), iotest.ErrReader(boom))
		recs, _, err := results.DecodeRecords(in, "cells.jsonl")
		if !errors.Is(err, boom) {
			t.Fatalf("error %v, want %v", err, boom)
		}
		if len(recs) != 1 {
			t.Fatalf("%d records, want 1", len(recs))
		}
	}
}

// TestDecodedSlicesApart: growing one record's progress reports or
// metric values never writes the next one's.
func TestDecodedSlicesApart(t *testing.T) {
	var b strings.Builder
	for i := range 2 {
		r := resultstest.FullRecord("base", i, results.StatusOK)
		r.Cell = fmt.Sprint("cell", i)
		r.Void = nil
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(string(data) + "\n")
	}
	recs, _, err := results.DecodeRecords(strings.NewReader(b.String()), "cells.jsonl")
	if err != nil || len(recs) != 2 {
		t.Fatal(len(recs), err)
	}
	want, err := results.UnmarshalLine([]byte(strings.Split(b.String(), "\n")[1]))
	if err != nil {
		t.Fatal(err)
	}
	recs[0].Progress = append(recs[0].Progress, results.Progress{T: 99, TPS: 99})
	recs[0].Metrics.Set("zzz", 99)
	if !sameRecord(recs[1], want) {
		t.Errorf("the second record changed:\n%+v\nwant\n%+v", recs[1], want)
	}
}

// TestTPSSecondsKept: a record read without its progress reports keeps
// the spread of their per-second TPS, bit for bit, the seconds without
// a positive TPS (a stall, or an edited line's negative) left out; a
// record with no such second has none, with or without its reports.
func TestTPSSecondsKept(t *testing.T) {
	var b strings.Builder
	tps := [][]float64{{1000, 0, 1010.5, -3, 990.25, 1e-300}, {0, 0}, {500}, nil}
	for i, secs := range tps {
		r := results.Record{Cell: fmt.Sprint("c", i), Commit: "base", Status: results.StatusOK}
		for j, x := range secs {
			r.Progress = append(r.Progress, results.Progress{T: float64(j + 1), TPS: x})
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(string(data) + "\n")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.CellsFile), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	with, _, err := results.ReadRecords(dir)
	if err != nil || len(with) != len(tps) {
		t.Fatal(len(with), err)
	}
	without, _, err := results.ReadRecordsNoProgress(dir)
	if err != nil || len(without) != len(tps) {
		t.Fatal(len(without), err)
	}
	for i, secs := range tps {
		var logs []float64
		for _, x := range secs {
			if x > 0 {
				logs = append(logs, math.Log(x))
			}
		}
		var mean, ss, lag float64
		for _, l := range logs {
			mean += l / float64(len(logs))
		}
		for j, l := range logs {
			ss += (l - mean) * (l - mean)
			if j > 0 {
				lag += (logs[j-1] - mean) * (l - mean)
			}
		}
		want := results.LogSpread{N: len(logs), Mean: mean, SS: ss, Lag: lag}
		if got := with[i].TPSSeconds(); got != want {
			t.Errorf("%v: read with the reports %+v; want %+v", secs, got, want)
		}
		if got := without[i].TPSSeconds(); got != want || without[i].Progress != nil {
			t.Errorf("%v: read without the reports %+v (progress %v); want %+v", secs, got, without[i].Progress, want)
		}
	}
}

// TestDecodeMetricNamesShared: records whose metrics are those of the
// record before share its names, and every record has its own names
// and values whatever came before (fewer, more, others, out of order,
// a repeat); setting one record's metric changes no other.
func TestDecodeMetricNamesShared(t *testing.T) {
	metrics := []string{
		`{"a":1,"b":2,"tps":3}`, `{"a":4,"b":5,"tps":6}`, `{"a":7,"b":8}`, `{"a":9,"b":10,"tps":11,"zz":12}`,
		`{"b":13,"a":14}`, `{"a":15,"b":16,"tps":17}`, `{"a":18,"b":null,"tps":19,"b":20}`, `{}`, `{"a":21,"b":22,"tps":23}`,
	}
	var b strings.Builder
	for i, m := range metrics {
		fmt.Fprintf(&b, `{"cell":"c%d","metrics":%s}`+"\n", i, m)
	}
	recs, warnings, err := results.DecodeRecords(strings.NewReader(b.String()), "cells.jsonl")
	if err != nil || len(warnings) != 0 || len(recs) != len(metrics) {
		t.Fatalf("%d records, %q, %v", len(recs), warnings, err)
	}
	for i, m := range metrics {
		var want map[string]float64
		if err := json.Unmarshal([]byte(strings.ReplaceAll(m, "null", "0")), &want); err != nil {
			t.Fatal(err)
		}
		if got := recs[i].Metrics.Map(); !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Errorf("record %d (%s): %v", i, m, got)
		}
	}
	if &recs[0].Metrics.Names()[0] != &recs[1].Metrics.Names()[0] {
		t.Error("records 0 and 1 have the same metrics and do not share their names")
	}
	recs[0].Metrics.Set("aa", 99)
	recs[1].Metrics.Set("tps", 99)
	if recs[5].Metrics.Value("tps") != 17 || recs[8].Metrics.Value("tps") != 23 || slices.Contains(recs[1].Metrics.Names(), "aa") {
		t.Errorf("setting one record's metric changed another's: %v %v %v", recs[1].Metrics, recs[5].Metrics, recs[8].Metrics)
	}
}
