package workload

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/results"
)

// marker tags abtest's own statements so that the sampler and probes can
// leave them out of what they count.
const marker = "/* abtest */"

// The sampler's output types are part of the results schema.
type (
	Sample       = results.Sample
	Dist         = results.Dist
	WaitTop      = results.WaitTop
	Final        = results.Final
	HistogramBin = results.HistogramBin
	Waits        = results.Waits
)

var histBins = []struct {
	label  string
	lo, hi int64
}{{"1", 1, 1}, {"2-5", 2, 5}, {"6-20", 6, 20}, {"21-100", 21, 100}, {"101-1k", 101, 1000}, {">1k", 1001, math.MaxInt64}}

// sampler polls the server on one persistent connection: wait events
// every waitEvery, pg_stat_statements every every. It never spawns a
// process and sends two small queries per tick, so that it does not
// disturb what it measures (the bash harness forked psql every second).
type sampler struct {
	conn      *pgx.Conn
	w         Workload
	every     time.Duration
	waitEvery time.Duration
	hasSince  bool // pg_stat_statements.stats_since (PostgreSQL ≥ 17)
	hasInfo   bool // pg_stat_statements_info (PostgreSQL ≥ 14)
	out       io.Writer
	// tps is the fallback when pg_stat_statements was not read at the
	// start: pgbench's last -P report (0 until its first).
	tps   func() float64
	start time.Time
	// firstSeen is when each entry was first seen (PostgreSQL < 17);
	// seen is the map the next sample fills, then swaps with it.
	firstSeen, seen map[int64]time.Time
	mu              sync.Mutex
	samples         []Sample
	waits           Waits
	sinceLast       map[string]int
	err             error
	dbName          string
	// foreign collects client backends of the database that are not
	// pgbench's: pid → application_name.
	foreign map[int32]string
	// deallocBase is pg_stat_statements_info.dealloc when the run began:
	// deallocs are counted over the run, not since the last reset.
	deallocBase int64
	// calls is each entry's calls at the last reading, at callsAt; a
	// sample's TPS is the statements run since over the time between,
	// divided by perRun, the statements one script execution runs.
	calls   map[int64]int64
	callsAt time.Time
	perRun  int
	// seesXmin: the role sees every session's xmin (seesXmin); then
	// xminMax is the oldest xmin's largest age read so far.
	seesXmin bool
	xminMax  int64
	// queries counts the queries run sends (the cost of measuring).
	queries int
}

// run samples until stop is closed. Queries run under ctx, not under stop:
// pgx closes a connection whose query is cancelled, and the connection is
// still needed for the probe afterwards.
func (s *sampler) run(ctx context.Context, stop <-chan struct{}) {
	s.firstSeen, s.seen = map[int64]time.Time{}, map[int64]time.Time{}
	s.waits.ByEvent = map[string]int{}
	s.sinceLast = map[string]int{}
	if s.foreign == nil {
		s.foreign = map[int32]string{}
	}
	// The baseline (read before pgbench started) is the first reading:
	// every sample's TPS, the first included, is counted from the one
	// before, and the first from the start.
	s.perRun = statementsPerRun(s.w.Script)
	s.callsAt = s.start
	wt := time.NewTicker(s.waitEvery)
	st := time.NewTicker(s.every)
	defer wt.Stop()
	defer st.Stop()
	for {
		select {
		case <-stop:
			s.waits.Seconds = time.Since(s.start).Seconds()
			return
		case <-ctx.Done():
			s.waits.Seconds = time.Since(s.start).Seconds()
			return
		case <-wt.C:
			s.queries++
			if err := s.sampleWaits(ctx); err != nil && ctx.Err() == nil {
				s.setErr(err)
			}
		case <-st.C:
			s.queries += 2 // pg_stat_statements and its info
			if s.seesXmin {
				s.queries++
			}
			smp, err := s.samplePGSS(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.setErr(err)
				}
				continue
			}
			s.mu.Lock()
			s.samples = append(s.samples, smp)
			s.mu.Unlock()
			if s.out != nil {
				fmt.Fprintf(s.out, "  %s\n", smp.Line())
			}
		}
	}
}

func (s *sampler) setErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

const waitsSQL = marker + ` SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), state = 'active', pid, application_name
FROM pg_stat_activity
WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`

func (s *sampler) sampleWaits(ctx context.Context) error {
	rows, err := s.conn.Query(ctx, waitsSQL, s.dbName)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits.Ticks++
	for rows.Next() {
		var ev, app string
		var active bool
		var pid int32
		if err := rows.Scan(&ev, &active, &pid, &app); err != nil {
			return err
		}
		if app == conditionApp {
			continue
		}
		if app != "pgbench" {
			s.foreign[pid] = app
			continue
		}
		// An idle backend reports ClientRead; that is the client's
		// time, not the database's.
		if !active {
			s.waits.Idle++
			continue
		}
		s.waits.Active++
		s.waits.ByEvent[ev]++
		s.sinceLast[ev]++
	}
	return rows.Err()
}

// pgssSQL reads every entry of pg_stat_statements in the database
// except abtest's own, as one row of arrays: queryid, calls, class (1
// hot, 2 cold, 0 other) and, where the server has stats_since, the
// seconds since it. One row, not a row an entry: under churn the view
// holds thousands, and a row each cost the server and abtest more than
// the arrays (the observer's cost, issue 27). With top > 0 the row also
// holds the top entries by total time (topStatements); with kinds, the
// probe's calls and rows by statement kind (KindCounters), so that the
// readings around the window read the view once each: each reading of
// 5 000 entries costs the server 12–15 ms.
func (s *sampler) pgssSQL(top int, kinds bool) string {
	class := "0"
	if s.w.HotPrefix != "" || s.w.ColdPrefix != "" {
		class = "CASE"
		if s.w.HotPrefix != "" {
			class += fmt.Sprintf(" WHEN query LIKE %s THEN 1", likePrefix(s.w.HotPrefix))
		}
		if s.w.ColdPrefix != "" {
			class += fmt.Sprintf(" WHEN query LIKE %s THEN 2", likePrefix(s.w.ColdPrefix))
		}
		class += " ELSE 0 END"
	}
	ages, age := "'{}'::float8[]", ""
	if s.hasSince {
		ages, age = "coalesce(array_agg(age), '{}')", ", extract(epoch FROM now() - stats_since)::float8 AS age"
	}
	var topCols, rank string
	if top > 0 {
		// FILTER comes before an aggregate's arguments are computed:
		// only the top entries' texts are tidied.
		agg := func(col string) string {
			return fmt.Sprintf(", coalesce(array_agg(%s ORDER BY rank) FILTER (WHERE rank <= %d), '{}')", col, top)
		}
		topCols = agg(`left(regexp_replace(query, '\s+', ' ', 'g'), 120)`) + agg("calls") + agg("mean_exec_time") + agg("max_exec_time")
		rank = ",\n    query, mean_exec_time, max_exec_time, row_number() OVER (ORDER BY total_exec_time DESC) AS rank"
	}
	// The kinds are summed by abtest from each entry's rows and the
	// head of its text: a regular expression for each entry's first
	// word cost the server 2.5 ms a reading of 1 000 entries.
	var kindCols, kind string
	if kinds {
		kind = fmt.Sprintf(", rows, coalesce(left(ltrim(query), %d), '') AS head", kindHead)
		kindCols = ",\n  coalesce(array_agg(rows), '{}'), coalesce(array_agg(head), '{}')"
	}
	return fmt.Sprintf(`%s WITH e AS (SELECT queryid, calls, %s AS class%s%s%s
  FROM pg_stat_statements
  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND query NOT LIKE '%%/* abtest */%%')
SELECT coalesce(array_agg(queryid), '{}'), coalesce(array_agg(calls), '{}'), coalesce(array_agg(class), '{}'), %s%s%s
FROM e`, marker, class, age, rank, kind, ages, topCols, kindCols)
}

// kindHead is how much of a statement's text (after leading spaces)
// the probe reads for its kind: longer than any SQL command's first
// word.
const kindHead = 32

// kindOf is a statement's kind for the probe: the letters it begins
// with (after spaces, which head has lost), in upper case; OTHER when
// it begins with something else (a comment, a parenthesis).
func kindOf(head string) string {
	n := 0
	for n < len(head) && ('a' <= head[n] && head[n] <= 'z' || 'A' <= head[n] && head[n] <= 'Z') {
		n++
	}
	if n == 0 {
		return "OTHER"
	}
	return strings.ToUpper(head[:n])
}

func likePrefix(p string) string {
	p = strings.ReplaceAll(p, `\`, `\\`)
	p = strings.ReplaceAll(p, `_`, `\_`)
	p = strings.ReplaceAll(p, `%`, `\%`)
	return "'" + strings.ReplaceAll(p, "'", "''") + "%'"
}

type entry struct {
	id    int64
	calls int64
	class int
	age   float64
}

func (s *sampler) entries(ctx context.Context) ([]entry, error) {
	var r pgssRow
	if err := s.conn.QueryRow(ctx, s.pgssSQL(0, false)).Scan(&r.ids, &r.calls, &r.classes, &r.ages); err != nil {
		return nil, err
	}
	return r.entries(), nil
}

// baseline reads pg_stat_statements before the window: each entry's
// calls, from which the first sample's TPS is counted, and the probe's
// sums by kind, in one reading. Nothing but pgbench runs counted
// statements between it and pgbench's start (the warm-up's pgbench has
// exited; another backend is a foreign one and voids the probe), so
// the calls are those at the start.
//
// With last (the final reading of the run before, Spec.Continues) and
// no eviction since (pg_stat_statements_info says: PostgreSQL ≥ 14),
// last is the baseline and the view is not read.
func (s *sampler) baseline(ctx context.Context, last *pgssReading) (map[string]KindCounters, error) {
	if last != nil && s.hasInfo && last.dealloc == s.deallocBase {
		s.calls = map[int64]int64{}
		s.noteCalls(last.entries)
		return maps.Clone(last.kinds), nil
	}
	var r pgssRow
	if err := s.conn.QueryRow(ctx, s.pgssSQL(0, true)).Scan(&r.ids, &r.calls, &r.classes, &r.ages,
		&r.rows, &r.heads); err != nil {
		return nil, err
	}
	s.calls = map[int64]int64{}
	s.noteCalls(r.entries())
	return r.kindCounters(), nil
}

// pgssRow is pgssSQL's row.
type pgssRow struct {
	ids, calls []int64
	classes    []int32
	ages       []float64 // empty before PostgreSQL 17
	// the top entries by total time, when asked for
	top             []string
	topCalls        []int64
	topMean, topMax []float64
	// each entry's rows and the head of its text, for the sums by
	// kind, when asked for
	rows  []int64
	heads []string
}

// kindCounters sums the entries' calls and rows by kind (kindOf).
func (r *pgssRow) kindCounters() map[string]KindCounters {
	m := map[string]KindCounters{}
	for i, h := range r.heads {
		k := kindOf(h)
		c := m[k]
		c.Calls += r.calls[i]
		c.Rows += r.rows[i]
		m[k] = c
	}
	return m
}

func (r *pgssRow) entries() []entry {
	es := make([]entry, len(r.ids))
	for i := range es {
		es[i] = entry{id: r.ids[i], calls: r.calls[i], class: int(r.classes[i]), age: -1}
		if len(r.ages) == len(es) {
			es[i].age = r.ages[i]
		}
	}
	return es
}

func (r *pgssRow) statements() []Statement {
	var out []Statement
	if len(r.top) > 0 {
		out = make([]Statement, len(r.top))
	}
	for i := range out {
		out[i] = Statement{Query: r.top[i], Calls: r.topCalls[i], MeanMS: r.topMean[i], MaxMS: r.topMax[i]}
	}
	return out
}

func (s *sampler) dealloc(ctx context.Context) (int64, error) {
	if !s.hasInfo {
		return 0, nil
	}
	var n int64
	err := s.conn.QueryRow(ctx, marker+" SELECT dealloc FROM pg_stat_statements_info").Scan(&n)
	return n - s.deallocBase, err
}

// noteCalls keeps each entry's calls for the next sample's TPS. The map
// is refilled, not made anew: under churn it holds thousands of entries
// (the observer's cost, issue 27).
func (s *sampler) noteCalls(es []entry) {
	clear(s.calls)
	for _, e := range es {
		s.calls[e.id] = e.calls
	}
}

// sampleTPS is the script executions per second since the last
// reading, from pg_stat_statements' calls, which a backend adds at the
// end of each statement (pgbench's -P lines come every few seconds,
// none at all in a 5 s cell with -P 5; pg_stat_database's xact_commit is
// flushed by busy backends in lumps, seconds apart, on PostgreSQL ≥ 15).
// An entry evicted between two readings takes the calls it had since
// the first with it: under constant eviction (churn) the rate reads
// somewhat low; pgbench's own TPS is the metric.
func (s *sampler) sampleTPS(es []entry, now time.Time) float64 {
	if s.calls == nil {
		if s.tps != nil {
			return s.tps()
		}
		return 0
	}
	var stmts int64
	for _, e := range es {
		prev, ok := s.calls[e.id]
		if !ok || e.calls < prev {
			prev = 0
		}
		stmts += e.calls - prev
	}
	dt := now.Sub(s.callsAt).Seconds()
	s.noteCalls(es)
	s.callsAt = now
	if dt <= 0 {
		return 0
	}
	return float64(stmts) / float64(max(s.perRun, 1)) / dt
}

// statementsPerRun counts the SQL statements one execution of a
// pgbench script runs: the statements outside \if blocks and those of
// an \if's first branch (the built-in scripts' branches run one each).
func statementsPerRun(script string) int {
	n, depth, skip := 0, 0, 0 // skip: the depth whose other branches are skipped
	pending := false
	for _, line := range strings.Split(script, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		if strings.HasPrefix(t, `\`) {
			switch f := strings.Fields(t); f[0] {
			case `\if`:
				depth++
			case `\elif`, `\else`:
				if skip == 0 {
					skip = depth
				}
			case `\endif`:
				if skip == depth {
					skip = 0
				}
				depth--
			}
			continue
		}
		if skip != 0 {
			continue
		}
		k := semicolons(t)
		n += k
		pending = !strings.HasSuffix(t, ";")
	}
	if pending {
		n++
	}
	return max(n, 1)
}

// semicolons counts the statement terminators of a line of SQL, outside
// quotes and comments.
func semicolons(line string) int {
	n := 0
	var quote rune
	prev := rune(0)
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '-' && prev == '-':
			return n
		case r == ';':
			n++
		}
		prev = r
	}
	return n
}

func (s *sampler) samplePGSS(ctx context.Context) (Sample, error) {
	es, err := s.entries(ctx)
	if err != nil {
		return Sample{}, err
	}
	d, err := s.dealloc(ctx)
	if err != nil {
		return Sample{}, err
	}
	now := time.Now()
	smp := Sample{T: math.Round(now.Sub(s.start).Seconds()), Entries: len(es), Dealloc: d, HasClass: s.w.HotPrefix != ""}
	smp.TPS = s.sampleTPS(es, now)
	if s.seesXmin {
		if smp.XminAge, err = s.readXmin(ctx); err != nil {
			return Sample{}, err
		}
	}
	ages := make([]float64, 0, len(es))
	calls := make([]float64, 0, len(es))
	seen := s.seen
	clear(seen)
	ids := make([]int64, 0, len(es))
	for _, e := range es {
		switch e.class {
		case 1:
			smp.Hot++
		case 2:
			smp.Cold++
		}
		calls = append(calls, float64(e.calls))
		ids = append(ids, e.id)
		if e.age >= 0 {
			ages = append(ages, e.age)
			continue
		}
		// Before PostgreSQL 17 there is no stats_since: an entry's age
		// is the time since the sampler first saw it (or since the
		// start, for entries present at the first sample).
		first, ok := s.firstSeen[e.id]
		if !ok {
			first = now
			if len(s.samples) == 0 {
				first = s.start
			}
		}
		seen[e.id] = first
		ages = append(ages, now.Sub(first).Seconds())
	}
	if len(seen) > 0 {
		s.firstSeen, s.seen = seen, s.firstSeen
	}
	smp.Age = dist(ages)
	smp.Calls = dist(calls)
	smp.FP = fingerprint(ids)
	s.mu.Lock()
	for ev, n := range s.sinceLast {
		smp.Waits = append(smp.Waits, WaitTop{Event: ev, N: n})
	}
	s.sinceLast = map[string]int{}
	s.mu.Unlock()
	sort.Slice(smp.Waits, func(i, j int) bool {
		if smp.Waits[i].N != smp.Waits[j].N {
			return smp.Waits[i].N > smp.Waits[j].N
		}
		return smp.Waits[i].Event < smp.Waits[j].Event
	})
	if len(smp.Waits) > 3 {
		smp.Waits = smp.Waits[:3]
	}
	return smp, nil
}

// readXmin reads the oldest xmin's age and keeps the largest.
func (s *sampler) readXmin(ctx context.Context) (int64, error) {
	age, err := xminAge(ctx, s.conn)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.xminMax = max(s.xminMax, age)
	s.mu.Unlock()
	return age, nil
}

// topStatements is how many entries final lists by total time.
const topStatements = 10

// final reads pg_stat_statements once more at the end: the entries,
// the top statements by total time and the probe's sums by kind, in one
// reading.
func (s *sampler) final(ctx context.Context) (Final, []Statement, *pgssReading, error) {
	var r pgssRow
	if err := s.conn.QueryRow(ctx, s.pgssSQL(topStatements, true)).Scan(&r.ids, &r.calls, &r.classes, &r.ages,
		&r.top, &r.topCalls, &r.topMean, &r.topMax, &r.rows, &r.heads); err != nil {
		return Final{}, nil, nil, err
	}
	es := r.entries()
	d, err := s.dealloc(ctx)
	if err != nil {
		return Final{}, nil, nil, err
	}
	f := Final{Entries: len(es), Deallocs: d, DeallocsUnknown: !s.hasInfo, HasClass: s.w.HotPrefix != ""}
	counts := make([]int, len(histBins))
	for _, e := range es {
		switch e.class {
		case 1:
			f.Hot++
			f.HotCalls += e.calls
		case 2:
			f.Cold++
			f.ColdCalls += e.calls
		}
		for i, b := range histBins {
			if e.calls >= b.lo && e.calls <= b.hi {
				counts[i]++
			}
		}
	}
	for i, b := range histBins {
		if counts[i] > 0 {
			f.Histogram = append(f.Histogram, HistogramBin{Label: b.label, N: counts[i]})
		}
	}
	return f, r.statements(), &pgssReading{entries: es, kinds: r.kindCounters(), dealloc: s.deallocBase + d}, nil
}

func dist(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	d := Dist{Min: xs[0], Max: xs[0]}
	var sum float64
	for _, x := range xs {
		d.Min = math.Min(d.Min, x)
		d.Max = math.Max(d.Max, x)
		sum += x
	}
	d.Avg = sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - d.Avg) * (x - d.Avg)
	}
	d.SD = math.Sqrt(ss / float64(len(xs)))
	return d
}

// fingerprint is 8 hex digits of a hash of the sorted entry set: it
// changes when entries are evicted or admitted.
func fingerprint(ids []int64) string {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	h := sha256.New()
	var buf [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(buf[:], uint64(id))
		h.Write(buf[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:8]
}
