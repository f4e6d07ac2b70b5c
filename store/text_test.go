package store_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/history"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/testing/storetest"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/store"
)

// TestRecordAndSeriesText: Record imports runs into the store a
// location names (the default one in the results directory), once per
// cell, one line each; the history table marks the expected and the
// unexpected change points.
func TestRecordAndSeriesText(t *testing.T) {
	ctx := context.Background()
	results := t.TempDir()
	loc := store.Location("", results)
	if loc != filepath.Join(results, store.DefaultFile) || store.Location("postgres://h/db", results) != "postgres://h/db" {
		t.Fatalf("Location = %s", loc)
	}
	dirs, err := storetest.Nights(t.TempDir(), 20, map[int]float64{10: -8})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := history.Record(ctx, loc, &out, dirs...); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "cells stored (0 already there)\n"); n != 20 {
		t.Errorf("%d runs stored, want 20:\n%s", n, out.String())
	}
	out.Reset()
	if err := history.Record(ctx, loc, &out, dirs[0]); err != nil || !strings.Contains(out.String(), " 0 cells stored (") {
		t.Errorf("again: %q, %v", out.String(), err)
	}
	s, err := store.Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ser, err := history.Trend(ctx, s, store.HistoryQuery{Metric: "tps", Config: "select1/c16"})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	ser.WriteText(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 22 || !strings.HasPrefix(lines[0], "# tps "+ser.Config+": 20 points, 1 change points (1 unexpected)") ||
		!strings.Contains(lines[12], "<- CHANGE -") || !strings.Contains(lines[12], text.Short(storetest.NightSHA(10))) {
		t.Errorf("table:\n%s", out.String())
	}
	if err := history.Record(ctx, "postgres://127.0.0.1:1/none?connect_timeout=2", &out, dirs[0]); err == nil || !strings.Contains(err.Error(), "the results are in "+dirs[0]) {
		t.Errorf("unreachable store: %v", err)
	}
}

// TestParseSince: ages in days or Go durations count back from now, a
// date is itself, anything else is exit 2.
func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":           {},
		"30d":        now.AddDate(0, 0, -30),
		"12h":        now.Add(-12 * time.Hour),
		"2025-01-31": time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC),
	} {
		if got, err := store.ParseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("%q: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"-3d", "yesterday", "-1h"} {
		if _, err := store.ParseSince(bad, now); exitcode.Code(err) != exitcode.Usage {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestImportAllAndAnnotateRef: ImportAll says one line per directory
// (nothing with nil writers); AnnotateRef resolves a sha prefix and a
// configuration prefix, and the annotation reads as one line.
func TestImportAllAndAnnotateRef(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Location("", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dirs, err := storetest.Nights(t.TempDir(), 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	all, err := history.ImportAll(ctx, s, dirs[:2], &out, &out)
	if err != nil || len(all) != 2 || strings.Count(out.String(), "cells stored, 0 already there") != 2 {
		t.Fatalf("ImportAll: %+v, %v\n%s", all, err, out.String())
	}
	out.Reset()
	if all, err := history.ImportAll(ctx, s, dirs, nil, nil); err != nil || len(all) != 3 || all[0].Present == 0 || out.Len() != 0 {
		t.Errorf("silent ImportAll: %+v, %v", all, err)
	}
	a, err := s.AnnotateRef(ctx, storetest.NightSHA(1)[:9], "tps", "select1/c16", "expected: faster")
	if err != nil {
		t.Fatal(err)
	}
	if want := "annotated " + storetest.NightSHA(1) + " tps in " + storetest.Config.ID() + ": expected: faster"; a.String() != want {
		t.Errorf("%q, want %q", a.String(), want)
	}
	if _, err := s.AnnotateRef(ctx, "ffffffffff", "tps", "", "x"); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("unknown commit: %v", err)
	}
}
