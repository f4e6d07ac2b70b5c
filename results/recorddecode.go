package results

// How a record and a plan decode into their types: with the library's
// own arshalers, but for the configuration's maps, shared while they are
// the same bytes (mapCache), and the progress reports a summary reads
// without (progressField). Their fields are found before the Record's
// (the Cell's) of the same JSON name, by Go's rule and the library's: the
// shallower field wins. They decode in their place, then move in.
// What each saves is in decode.go's opening comment and the commits
// that brought it.

import (
	"bytes"
	"errors"
	"maps"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// lineDecoder decodes lines of cells.jsonl, one after another (one
// goroutine's): what it decoded last is the likeliest next.
type lineDecoder struct {
	// noProgress leaves the records' progress reports out
	// (DropProgress): they decode into the line's buffer.
	noProgress bool
	maps       configMaps
	progress   []Progress
	lr         lineRecord
}

func newLineDecoder(noProgress bool) *lineDecoder {
	return &lineDecoder{noProgress: noProgress}
}

// lineRecord is a Record as a line decodes.
type lineRecord struct {
	*Record
	configFields
	Progress progressField `json:"progress"`
}

// configFields are a configuration's maps as they decode: their JSON
// names are Config's (TestConfigFieldsShadow).
type configFields struct {
	Settings sharedMap `json:"settings"`
	Vars     sharedMap `json:"vars"`
	Extra    sharedMap `json:"axes"`
}

// configMaps are the caches of configFields, one a field: in a line they
// alternate.
type configMaps struct{ settings, vars, extra mapCache }

// reset readies f for a value, decoding through c.
func (f *configFields) reset(c *configMaps) {
	f.Settings = sharedMap{cache: &c.settings}
	f.Vars = sharedMap{cache: &c.vars}
	f.Extra = sharedMap{cache: &c.extra}
}

// moveTo sets c's maps to f's.
func (f *configFields) moveTo(c *Config) {
	c.Settings, c.Vars, c.Extra = f.Settings.m, f.Vars.m, f.Extra.m
}

// decode decodes one line of cells.jsonl into rec, a zero Record; a
// record must name its cell.
func (d *lineDecoder) decode(line []byte, rec *Record) error {
	lr := &d.lr
	lr.Record = rec
	lr.reset(&d.maps)
	lr.Progress = progressField{drop: d.noProgress, buf: d.progress}
	err := jsonv2.Unmarshal(line, lr, v1Semantics)
	// A null line zeroes lr: rec is left as it was, and has no cell.
	lr.moveTo(&rec.Config)
	rec.Progress = lr.Progress.reports
	if d.noProgress {
		if lr.Progress.buf != nil {
			d.progress = lr.Progress.buf[:0]
		}
		rec.DropProgress() // the reports are d's
	}
	lr.Record = nil
	if err != nil {
		return err
	}
	if rec.Cell == "" {
		return errors.New("no cell id")
	}
	return nil
}

// progressField is a record's progress reports as they decode: into the
// heap, or, to drop once their TPSSeconds are taken, into buf, the
// line decoder's, reused line after line. Copying them to the heap, to
// drop, was 0.03 CPU-s at 10⁵ cells and 17 MB for the collector.
type progressField struct {
	drop    bool
	reports ProgressReports
	buf     []Progress
}

// UnmarshalJSONFrom decodes the reports as ProgressReports does: every
// field, each checked. A repeated "progress" replaces the first's
// reports, as json.Unmarshal's do.
func (f *progressField) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if !f.drop {
		return jsonv2.UnmarshalDecode(dec, &f.reports)
	}
	f.buf = f.buf[:0] // f's, not a variable of its own: on the heap
	err := jsonv2.UnmarshalDecode(dec, &f.buf)
	f.reports = f.buf
	return err
}

// sharedMap is a map[string]string as it decodes through a cache.
type sharedMap struct {
	m     map[string]string
	cache *mapCache
}

// UnmarshalJSONFrom decodes the map through its cache.
func (s *sharedMap) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	return s.cache.unmarshal(dec, &s.m)
}

// mapCache is the last JSON object decoded into a fresh map, as written
// and as decoded: a run's records and plan cells come a configuration at
// a time, so the next object is most often the same bytes, and then it
// is that map, shared (read, never written), not a new one. Decoding
// each and sharing it after (maps.Equal) was 0.07 CPU-s at 10⁵ cells and
// 200 000 maps for the collector.
type mapCache struct {
	raw []byte // nil: none yet
	m   map[string]string
}

// unmarshal decodes the next value into *m as json.Unmarshal does: the
// cached map when the bytes are the cached ones and *m is nil, else a
// map of its own (a repeated name merges into a copy of the first's).
func (c *mapCache) unmarshal(dec *jsontext.Decoder, m *map[string]string) error {
	val, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if *m == nil && c.raw != nil && bytes.Equal(val, c.raw) {
		*m = c.m
		return nil
	}
	fresh := maps.Clone(*m)
	if err := jsonv2.Unmarshal(val, &fresh, v1Semantics); err != nil {
		return err
	}
	if *m == nil {
		c.raw, c.m = append(c.raw[:0], val...), fresh
	}
	*m = fresh
	return nil
}

// planDecoding is a Plan as it decodes: its cells through cellList.
type planDecoding struct {
	*Plan
	Cells cellList `json:"cells"`
}

// cellList is a plan's cells as they decode: each a cellDecoding, its
// maps through the list's caches.
type cellList struct {
	cells []Cell
	maps  configMaps
	size  int64 // of the whole plan, when known: the cells' room (grow)
}

// cellDecoding is a Cell as it decodes.
type cellDecoding struct {
	*Cell
	configFields
}

// UnmarshalJSONFrom decodes an array of cells as json.Unmarshal does
// (anything else, null or not an array, by the library's own rule).
func (l *cellList) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() != '[' {
		return jsonv2.UnmarshalDecode(dec, &l.cells)
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	cells := l.cells[:0] // a repeated "cells" replaces the first's
	var cd cellDecoding
	start := dec.InputOffset()
	for dec.PeekKind() != ']' {
		if len(cells) == cap(cells) && len(cells) > 0 {
			cells = l.grow(cells, start, dec.InputOffset())
		}
		cells = append(cells, Cell{})
		cd.Cell = &cells[len(cells)-1]
		cd.reset(&l.maps)
		err := jsonv2.UnmarshalDecode(dec, &cd)
		cd.moveTo(&cells[len(cells)-1].Config) // a null cell zeroes cd
		if err != nil {
			return err
		}
	}
	l.cells = cells
	_, err := dec.ReadToken()
	return err
}

// grow makes room in cells, full, decoded from offset start to end, for
// as many as the plan holds of their mean size, 5 % more (once, most
// often: the first cell, shorter than most, predicts more): growing them
// by doubling was 0.04 CPU-s at 10⁵ cells, a third of decoding them.
// Cells smaller than 64 bytes count 64 (one abtest writes is 90 or
// more): a hostile plan of tiny cells first gets no more room than that.
func (l *cellList) grow(cells []Cell, start, end int64) []Cell {
	per := max((end-start)/int64(len(cells)), 64)
	if n := (l.size-start)/per*21/20 + 1; l.size > 0 && n > int64(cap(cells)) {
		return append(make([]Cell, 0, n), cells...)
	}
	return cells
}

// decodePlan decodes a plan as json.Unmarshal does (v1Semantics). The
// cells of one configuration come together: their maps are one
// (mapCache), shared: read them, never write them.
func decodePlan(data []byte) (*Plan, error) {
	var p Plan
	pd := planDecoding{Plan: &p, Cells: cellList{size: int64(len(data))}}
	err := jsonv2.Unmarshal(data, &pd, v1Semantics)
	p.Cells = pd.Cells.cells
	if err != nil {
		return nil, err
	}
	return &p, nil
}
