package store

import (
	"context"
	"strings"

	"github.com/pgabtest/abtest/results"
)

// The store keeps what a run is (plans, cells, commits, annotations);
// what the analysis made of it is a cache beside it, written by the
// history package and tagged with the analysis version that judged it
// (table run_judged). A reader asks for the rows of one version: a run
// judged by another version, or not yet, has none, so a verdict of
// other statistics is never shown as current. Stale lists the runs to
// judge again.

// Judged is one run as one analysis version judged it: its verdict rows,
// pooled tests, each commit's answer, its gate under the store's
// options, and the configurations' variance components as JSON.
type Judged struct {
	// Version is the analysis version that judged the run.
	Version string
	// Cells is how many cells of the run the judgement read: a cache of
	// fewer cells than the run now has (a shard imported meanwhile) is
	// not stored.
	Cells      int
	Verdicts   []Verdict
	Geomeans   []Geomean
	Answers    []Answer
	Gate       results.GateStatus
	GateDetail string
	// Noise is analysis.Report.Noise as JSON ("[]" for none).
	Noise string
}

// PutJudged replaces run's cached judgement by j, under a lock on the
// run. It stores nothing and returns false when the run has more or
// fewer cells than j read: the cache stays stale and the next read
// judges the run again.
func (s *Store) PutJudged(ctx context.Context, run string, j *Judged) (bool, error) {
	fail := func(err error) (bool, error) { return false, s.fail("storing the analysis of run "+run, err) }
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	lock := "SELECT id FROM runs WHERE id = ?"
	if s.postgres {
		lock += " FOR UPDATE"
	}
	var got string
	if err := tx.QueryRowContext(ctx, s.q(lock), run).Scan(&got); err != nil {
		return fail(err)
	}
	var cells int
	if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM cells WHERE run_id = ?"), run).Scan(&cells); err != nil {
		return fail(err)
	}
	if cells != j.Cells {
		return false, nil
	}
	for _, t := range []string{"verdicts", "run_geomeans", "run_answers", "run_judged"} {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM "+t+" WHERE run_id = ?"), run); err != nil {
			return fail(err)
		}
	}
	if err := s.putVerdicts(ctx, tx, run, j.Verdicts); err != nil {
		return fail(err)
	}
	if err := s.putGeomeans(ctx, tx, run, j.Geomeans); err != nil {
		return fail(err)
	}
	if err := s.putAnswers(ctx, tx, run, j.Answers); err != nil {
		return fail(err)
	}
	if _, err := tx.ExecContext(ctx, s.q("UPDATE runs SET gate = ?, gate_detail = ? WHERE id = ?"), string(j.Gate), j.GateDetail, run); err != nil {
		return fail(err)
	}
	noise := j.Noise
	if noise == "" {
		noise = "[]"
	}
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO run_judged (run_id, analysis_version, judged_at, noise) VALUES (?, ?, ?, ?)"),
		run, j.Version, now(), noise); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	return true, nil
}

// Stale returns the runs, oldest first, whose cached judgement is
// missing or of another analysis version than version.
func (s *Store) Stale(ctx context.Context, version string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT r.id FROM runs r LEFT JOIN run_judged j ON j.run_id = r.id
		WHERE j.analysis_version IS NULL OR j.analysis_version <> ? ORDER BY r.created, r.id`), version)
	if err != nil {
		return nil, s.fail("listing runs to analyse", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.fail("listing runs to analyse", err)
		}
		out = append(out, id)
	}
	return out, s.fail("listing runs to analyse", rows.Err())
}

// JudgedBy returns the analysis version of run's cached judgement, ""
// when it has none.
func (s *Store) JudgedBy(ctx context.Context, run string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, s.q("SELECT COALESCE(MAX(analysis_version), '') FROM run_judged WHERE run_id = ?"), run).Scan(&v)
	return v, s.fail("reading the analysis of run "+run, err)
}

// CellCount is how many cells the store has of run.
func (s *Store) CellCount(ctx context.Context, run string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, s.q("SELECT count(*) FROM cells WHERE run_id = ?"), run).Scan(&n)
	return n, s.fail("counting the cells of run "+run, err)
}

// judgedAs is the join that keeps the cache rows of one version.
const judgedAs = " JOIN run_judged j ON j.run_id = t.run_id AND j.analysis_version = ?"

// verdictWidth is the values of a verdicts row; verdictBatch rows of
// them keep under SQLite's 32 766 parameters. A run's verdicts were
// stored a statement each: on PostgreSQL a round trip each, 0.27–0.39 s
// of wall time for the 2 400 of BenchmarkImport100k, now 0.06–0.08 s
// (3 rounds alternated at load 3.5–4).
const verdictWidth, verdictBatch = 18, 1000

func (s *Store) putVerdicts(ctx context.Context, tx execer, run string, vs []Verdict) error {
	ins := &batcher{s: s, tx: tx, size: verdictBatch, head: `INSERT INTO verdicts (run_id, commit_label, config, metric, verdict, n, baseline_median, median, ci_lo, ci_hi, delta_pct, p, gated, note, delta_lo, delta_hi, detectable_pct, role)
		VALUES `, row: "(?" + strings.Repeat(", ?", verdictWidth-1) + ")"}
	defer ins.close()
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		err := ins.exec(ctx, len(args)/verdictWidth, args)
		args = args[:0]
		return err
	}
	for _, v := range vs {
		args = append(args, run, v.Commit, v.Config, v.Metric, string(v.Verdict), v.N, v.BaselineMedian, v.Median, v.Lo, v.Hi, v.DeltaPct, v.P,
			boolInt(v.Gated), v.Note, v.DeltaLo, v.DeltaHi, v.DetectablePct, string(v.Role))
		if len(args) == verdictWidth*verdictBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func (s *Store) putGeomeans(ctx context.Context, tx execer, run string, gs []Geomean) error {
	for _, g := range gs {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_geomeans (run_id, commit_label, metric, ratio, lo, hi, p, verdict, configs, min_effect_pct, detectable_pct)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			run, g.Commit, g.Metric, g.Ratio, g.Lo, g.Hi, g.P, string(g.Verdict), g.Configs, g.MinEffectPct, g.DetectablePct); err != nil {
			return err
		}
	}
	return nil
}

// putAnswers stores each commit's answer.
func (s *Store) putAnswers(ctx context.Context, tx execer, run string, as []Answer) error {
	for _, a := range as {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO run_answers (run_id, commit_label, better, worse, same, unknown, incomplete, higher, lower, behind,
			no_change_pct, detectable_pct, line) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
			run, a.Commit, a.Better, a.Worse, a.Same, a.Unknown, a.Incomplete, a.Higher, a.Lower, a.Behind,
			a.NoChangePct, a.DetectablePct, a.Line); err != nil {
			return err
		}
	}
	return nil
}
