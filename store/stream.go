package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// source is a results directory as an import reads it: the plan first,
// then cells.jsonl's records block by block as they decode, so that the
// inserts start on the first while the rest decode (reading 100 000
// cells was a second of wall time before the first insert).
type source struct {
	dir, abs string
	// planText is plan.json as written, stored whole.
	planText []byte
	plan     *results.Plan
	shardID  string
	chunks   *chunks
	// read is closed when cells.jsonl is read; then recs (every line
	// that decoded, a cell twice as often as it is there), warnings and
	// readErr are set.
	read     chan struct{}
	recs     []results.Record
	warnings []string
	readErr  error
}

// openSource reads dir's plan while its records start decoding.
func openSource(dir string) (*source, error) {
	src := &source{dir: dir, chunks: newChunks(), read: make(chan struct{})}
	var err error
	if src.abs, err = filepath.Abs(dir); err != nil {
		return nil, exitcode.Failure(err)
	}
	go func() {
		defer close(src.read)
		if readWhole {
			src.recs, src.warnings, src.readErr = results.ReadRecords(dir)
			src.chunks.put(src.recs)
		} else {
			src.recs, src.warnings, src.readErr = results.ReadRecordsEach(dir, src.chunks.put)
		}
		src.chunks.end()
	}()
	path := filepath.Join(dir, results.PlanFile)
	if src.planText, err = os.ReadFile(path); err != nil {
		// ReadPlan's error says what is wrong with the directory.
		if _, perr := results.ReadPlan(dir); perr != nil {
			err = perr
		}
		<-src.read
		return nil, err
	}
	if src.plan, err = results.DecodePlan(src.planText, path); err != nil {
		<-src.read
		return nil, err
	}
	src.shardID = src.plan.Shard
	if src.shardID == "" {
		src.shardID = "1/1"
	}
	return src, nil
}

// records waits for cells.jsonl to be read, and says whether it was.
func (src *source) records() error {
	<-src.read
	if src.readErr != nil {
		return exitcode.Failure(src.readErr)
	}
	return nil
}

// chunks are cells.jsonl's records in the blocks they decode in, queued
// for the goroutine that makes the cells' rows. put never waits:
// decoding waits for it.
type chunks struct {
	mu    sync.Mutex
	queue [][]results.Record
	ended bool
	ready chan struct{} // a block or the end has come
}

func newChunks() *chunks { return &chunks{ready: make(chan struct{}, 1)} }

func (c *chunks) put(recs []results.Record) {
	c.mu.Lock()
	c.queue = append(c.queue, recs)
	c.mu.Unlock()
	c.signal()
}

func (c *chunks) end() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
	c.signal()
}

func (c *chunks) signal() {
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// next returns the next block, in order; ok is false at the end, or
// when done is closed first.
func (c *chunks) next(done <-chan struct{}) (recs []results.Record, ok bool) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			recs = c.queue[0]
			c.queue[0] = nil
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return recs, true
		}
		ended := c.ended
		c.mu.Unlock()
		if ended {
			return nil, false
		}
		select {
		case <-c.ready:
		case <-done:
			return nil, false
		}
	}
}

// readWhole makes an import read every record before it stores the
// first, as it did before (tests compare the two).
var readWhole = false

// sortRun is how many new cells SQLite's rows are made of in name order
// at a time: SQLite fills the cells' unique index cheaper in its order,
// at its end (the whole import in the order the cells ran cost it 0.7
// CPU-s more at 100 000 cells), but the whole sorted waits for the last
// record. Sorted runs as they come did not pay: block by block (~1 200
// cells) or 8 192 at a time, 4.4 CPU-s against 3.9–4.2 sorted whole
// (BenchmarkImport100k, 3 rounds alternated at load 9–18), as each run
// inserts all over the index. So SQLite starts inserting when the last
// record is read; PostgreSQL, whose insert sorts, copies them as they
// come. Nor did an incremental quicksort, which hands SQLite the first
// rows after 2n comparisons instead of after the whole sort: the first
// insert came 0.02–0.06 s after the last record instead of 0.08–0.18 s,
// but the import ended no sooner (1.52–2.12 s, 2.59–3.41 CPU-s against
// 1.65–1.92 s, 2.70–3.25 CPU-s, 4 rounds alternated at load 2.2): after
// the last record, the inserts, the analysis and the rows keep both
// cores busy.
var sortRun = 1 << 30

// batch is the args of rows of cellsColumns and the configurations that
// they are the first to name (nil when none): stored before them.
type batch struct {
	args    []any
	configs map[string]results.Config
}

// pending is a new cell waiting for its row.
type pending struct {
	rec *results.Record
	cfg string // its configuration's id
}

// batches makes the rows of the cells next hands over (each once, the
// first record of it; none of present), run of them at a time in name
// order (0: as they come, unsorted), on a goroutine of its own while the caller stores the
// batch before: making a row (its metrics text, detail, artifacts,
// time) was a fifth of a SQLite insert's CPU. A batch has up to size
// rows of width values; the caller gives each back (release) when it is
// done with it, and calls stop when it stops reading, at the end or on
// an error. After out is closed (and not stopped), w.seen holds every
// cell.
func (w *cellRows) batches(next func(done <-chan struct{}) ([]results.Record, bool), present map[string]int64, run, width, size int) (out <-chan *batch, release func(*batch), stop func()) {
	ch := make(chan *batch, 1)
	// Three buffers: the one being made, the one in ch, the one stored;
	// free has room for all of them, so that release never waits.
	free := make(chan *batch, 3)
	free <- &batch{args: make([]any, 0, width*size)}
	free <- &batch{args: make([]any, 0, width*size)}
	done := make(chan struct{})
	w.seen = map[string]bool{}
	go func() {
		defer close(ch)
		b := &batch{args: make([]any, 0, width*size)}
		var todo []pending
		// send hands b over, ok false when stopped.
		send := func() bool {
			select {
			case ch <- b:
			case <-done:
				return false
			}
			select {
			case b = <-free:
				b.args, b.configs = b.args[:0], nil
				return true
			case <-done:
				return false
			}
		}
		// rows makes todo's rows in name order.
		rows := func() bool {
			if run > 0 {
				slices.SortFunc(todo, func(a, b pending) int { return strings.Compare(a.rec.Cell, b.rec.Cell) })
			}
			for _, p := range todo {
				if !w.known[p.cfg] {
					w.known[p.cfg] = true
					if b.configs == nil {
						b.configs = map[string]results.Config{}
					}
					b.configs[p.cfg] = p.rec.Config
				}
				if b.args = w.args(b.args, p.rec, p.cfg); len(b.args) == width*size && !send() {
					return false
				}
			}
			clear(todo)
			todo = todo[:0]
			return true
		}
		for {
			recs, ok := next(done)
			if !ok {
				break
			}
			if todo = w.pick(todo, recs, present); len(todo) >= run && !rows() {
				return
			}
		}
		select {
		case <-done:
			return
		default:
		}
		if rows() && len(b.args) > 0 {
			select {
			case ch <- b:
			case <-done:
			}
		}
	}()
	return ch, func(b *batch) { free <- b }, func() { close(done) }
}

// pick appends to todo the records of recs whose cells are new: not
// seen before (the first record of a cell is the one) nor present.
func (w *cellRows) pick(todo []pending, recs []results.Record, present map[string]int64) []pending {
	for i := range recs {
		r := &recs[i]
		if w.seen[r.Cell] {
			if w.dup == "" {
				w.dup = r.Cell
			}
			continue
		}
		w.seen[r.Cell] = true
		if _, ok := present[r.Cell]; ok {
			continue
		}
		// A configuration's id once per distinct configuration (in the
		// order the cells ran, mostly adjacent), not per cell.
		if w.prev == nil || !sameConfig(r, w.prev) {
			w.prev, w.prevID = r, r.Config.ID()
		}
		todo = append(todo, pending{r, w.prevID})
	}
	return todo
}
