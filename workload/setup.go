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

// parseFile splits a workload file into its sections; name is the
// workload's, for messages.
func parseFile(name, text string) (setup, script string, metrics []Declared, err error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) == 0 || !strings.HasPrefix(strings.TrimSpace(lines[0]), markerPrefix) {
		return "", text, nil, nil
	}
	var cur *strings.Builder
	var setupB, scriptB strings.Builder
	var queries []*strings.Builder
	for _, l := range lines {
		head, ok := strings.CutPrefix(strings.TrimSpace(l), markerPrefix)
		if !ok {
			if cur != nil {
				cur.WriteString(l)
			}
			continue
		}
		switch kind, rest, _ := strings.Cut(head, " "); kind {
		case "setup":
			cur = &setupB
		case "script":
			cur = &scriptB
		case "metric":
			d, err := parseDeclared(name, rest)
			if err != nil {
				return "", "", nil, err
			}
			metrics = append(metrics, d)
			queries = append(queries, &strings.Builder{})
			cur = queries[len(queries)-1]
		default:
			return "", "", nil, exitcode.BadInputf("workload %s: %q: want -- abtest:setup, -- abtest:script or -- abtest:metric NAME …", name, strings.TrimSpace(l))
		}
	}
	for i, q := range queries {
		if metrics[i].Query = strings.TrimSpace(q.String()); metrics[i].Query == "" {
			return "", "", nil, exitcode.BadInputf("workload %s: metric %s has no query under its line", name, metrics[i].Metric.Name)
		}
	}
	if strings.TrimSpace(scriptB.String()) == "" {
		return "", "", nil, exitcode.BadInputf("workload %s: no -- abtest:script section: the pgbench script is what it runs", name)
	}
	return setupB.String(), scriptB.String(), metrics, nil
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
