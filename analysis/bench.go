package analysis

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/pgabtest/abtest/internal/safefile"

	"github.com/pgabtest/abtest/results"
)

// benchUnit is a metric's unit in the Go benchmark format: a base unit
// (seconds, not milliseconds, so benchstat scales it as 61.9m/61.9µ),
// distinct per metric because benchstat makes one table per unit, and
// the factor that converts the metric's value to it.
func benchUnit(def results.Metric) (unit string, factor float64) {
	stem := strings.ReplaceAll(strings.TrimSuffix(strings.TrimSuffix(def.Name, "_ms"), "_per_tx"), "_", "-")
	switch {
	case def.Unit == "tx/s":
		return def.Unit, 1
	case def.Unit == "ms" && def.SameAs != "":
		return "sec/tx", 1e-3 // the mean latency, the inverse of TPS
	case def.Unit == "ms":
		return stem + "-sec", 1e-3
	case def.Unit == "s/tx":
		return stem + "-sec/tx", 1
	case strings.HasSuffix(def.Unit, "/tx"):
		return stem + "/tx", 1
	}
	return stem, 1
}

// benchName is a configuration as a benchmark name with /key=value
// sub-names, so that benchstat's -row /clients and -filter
// /workload:churn work: PG/workload=churn/clients=64/cpus=all/pgss.max=5000.
func benchName(c results.Config) string {
	// The configuration id's escaping, and spaces: a benchmark name
	// is one field of its line.
	clean := func(s string) string { return strings.ReplaceAll(results.EscapeID(s), " ", "%20") }
	var b strings.Builder
	b.WriteString("PG")
	for _, kv := range c.BenchKeys() {
		b.WriteString("/" + clean(kv[0]) + "=" + clean(kv[1]))
	}
	return b.String()
}

// benchUnits is the unit metadata: better= for metrics with a
// direction (none for descriptive ones: benchstat then shows the change
// without calling it better or worse), assume=exact for the metrics this
// run gated exactly.
func (r *Report) benchUnits() []*benchfmt.UnitMetadata {
	var out []*benchfmt.UnitMetadata
	for _, name := range r.Metrics {
		m, _ := r.Plan.Metrics.Get(name)
		unit, _ := benchUnit(m)
		switch m.Direction {
		case results.HigherIsBetter:
			out = append(out, &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}, OrigUnit: unit, Value: "higher"})
		case results.LowerIsBetter:
			out = append(out, &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "better"}, OrigUnit: unit, Value: "lower"})
		}
		for _, t := range r.Tiers {
			if t.Metric == name && t.Tier == results.TierExact {
				out = append(out, &benchfmt.UnitMetadata{UnitMetadataKey: benchfmt.UnitMetadataKey{Unit: unit, Key: "assume"}, OrigUnit: unit, Value: "exact"})
			}
		}
	}
	return out
}

// benchResults are commit's usable cells (ok, not saturated) as
// benchmark results, in the plan's configuration order and by repeat;
// with withCommit, each carries a "commit" file configuration.
func (r *Report) benchResults(commit string, withCommit bool) []*benchfmt.Result {
	order := map[string]int{}
	for i, c := range r.Plan.Configs {
		order[c.ID()] = i
	}
	var recs []*results.Record
	for i := range r.records {
		rec := &r.records[i]
		if rec.Commit == commit && rec.Status == results.StatusOK && !rec.Saturated {
			recs = append(recs, rec)
		}
	}
	slices.SortStableFunc(recs, func(a, b *results.Record) int {
		if d := order[a.Config.ID()] - order[b.Config.ID()]; d != 0 {
			return d
		}
		return a.Repeat - b.Repeat
	})
	var cfg []benchfmt.Config
	if h := r.Plan.Host; h.CPU != "" {
		cfg = append(cfg, benchfmt.Config{Key: "cpu", Value: []byte(h.CPU), File: true})
	}
	if withCommit {
		cfg = append(cfg, benchfmt.Config{Key: "commit", Value: []byte(commit), File: true})
	}
	var out []*benchfmt.Result
	for _, rec := range recs {
		res := &benchfmt.Result{Config: cfg, Name: benchfmt.Name(benchName(rec.Config)), Iters: 1}
		for _, m := range r.Metrics {
			v, ok := rec.Metrics.Get(m)
			if !ok || !isFinite(v) {
				continue
			}
			def, _ := r.Plan.Metrics.Get(m)
			unit, f := benchUnit(def)
			res.Values = append(res.Values, benchfmt.Value{Value: v * f, Unit: unit})
		}
		if len(res.Values) > 0 {
			out = append(out, res)
		}
	}
	return out
}

func (r *Report) writeBench(w io.Writer, commits []string, withCommit bool) error {
	bw := benchfmt.NewWriter(w)
	for _, u := range r.benchUnits() {
		if err := bw.Write(u); err != nil {
			return err
		}
	}
	for _, c := range commits {
		for _, res := range r.benchResults(c, withCommit) {
			if err := bw.Write(res); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteBench writes every usable cell in the Go benchmark format
// (golang.org/x/perf/benchfmt) in one stream: base units with unit
// metadata, /key=value sub-names, and a "commit: <label>" line before
// each commit's cells. benchstat's defaults split tables by file
// configuration and columns by file, so one stream compares commits
// with one flag:
//
//	benchstat -col commit report.bench
//	benchstat -col commit -row /clients -filter /workload:churn report.bench
//
// WriteBenchFiles writes one file per commit, which plain benchstat
// compares without flags.
func (r *Report) WriteBench(w io.Writer) error {
	return r.writeBench(w, r.baselineFirst(), true)
}

// baselineFirst is the commits with the baseline first: benchstat
// compares every column with the first.
func (r *Report) baselineFirst() []string {
	rest := slices.DeleteFunc(slices.Clone(r.Commits), func(c string) bool { return c == r.Baseline })
	return append([]string{r.Baseline}, rest...)
}

// WriteBenchFiles writes one benchmark file per commit into dir,
// <label>.bench, the baseline first, and returns their paths: plain
// `benchstat base.bench patch.bench` shows one table per metric with the
// commits as columns.
func (r *Report) WriteBenchFiles(dir string) ([]string, error) {
	if err := safefile.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := safefile.Dir(dir); err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range r.baselineFirst() {
		path := filepath.Join(dir, fileSafe.ReplaceAllString(c, "_")+".bench")
		f, err := safefile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		err = r.writeBench(f, []string{c}, false)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
