package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// The sections of a workload file: SQL that makes what the script needs,
// the pgbench script, and metrics the workload computes, each read by
// SQL after the window:
//
//	-- abtest:setup
//	CREATE TABLE IF NOT EXISTS ping (id bigserial PRIMARY KEY, batch int, sent timestamptz, got timestamptz);
//	-- abtest:script
//	INSERT INTO ping (batch, sent) SELECT :batch, clock_timestamp() FROM generate_series(1, :batch);
//	-- abtest:metric delivery_p99_ms unit=ms direction=lower threshold=5 tier=band
//	SELECT percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM got - sent) * 1000) FROM ping;
//	-- abtest:primary delivery_p99_ms
//	-- abtest:ops-per-tx :batch
//
// and two directives, each a line of its own anywhere after the first,
// at most once: the metric its open-loop configurations are judged by
// first (one it declares, or one of abtest's with a direction), and how
// many of the user's operations one transaction carries (a positive
// number, or :NAME, a variable of the script a --var axis sets), which
// -R …ops and the per-operation probes divide by.
//
// A file that does not start with a marker is all script.
const markerPrefix = "-- abtest:"

// Declared is a metric a workload file declares: its definition and the
// query whose one numeric value is the metric of a window.
type Declared struct {
	Metric results.Metric
	Query  string
}

var declaredName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// fileParts is what parseFile reads as it goes: the sections and where
// each directive was.
type fileParts struct {
	setup, script strings.Builder
	queries       []*strings.Builder
	w             Workload
	// primaryLine and opsLine are the directives' lines, for messages
	// (0: not given).
	primaryLine, opsLine int
}

// parseFile splits a workload file into its sections and directives
// (Workload's Setup, Script, Metrics, Primary, OpsPerTx); name is the
// workload's, for messages.
func parseFile(name, text string) (Workload, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 || !strings.HasPrefix(strings.TrimSpace(lines[0]), markerPrefix) {
		for i, l := range lines {
			// pgbench would take it for a comment and the
			// declaration would silently not be.
			if strings.HasPrefix(strings.TrimSpace(l), markerPrefix) {
				return Workload{}, exitcode.BadInputf("workload %s line %d: %q: a file with -- abtest: lines starts with one (-- abtest:script before its script)", name, i+1, strings.TrimSpace(l))
			}
		}
		return Workload{Script: text}, nil
	}
	var f fileParts
	var cur *strings.Builder
	for i, l := range lines {
		head, ok := strings.CutPrefix(strings.TrimSpace(l), markerPrefix)
		if !ok {
			if cur != nil {
				cur.WriteString(l)
			}
			continue
		}
		next, err := f.marker(name, i+1, head, cur)
		if err != nil {
			return Workload{}, err
		}
		cur = next
	}
	return f.finish(name)
}

// marker reads the marker line n ("-- abtest:" then head) and returns
// the section the lines after it go to: a directive leaves cur as it is.
func (f *fileParts) marker(name string, n int, head string, cur *strings.Builder) (*strings.Builder, error) {
	kind, rest, _ := strings.Cut(head, " ")
	rest = strings.TrimSpace(rest)
	line := markerPrefix + head
	switch kind {
	case "setup":
		return &f.setup, nil
	case "script":
		return &f.script, nil
	case "metric":
		d, err := parseDeclared(name, rest)
		if err != nil {
			return nil, err
		}
		f.w.Metrics = append(f.w.Metrics, d)
		f.queries = append(f.queries, &strings.Builder{})
		return f.queries[len(f.queries)-1], nil
	case "primary":
		if f.primaryLine > 0 {
			return nil, exitcode.BadInputf("workload %s line %d: %q: a second -- abtest:primary (line %d has one); a workload has one primary", name, n, line, f.primaryLine)
		}
		if !declaredName.MatchString(rest) {
			return nil, exitcode.BadInputf("workload %s line %d: %q: want -- abtest:primary NAME, one metric", name, n, line)
		}
		f.w.Primary, f.primaryLine = rest, n
		return cur, nil
	case "ops-per-tx":
		if f.opsLine > 0 {
			return nil, exitcode.BadInputf("workload %s line %d: %q: a second -- abtest:ops-per-tx (line %d has one)", name, n, line, f.opsLine)
		}
		if err := results.CheckOpsPerTx(rest); err != nil {
			return nil, exitcode.BadInputf("workload %s line %d: -- abtest:ops-per-tx %v", name, n, err)
		}
		f.w.OpsPerTx, f.opsLine = rest, n
		return cur, nil
	}
	return nil, exitcode.BadInputf("workload %s line %d: %q: want -- abtest:setup, -- abtest:script, -- abtest:metric NAME …, -- abtest:primary NAME or -- abtest:ops-per-tx EXPR", name, n, line)
}

// finish checks what the file declared once it is all read: a metric
// is declared anywhere in the file, so its primary is checked at the
// end.
func (f *fileParts) finish(name string) (Workload, error) {
	w := f.w
	for i, q := range f.queries {
		if w.Metrics[i].Query = strings.TrimSpace(q.String()); w.Metrics[i].Query == "" {
			return Workload{}, exitcode.BadInputf("workload %s: metric %s has no query under its line", name, w.Metrics[i].Metric.Name)
		}
	}
	if strings.TrimSpace(f.script.String()) == "" {
		return Workload{}, exitcode.BadInputf("workload %s: no -- abtest:script section: the pgbench script is what it runs", name)
	}
	w.Setup, w.Script = f.setup.String(), f.script.String()
	if w.Primary != "" {
		if err := checkPrimary(w); err != nil {
			return Workload{}, exitcode.BadInputf("workload %s line %d: -- abtest:primary %s: %v", name, f.primaryLine, w.Primary, err)
		}
	}
	return w, nil
}

// checkPrimary: a primary is a metric w declares or one of abtest's,
// with a direction: a descriptive metric is never better or worse.
func checkPrimary(w Workload) error {
	m, ok := results.Builtin.Get(w.Primary)
	for _, d := range w.Metrics {
		if d.Metric.Name == w.Primary {
			m, ok = d.Metric, true
		}
	}
	switch {
	case !ok:
		return fmt.Errorf("no such metric: declare it with -- abtest:metric %s …, or name one of abtest's (tps, latency_p99_ms, …)", w.Primary)
	case m.Direction == results.Descriptive:
		return fmt.Errorf("%s is descriptive (neither better nor worse): name a metric with a direction", w.Primary)
	}
	return nil
}

// parseDeclared parses "NAME key=value…" of a metric line: unit,
// direction (lower, higher, descriptive; lower by default), threshold
// (percent, 5 by default) and tier (exact, band, report; band by
// default).
func parseDeclared(workload, line string) (Declared, error) {
	f := strings.Fields(line)
	bad := func(format string, args ...any) (Declared, error) {
		return Declared{}, exitcode.BadInputf("workload %s: -- abtest:metric %s: "+format, append([]any{workload, line}, args...)...)
	}
	if len(f) == 0 || !declaredName.MatchString(f[0]) {
		return bad("want a name of lower-case letters, digits and _ first")
	}
	if _, ok := results.Builtin.Get(f[0]); ok {
		return bad("%s is abtest's own metric; name yours otherwise", f[0])
	}
	m := results.Metric{Name: f[0], Direction: results.LowerIsBetter, ThresholdPct: 5, Tier: results.TierBand, Doc: "declared by workload " + workload}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "unit":
			m.Unit = v
		case "direction":
			d := map[string]results.Direction{"lower": results.LowerIsBetter, "higher": results.HigherIsBetter, "descriptive": results.Descriptive}[v]
			if d == "" {
				return bad("direction=%s: want lower, higher or descriptive", v)
			}
			m.Direction = d
		case "threshold":
			n, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
			if err != nil || !(n >= 0) || math.IsInf(n, 0) {
				return bad("threshold=%s: want a percentage of at least 0", v)
			}
			m.ThresholdPct = n
		case "tier":
			if m.Tier = results.Tier(v); !m.Tier.Valid() {
				return bad("tier=%s: want exact, band or report", v)
			}
		default:
			return bad("%q: want unit=, direction=, threshold= or tier=", kv)
		}
	}
	return Declared{Metric: m}, nil
}

// RunSetup runs w's setup SQL, if any, on the server c names, in one
// transaction.
func RunSetup(ctx context.Context, c Conn, w Workload) error {
	if strings.TrimSpace(w.Setup) == "" {
		return nil
	}
	conn, err := pgx.Connect(ctx, c.connString(c.Database))
	if err != nil {
		return exitcode.Failure(fmt.Errorf("%w: workload %s setup: cannot connect: %v", ErrServer, w.Name, err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, marker+"\n"+w.Setup)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return exitcode.Failure(userSQL(fmt.Errorf("workload %s: its setup SQL failed: %w", w.Name, err)))
	}
	return nil
}

// userSQL is err marked as the user's SQL refused by the server
// (results.UserSQLError) when a server error is in its chain.
func userSQL(err error) error {
	if _, refused := errors.AsType[*pgconn.PgError](err); refused {
		return &results.UserSQLError{Err: err}
	}
	return err
}

// readDeclared reads the workload's declared metrics into res after the
// window; a query that fails or gives no number fails the run, naming
// the metric. Each runs in a transaction of its own, READ ONLY and
// rolled back: a metric reads, and the superuser it runs as must not
// write (SELECT setval('s', 4242) once took effect).
func readDeclared(ctx context.Context, conn *pgx.Conn, w Workload, res *Result) error {
	for _, d := range w.Metrics {
		v, err := readMetric(ctx, conn, d.Query)
		if err != nil {
			why := "its query failed"
			if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == readOnlyTransaction {
				why = "its query writes, and metric queries run read-only"
			}
			return exitcode.Failure(userSQL(fmt.Errorf("workload %s: metric %s: %s: %w", w.Name, d.Metric.Name, why, err)))
		}
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return exitcode.Failure(fmt.Errorf("workload %s: metric %s: its query gave no number", w.Name, d.Metric.Name))
		}
		res.Metrics[d.Metric.Name] = *v
	}
	return nil
}

// readMetric runs a metric's query in a READ ONLY transaction, rolled
// back whatever it did.
func readMetric(ctx context.Context, conn *pgx.Conn, query string) (*float64, error) {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var v *float64
	err = tx.QueryRow(ctx, marker+" SELECT ("+strings.TrimSuffix(query, ";")+")::float8").Scan(&v)
	return v, err
}

// readOnlyTransaction is SQLSTATE read_only_sql_transaction: a write in a
// READ ONLY transaction.
const readOnlyTransaction = "25006"
