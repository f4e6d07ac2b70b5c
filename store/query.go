package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/results"
)

// Run is one stored run with its commits and shards.
type Run struct {
	ID            string    `json:"id"`
	Created       time.Time `json:"created"`
	Baseline      string    `json:"baseline"`
	AbtestVersion string    `json:"abtest_version"`
	Commits       []Commit  `json:"commits"`
	Shards        []Shard   `json:"shards"`
	Cells         int       `json:"cells"`
	Failed        int       `json:"failed"`
	// Metrics are the plan's metric definitions (units, directions).
	Metrics results.Metrics `json:"metrics,omitempty"`
}

// Name is the name the user gave the run: its results directory's base
// name (what -o chose), the shards' distinct names joined with " + ".
func (r *Run) Name() string {
	var names []string
	for _, sh := range r.Shards {
		if n := filepath.Base(sh.Dir); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return r.ID
	}
	return strings.Join(names, " + ")
}

// Commit is one arm of a run.
type Commit struct {
	Label       string          `json:"label"`
	Ref         string          `json:"ref,omitempty"`
	SHA         string          `json:"sha,omitempty"`
	Identity    string          `json:"identity"`
	Patches     []results.Patch `json:"patches,omitempty"`
	Install     string          `json:"install,omitempty"`
	Build       string          `json:"build"`
	Fingerprint string          `json:"fingerprint,omitempty"`
	Version     string          `json:"version,omitempty"`
	BuildType   string          `json:"build_type,omitempty"`
}

// Shard is one results directory of a run and the host it ran on.
type Shard struct {
	Shard   string            `json:"shard"`
	Dir     string            `json:"dir"`
	Created time.Time         `json:"created"`
	Host    Host              `json:"host"`
	Doctor  []results.Finding `json:"doctor,omitempty"`
}

// Host is a host description and its fingerprint (a hash of it).
type Host struct {
	Fingerprint string `json:"fingerprint"`
	host.Host
}

// Cell is one stored cell without its metrics.
type Cell struct {
	Cell      string            `json:"cell"`
	Shard     string            `json:"shard"`
	Commit    string            `json:"commit"`
	Config    string            `json:"config"`
	Repeat    int               `json:"repeat"`
	Status    results.Status    `json:"status"`
	Saturated bool              `json:"saturated,omitempty"`
	Error     string            `json:"error,omitempty"`
	Artifacts map[string]string `json:"artifacts,omitempty"`
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// Runs returns every run, oldest first, with its commits, shards and
// cell counts. What the analysis makes of a run is not stored: a reader
// judges it (history.Judge).
func (s *Store) Runs(ctx context.Context) ([]Run, error) {
	runs, index, err := s.runList(ctx)
	if err != nil {
		return nil, err
	}
	commits, err := s.commits(ctx, "")
	if err != nil {
		return nil, err
	}
	for run, cs := range commits {
		if i, ok := index[run]; ok {
			runs[i].Commits = cs
		}
	}
	if err := s.addShards(ctx, runs, index); err != nil {
		return nil, err
	}
	return runs, s.addCellCounts(ctx, runs, index)
}

// runList returns the runs without their commits, shards and counts,
// oldest first, and their index in it by ID.
func (s *Store) runList(ctx context.Context) ([]Run, map[string]int, error) {
	var runs []Run
	index := map[string]int{}
	rows, err := s.db.QueryContext(ctx, `SELECT id, created, baseline, abtest_version, metric_defs FROM runs ORDER BY created, id`)
	if err != nil {
		return nil, nil, s.fail("listing runs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r Run
		var created, defs string
		if err := rows.Scan(&r.ID, &created, &r.Baseline, &r.AbtestVersion, &defs); err != nil {
			return nil, nil, s.fail("listing runs", err)
		}
		r.Created = parseTime(created)
		json.Unmarshal([]byte(defs), &r.Metrics)
		index[r.ID] = len(runs)
		runs = append(runs, r)
	}
	return runs, index, nil
}

// addShards adds to the runs their shards, each with its host.
func (s *Store) addShards(ctx context.Context, runs []Run, index map[string]int) error {
	rows, err := s.db.QueryContext(ctx, `SELECT s.run_id, s.shard, s.dir, s.created, s.doctor, h.fingerprint, h.info
		FROM run_shards s JOIN hosts h ON h.fingerprint = s.host ORDER BY s.run_id, s.shard`)
	if err != nil {
		return s.fail("listing runs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var run, created, doctor, info string
		var sh Shard
		if err := rows.Scan(&run, &sh.Shard, &sh.Dir, &created, &doctor, &sh.Host.Fingerprint, &info); err != nil {
			return s.fail("listing runs", err)
		}
		sh.Created = parseTime(created)
		json.Unmarshal([]byte(doctor), &sh.Doctor)
		json.Unmarshal([]byte(info), &sh.Host.Host)
		if i, ok := index[run]; ok {
			runs[i].Shards = append(runs[i].Shards, sh)
		}
	}
	return nil
}

// addCellCounts adds to the runs how many cells they have and how many
// of them failed.
func (s *Store) addCellCounts(ctx context.Context, runs []Run, index map[string]int) error {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT run_id, count(*), sum(CASE WHEN status = ? THEN 0 ELSE 1 END) FROM cells GROUP BY run_id`), string(results.StatusOK))
	if err != nil {
		return s.fail("listing runs", err)
	}
	defer rows.Close()
	for rows.Next() {
		var run string
		var n, failed int
		if err := rows.Scan(&run, &n, &failed); err != nil {
			return s.fail("listing runs", err)
		}
		if i, ok := index[run]; ok {
			runs[i].Cells, runs[i].Failed = n, failed
		}
	}
	return nil
}

// commits returns the commits of run ("" for every run) by run, in plan
// order.
func (s *Store) commits(ctx context.Context, run string) (map[string][]Commit, error) {
	q := `SELECT run_id, label, ref, sha, identity, patches, install, build, fingerprint, version, build_type FROM commits`
	var args []any
	if run != "" {
		q += " WHERE run_id = ?"
		args = append(args, run)
	}
	rows, err := s.db.QueryContext(ctx, s.q(q+" ORDER BY run_id, position"), args...)
	if err != nil {
		return nil, s.fail("reading commits", err)
	}
	defer rows.Close()
	out := map[string][]Commit{}
	for rows.Next() {
		var id, patches string
		var c Commit
		if err := rows.Scan(&id, &c.Label, &c.Ref, &c.SHA, &c.Identity, &patches, &c.Install, &c.Build, &c.Fingerprint, &c.Version, &c.BuildType); err != nil {
			return nil, s.fail("reading commits", err)
		}
		json.Unmarshal([]byte(patches), &c.Patches)
		out[id] = append(out[id], c)
	}
	return out, s.fail("reading commits", rows.Err())
}

// CellMetrics returns the metrics of run's cells by cell name.
func (s *Store) CellMetrics(ctx context.Context, run string) (map[string]map[string]float64, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT c.cell, m.metric, m.value FROM cells c JOIN metrics m ON m.cell_id = c.id WHERE c.run_id = ?`), run)
	if err != nil {
		return nil, s.fail("reading cell metrics", err)
	}
	defer rows.Close()
	out := map[string]map[string]float64{}
	for rows.Next() {
		var cell, metric string
		var v float64
		if err := rows.Scan(&cell, &metric, &v); err != nil {
			return nil, s.fail("reading cell metrics", err)
		}
		if out[cell] == nil {
			out[cell] = map[string]float64{}
		}
		out[cell][metric] = v
	}
	return out, s.fail("reading cell metrics", rows.Err())
}

// Cells returns run's cells (without metrics) in the plan's order (its
// sequence numbers; by name where shards share one).
func (s *Store) Cells(ctx context.Context, run string) ([]Cell, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT cell, shard, commit_label, config, repeat, status, saturated, error, artifacts
		FROM cells WHERE run_id = ? ORDER BY seq, cell`), run)
	if err != nil {
		return nil, s.fail("reading cells", err)
	}
	defer rows.Close()
	var out []Cell
	for rows.Next() {
		var c Cell
		var sat int
		var arts string
		if err := rows.Scan(&c.Cell, &c.Shard, &c.Commit, &c.Config, &c.Repeat, &c.Status, &sat, &c.Error, &arts); err != nil {
			return nil, s.fail("reading cells", err)
		}
		c.Saturated = sat == 1
		json.Unmarshal([]byte(arts), &c.Artifacts)
		out = append(out, c)
	}
	return out, s.fail("reading cells", rows.Err())
}

// SeriesKey names one trend: a metric in a configuration.
type SeriesKey struct {
	Metric string `json:"metric"`
	Config string `json:"config"`
}

// SeriesKeys returns every metric × configuration the store has values
// of, by configuration and metric.
func (s *Store) SeriesKeys(ctx context.Context) ([]SeriesKey, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT c.config, m.metric FROM cells c JOIN metrics m ON m.cell_id = c.id ORDER BY c.config, m.metric`)
	if err != nil {
		return nil, s.fail("listing series", err)
	}
	defer rows.Close()
	var out []SeriesKey
	for rows.Next() {
		var k SeriesKey
		if err := rows.Scan(&k.Config, &k.Metric); err != nil {
			return nil, s.fail("listing series", err)
		}
		out = append(out, k)
	}
	return out, s.fail("listing series", rows.Err())
}

// ResolveConfig returns the configuration named by id: its whole id
// (select1/c16/cpuall/pgss.max=5000) or a prefix of whole components
// (select1/c16) that only one configuration has.
func (s *Store) ResolveConfig(ctx context.Context, id string) (string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM configurations ORDER BY id")
	if err != nil {
		return "", s.fail("reading configurations", err)
	}
	defer rows.Close()
	var match []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", s.fail("reading configurations", err)
		}
		if c == id {
			return c, nil
		}
		if strings.HasPrefix(c, strings.TrimSuffix(id, "/")+"/") {
			match = append(match, c)
		}
	}
	switch len(match) {
	case 0:
		return "", exitcode.BadInputf("--config %s: %w: no stored configuration is or starts with it", id, ErrUnknown)
	case 1:
		return match[0], nil
	}
	return "", exitcode.BadInputf("--config %s: %w: %d configurations start with it (%s); give more of it", id, ErrAmbiguous, len(match), strings.Join(match[:min(len(match), 4)], ", "))
}

var hexRE = regexp.MustCompile(`^[0-9a-fA-F]{4,40}$`)

// ResolveCommit returns the sha that ref names: a prefix (4 or more hex
// digits) of one stored sha, or a commit label or ref as typed with -k,
// taken from the latest run that has it.
func (s *Store) ResolveCommit(ctx context.Context, ref string) (string, error) {
	if hexRE.MatchString(ref) {
		rows, err := s.db.QueryContext(ctx, s.q("SELECT DISTINCT sha FROM commits WHERE sha LIKE ? ORDER BY sha"), strings.ToLower(ref)+"%")
		if err != nil {
			return "", s.fail("resolving "+ref, err)
		}
		var shas []string
		for rows.Next() {
			var sha string
			rows.Scan(&sha)
			shas = append(shas, sha)
		}
		rows.Close()
		switch {
		case len(shas) == 1:
			return shas[0], nil
		case len(shas) > 1:
			return "", exitcode.BadInputf("--commit %s: %w: %d stored commits start with it; give more digits", ref, ErrAmbiguous, len(shas))
		}
	}
	var sha string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT c.sha FROM commits c JOIN runs r ON r.id = c.run_id
		WHERE (c.label = ? OR c.ref = ?) AND c.sha <> '' ORDER BY r.created DESC, r.id DESC LIMIT 1`), ref, ref).Scan(&sha)
	if err != nil {
		return "", exitcode.BadInputf("--commit %s: %w: no stored run has a commit with that sha, label or ref", ref, ErrUnknown)
	}
	return sha, nil
}

// Annotation is a note on a commit's effect on a metric: a change point
// at that commit is expected, not a regression.
type Annotation struct {
	SHA    string `json:"sha"`
	Metric string `json:"metric"`
	// Config is empty for every configuration.
	Config  string    `json:"config,omitempty"`
	Note    string    `json:"note"`
	Created time.Time `json:"created"`
}

// Annotate stores a; the same note twice is stored once.
func (s *Store) Annotate(ctx context.Context, a Annotation) error {
	if a.SHA == "" || a.Metric == "" || strings.TrimSpace(a.Note) == "" {
		return exitcode.BadInputf("annotate: a commit, a metric and a note are required")
	}
	if err := checkAnnotation(a); err != nil {
		return err
	}
	if a.Created.IsZero() {
		a.Created = time.Now()
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO annotations (sha, metric, config, note, created) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		a.SHA, a.Metric, a.Config, a.Note, a.Created.UTC().Format(time.RFC3339Nano))
	return s.fail("storing the annotation", err)
}

// Annotations returns every annotation, oldest first.
func (s *Store) Annotations(ctx context.Context) ([]Annotation, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT sha, metric, config, note, created FROM annotations ORDER BY created, id")
	if err != nil {
		return nil, s.fail("reading annotations", err)
	}
	defer rows.Close()
	var out []Annotation
	for rows.Next() {
		var a Annotation
		var created string
		if err := rows.Scan(&a.SHA, &a.Metric, &a.Config, &a.Note, &created); err != nil {
			return nil, s.fail("reading annotations", err)
		}
		a.Created = parseTime(created)
		out = append(out, a)
	}
	return out, s.fail("reading annotations", rows.Err())
}

// HistoryQuery selects one trend.
type HistoryQuery struct {
	Metric string
	// Config is a configuration id, or a prefix only one has.
	Config string
	// Since drops runs created before it; zero keeps all.
	Since time.Time
}

// Point is one run's value of the trend: the median of a commit's
// repeats in that run.
type Point struct {
	Run      string    `json:"run"`
	Time     time.Time `json:"time"`
	Commit   string    `json:"commit"`
	SHA      string    `json:"sha"`
	Identity string    `json:"identity"`
	Value    float64   `json:"value"`
	N        int       `json:"n"`
}

// ChangePoint is where the series shifts: Points[Index] is the first
// value after the shift. Expected is set when an annotation names that
// point's commit for the metric (and the configuration, or every one).
type ChangePoint struct {
	Index    int     `json:"index"`
	SHA      string  `json:"sha"`
	DeltaPct float64 `json:"delta_pct"`
	P        float64 `json:"p"`
	Expected bool    `json:"expected"`
	Note     string  `json:"note,omitempty"`
}

// Series is a trend with its change points and the annotations of its
// commits.
type Series struct {
	Metric string  `json:"metric"`
	Config string  `json:"config"`
	Points []Point `json:"points"`
	// Baseline is the other arm: the baseline's value in each run of
	// two commits or more that has a point, for a chart to draw beside
	// Points (a run's answer is the distance between the two, which a
	// series of one arm never shows). Change points are of Points only.
	Baseline     []Point       `json:"baseline,omitempty"`
	ChangePoints []ChangePoint `json:"change_points"`
	Annotations  []Annotation  `json:"annotations"`
}

// AddChangePoint marks a shift of the series before Points[index] by
// deltaPct (p its significance): expected when an annotation of the
// series names that point's commit.
func (s *Series) AddChangePoint(index int, deltaPct, p float64) {
	c := ChangePoint{Index: index, SHA: s.Points[index].SHA, DeltaPct: deltaPct, P: p}
	for _, a := range s.Annotations {
		if a.SHA == c.SHA && c.SHA != "" {
			c.Expected, c.Note = true, a.Note
		}
	}
	s.ChangePoints = append(s.ChangePoints, c)
}

// Unexpected returns the change points no annotation explains.
func (s *Series) Unexpected() []ChangePoint {
	var out []ChangePoint
	for _, cp := range s.ChangePoints {
		if !cp.Expected {
			out = append(out, cp)
		}
	}
	return out
}

// History returns the trend of one metric in one configuration over the
// stored runs, oldest first: per run, each commit but the baseline (a
// nightly's head; the patches of an A/B run), or the only commit of a
// single-commit run, with the median of its usable repeats (ok, not
// saturated). The series has no change points: history.Trend adds
// them (analysis.ChangePoints, which depends on the series alone).
func (s *Store) History(ctx context.Context, q HistoryQuery) (*Series, error) {
	cfg, err := s.ResolveConfig(ctx, q.Config)
	if err != nil {
		return nil, err
	}
	return s.history(ctx, q, cfg, nil)
}

// runIndex is what a series needs of every run.
type runIndex struct {
	created  map[string]time.Time
	baseline map[string]string
	commits  map[string][]Commit
}

func (s *Store) runIndex(ctx context.Context) (*runIndex, error) {
	ri := &runIndex{created: map[string]time.Time{}, baseline: map[string]string{}}
	rows, err := s.db.QueryContext(ctx, "SELECT id, created, baseline FROM runs")
	if err != nil {
		return nil, s.fail("reading runs", err)
	}
	for rows.Next() {
		var id, created, base string
		if err := rows.Scan(&id, &created, &base); err != nil {
			rows.Close()
			return nil, s.fail("reading runs", err)
		}
		ri.created[id], ri.baseline[id] = parseTime(created), base
	}
	rows.Close()
	ri.commits, err = s.commits(ctx, "")
	return ri, err
}

func (s *Store) history(ctx context.Context, q HistoryQuery, cfg string, ri *runIndex) (*Series, error) {
	if q.Metric == "" {
		return nil, exitcode.BadInputf("history: --metric is required")
	}
	var err error
	if ri == nil {
		if ri, err = s.runIndex(ctx); err != nil {
			return nil, err
		}
	}
	values, err := s.historyValues(ctx, q.Metric, cfg)
	if err != nil {
		return nil, err
	}
	points, baseline := ri.points(values, q.Since)
	ser := &Series{Metric: q.Metric, Config: cfg, Points: points, Baseline: baseline, ChangePoints: []ChangePoint{}, Annotations: []Annotation{}}
	anns, err := s.Annotations(ctx)
	if err != nil {
		return nil, err
	}
	inSeries := map[string]bool{}
	for _, p := range ser.Points {
		inSeries[p.SHA] = true
	}
	for _, a := range anns {
		if a.Metric != q.Metric || (a.Config != "" && a.Config != cfg) || !inSeries[a.SHA] {
			continue
		}
		ser.Annotations = append(ser.Annotations, a)
	}
	return ser, nil
}

// historyValues returns the values of metric in the usable cells of a
// configuration, by run and commit label.
func (s *Store) historyValues(ctx context.Context, metric, cfg string) (map[[2]string][]float64, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT c.run_id, c.commit_label, m.value FROM cells c
		JOIN metrics m ON m.cell_id = c.id AND m.metric = ?
		WHERE c.config = ? AND c.status = ? AND c.saturated = 0`), metric, cfg, string(results.StatusOK))
	if err != nil {
		return nil, s.fail("reading history", err)
	}
	defer rows.Close()
	values := map[[2]string][]float64{}
	for rows.Next() {
		var run, label string
		var v float64
		if err := rows.Scan(&run, &label, &v); err != nil {
			return nil, s.fail("reading history", err)
		}
		values[[2]string{run, label}] = append(values[[2]string{run, label}], v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("reading history", err)
	}
	return values, nil
}

// points makes the series' points from the values by run and commit:
// runs in order of creation from since on, in each run the commits in
// plan order but the baseline when there are others, a point the median
// of a commit's values; and the baseline's points of the runs that have
// a point.
func (ri *runIndex) points(values map[[2]string][]float64, since time.Time) (points, baseline []Point) {
	points = []Point{}
	runs := make([]string, 0, len(ri.created))
	for id := range ri.created {
		runs = append(runs, id)
	}
	sort.Slice(runs, func(i, j int) bool {
		a, b := ri.created[runs[i]], ri.created[runs[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return runs[i] < runs[j]
	})
	for _, run := range runs {
		if ri.created[run].Before(since) {
			continue
		}
		cs := ri.commits[run]
		var base *Point
		had := len(points)
		for _, c := range cs {
			vs := values[[2]string{run, c.Label}]
			if len(vs) == 0 {
				continue
			}
			p := Point{Run: run, Time: ri.created[run], Commit: c.Label, SHA: c.SHA, Identity: c.Identity, Value: median(vs), N: len(vs)}
			if len(cs) > 1 && c.Label == ri.baseline[run] {
				base = &p
				continue
			}
			points = append(points, p)
		}
		if base != nil && len(points) > had {
			baseline = append(baseline, *base)
		}
	}
	return points, baseline
}

// AllHistory returns the series of every key (without change points),
// reading the runs once.
func (s *Store) AllHistory(ctx context.Context, keys []SeriesKey) ([]*Series, error) {
	ri, err := s.runIndex(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Series, 0, len(keys))
	for _, k := range keys {
		ser, err := s.history(ctx, HistoryQuery{Metric: k.Metric, Config: k.Config}, k.Config, ri)
		if err != nil {
			return nil, err
		}
		out = append(out, ser)
	}
	return out, nil
}

// median is the middle value of xs (the mean of the two middle ones),
// as analysis.Median has it (which is NaN for none); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
