package workload

import (
	"bufio"
	"cmp"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// Progress is one pgbench -P line; part of the results schema.
type Progress = results.Progress

var (
	progressRE = regexp.MustCompile(`^progress: ([0-9.]+) s, ([0-9.]+) tps, lat ([0-9.]+) ms stddev ([0-9.]+|NaN)`)
	lagRE      = regexp.MustCompile(`, lag ([0-9.]+) ms`)
	failedRE   = regexp.MustCompile(`, ([0-9]+) failed`)
	skippedRE  = regexp.MustCompile(`, ([0-9]+) skipped`)
)

// ParseProgress parses one progress line; ok is false for anything else.
func ParseProgress(line string) (Progress, bool) {
	line = strings.TrimSpace(line)
	m := progressRE.FindStringSubmatch(line)
	if m == nil {
		return Progress{}, false
	}
	var p Progress
	var err error
	if p.T, err = strconv.ParseFloat(m[1], 64); err != nil {
		return Progress{}, false
	}
	if p.TPS, err = strconv.ParseFloat(m[2], 64); err != nil {
		return Progress{}, false
	}
	if p.LatMS, err = strconv.ParseFloat(m[3], 64); err != nil {
		return Progress{}, false
	}
	if m[4] != "NaN" {
		p.StddevMS, _ = strconv.ParseFloat(m[4], 64)
	}
	if l := lagRE.FindStringSubmatch(line); l != nil {
		p.LagMS, _ = strconv.ParseFloat(l[1], 64)
		p.HasLag = true
	}
	if f := failedRE.FindStringSubmatch(line); f != nil {
		p.Failed, _ = strconv.ParseInt(f[1], 10, 64)
	}
	if s := skippedRE.FindStringSubmatch(line); s != nil {
		p.Skipped, _ = strconv.ParseInt(s[1], 10, 64)
	}
	if math.IsInf(p.TPS, 0) || math.IsNaN(p.TPS) || p.T < 0 {
		return Progress{}, false
	}
	return p, true
}

// Summary is pgbench's final report.
type Summary struct {
	Clients      int     `json:"clients"`
	Threads      int     `json:"threads"`
	Mode         string  `json:"query_mode"`
	Processed    int64   `json:"processed"`
	Failed       int64   `json:"failed"`
	Skipped      int64   `json:"skipped"`
	LatencyAvgMS float64 `json:"latency_avg_ms"`
	LatencySDMS  float64 `json:"latency_stddev_ms"`
	LagAvgMS     float64 `json:"lag_avg_ms,omitempty"`
	LagMaxMS     float64 `json:"lag_max_ms,omitempty"`
	ConnectMS    float64 `json:"initial_connection_ms"`
	TPS          float64 `json:"tps"`
	// Complete is set when the tps line was seen: a truncated report
	// has no TPS to trust.
	Complete bool `json:"complete"`
}

var (
	tpsRE       = regexp.MustCompile(`^tps = ([0-9.]+) \((without initial connection time|excluding connections establishing)\)`)
	processedRE = regexp.MustCompile(`^number of transactions actually processed: ([0-9]+)`)
	failedTxRE  = regexp.MustCompile(`^number of failed transactions: ([0-9]+)`)
	skippedTxRE = regexp.MustCompile(`^number of transactions skipped: ([0-9]+)`)
	latAvgRE    = regexp.MustCompile(`^latency average = ([0-9.]+) ms`)
	latSDRE     = regexp.MustCompile(`^latency stddev = ([0-9.]+) ms`)
	lagSumRE    = regexp.MustCompile(`^rate limit schedule lag: avg ([0-9.]+) \(max ([0-9.]+)\) ms`)
	connRE      = regexp.MustCompile(`^initial connection time = ([0-9.]+) ms`)
	clientsRE   = regexp.MustCompile(`^number of clients: ([0-9]+)`)
	threadsRE   = regexp.MustCompile(`^number of threads: ([0-9]+)`)
	modeRE      = regexp.MustCompile(`^query mode: (\w+)`)
)

// ParseSummary reads pgbench's final report (PostgreSQL 14 to 18).
func ParseSummary(r io.Reader) Summary {
	var s Summary
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	f := func(re *regexp.Regexp, line string) (string, bool) {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return "", false
		}
		return m[1], true
	}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := f(tpsRE, line); ok {
			if x, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(x, 0) {
				s.TPS, s.Complete = x, true
			}
		} else if v, ok := f(processedRE, line); ok {
			s.Processed, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := f(failedTxRE, line); ok {
			s.Failed, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := f(skippedTxRE, line); ok {
			s.Skipped, _ = strconv.ParseInt(v, 10, 64)
		} else if v, ok := f(latAvgRE, line); ok {
			s.LatencyAvgMS, _ = strconv.ParseFloat(v, 64)
		} else if v, ok := f(latSDRE, line); ok {
			s.LatencySDMS, _ = strconv.ParseFloat(v, 64)
		} else if m := lagSumRE.FindStringSubmatch(line); m != nil {
			s.LagAvgMS, _ = strconv.ParseFloat(m[1], 64)
			s.LagMaxMS, _ = strconv.ParseFloat(m[2], 64)
		} else if v, ok := f(connRE, line); ok {
			s.ConnectMS, _ = strconv.ParseFloat(v, 64)
		} else if v, ok := f(clientsRE, line); ok {
			s.Clients, _ = strconv.Atoi(v)
		} else if v, ok := f(threadsRE, line); ok {
			s.Threads, _ = strconv.Atoi(v)
		} else if v, ok := f(modeRE, line); ok {
			s.Mode = v
		}
	}
	return s
}

// TxLog is what pgbench's per-transaction log says of the logged
// transactions.
type TxLog struct {
	tx      []loggedTx
	failed  int64
	skipped int64
}

type loggedTx struct {
	client, no int64
	// latencyUS is pgbench's own latency; endUS is when it completed.
	latencyUS, endUS int64
}

// ReadTxLog adds the lines of a pgbench per-transaction log:
//
//	client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]
//
// where time is the latency in µs, or "failed"/"skipped" (PG ≥ 15).
func (l *TxLog) ReadTxLog(r io.Reader) {
	// Fields are cut from the scanner's bytes in place and the numbers
	// parsed by hand: strings.Fields and strconv cost 1.5 µs a line, and
	// the log is read in the observer's time (issue 27).
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var f [6][]byte
	for sc.Scan() {
		rest := sc.Bytes()
		n := 0
		for ; n < len(f); n++ {
			if f[n], rest = nextField(rest); f[n] == nil {
				break
			}
		}
		if n < len(f) {
			continue
		}
		switch string(f[2]) {
		case "failed", "serialization", "deadlock", "other":
			l.failed++
			continue
		case "skipped":
			l.skipped++
			continue
		}
		var t loggedTx
		var sec, us int64
		ok := true
		for i, p := range [...]*int64{0: &t.client, 1: &t.no, 2: &t.latencyUS, 4: &sec, 5: &us} {
			if p != nil && ok {
				*p, ok = parseCount(f[i])
			}
		}
		if !ok || us >= 1e6 || sec > 9e12 {
			continue
		}
		t.endUS = sec*1e6 + us
		l.tx = append(l.tx, t)
	}
}

// nextField cuts b's first space-separated field; nil when there is
// none.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	if i == len(b) {
		return nil, nil
	}
	j := i
	for j < len(b) && !isSpace(b[j]) {
		j++
	}
	return b[i:j], b[j:]
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// parseCount parses a decimal count of at most 18 digits (no sign).
func parseCount(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// Count is the number of transactions read.
func (l *TxLog) Count() int { return len(l.tx) }

// Reported returns pgbench's own latencies, in µs.
//
// pgbench reads the clock once per pass of a client's state machine and
// reuses it: a transaction whose reply is already there when pgbench
// looks (a fast one, tens of µs) ends in the pass it started in and is
// logged with latency 0. These latencies are right for open-loop runs
// (-R), where the latency is counted from the scheduled start, and for
// transactions slower than a pass; Intervals is right for closed loops.
func (l *TxLog) Reported() []float64 {
	out := make([]float64, len(l.tx))
	for i, t := range l.tx {
		out[i] = float64(t.latencyUS)
	}
	return out
}

// Intervals returns, for every pair of logged transactions that a client
// ran back to back (transaction numbers n and n+1), the time between
// their completions, in µs. In a closed loop a client starts its next
// transaction as soon as the last one ends, so this is the latency the
// client saw, pgbench's own time included; its mean is clients/TPS, as
// Little's law wants. With --sampling-rate r, a fraction r² of the
// transactions form pairs.
func (l *TxLog) Intervals() []float64 {
	ts := byClient(l.tx)
	out := make([]float64, 0, len(ts)/4)
	for i := 1; i < len(ts); i++ {
		if ts[i].client == ts[i-1].client && ts[i].no == ts[i-1].no+1 && ts[i].endUS >= ts[i-1].endUS {
			out = append(out, float64(ts[i].endUS-ts[i-1].endUS))
		}
	}
	return out
}

// byClient is tx ordered by client, then transaction number. pgbench
// logs a client's transactions in their order and its clients are
// numbered from 0: a counting sort by client, which keeps that order,
// does it in linear time (a comparison sort was most of the log's
// reading, issue 27); a client whose lines are out of order, or ids too
// sparse to count, are sorted.
func byClient(tx []loggedTx) []loggedTx {
	var top int64 = -1
	for _, t := range tx {
		top = max(top, t.client)
	}
	byNo := func(a, b loggedTx) int {
		if c := cmp.Compare(a.client, b.client); c != 0 {
			return c
		}
		return cmp.Compare(a.no, b.no)
	}
	if top >= int64(len(tx))+1024 {
		ts := slices.Clone(tx)
		slices.SortFunc(ts, byNo)
		return ts
	}
	start := make([]int, top+2)
	for _, t := range tx {
		start[t.client+1]++
	}
	for c := 1; c < len(start); c++ {
		start[c] += start[c-1]
	}
	ts := make([]loggedTx, len(tx))
	next := slices.Clone(start)
	for _, t := range tx {
		ts[next[t.client]] = t
		next[t.client]++
	}
	for c := 0; c+1 < len(start); c++ {
		if seg := ts[start[c]:start[c+1]]; !slices.IsSortedFunc(seg, byNo) {
			slices.SortFunc(seg, byNo)
		}
	}
	return ts
}

// Percentiles returns p50, p95, p99 and max of us (µs) in milliseconds,
// by nearest rank; ok is false without values. us is sorted in place.
func Percentiles(us []float64) (p50, p95, p99, max float64, ok bool) {
	if len(us) == 0 {
		return 0, 0, 0, 0, false
	}
	sort.Float64s(us)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(us)))) - 1
		if i < 0 {
			i = 0
		}
		return us[i] / 1000
	}
	return q(0.50), q(0.95), q(0.99), us[len(us)-1] / 1000, true
}

// lineWriter calls fn for every complete line written to it.
type lineWriter struct {
	fn   func(string)
	rest []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	data := append(w.rest, b...)
	for {
		i := strings.IndexAny(string(data), "\n\r")
		if i < 0 {
			break
		}
		if i > 0 {
			w.fn(string(data[:i]))
		}
		data = data[i+1:]
	}
	if len(data) > 64*1024 {
		data = data[len(data)-64*1024:]
	}
	w.rest = append([]byte(nil), data...)
	return len(b), nil
}
