package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/text"

	"github.com/pgabtest/abtest/internal/host"
)

// Version is the schema version this abtest writes.
const Version = 2

// Commit is one arm of the comparison.
type Commit struct {
	Label string `json:"label"`
	// Ref is the git ref as typed; empty for a prebuilt installation.
	Ref string `json:"ref,omitempty"`
	// Patches are patch files applied on top of Ref.
	Patches []Patch `json:"patches,omitempty"`
	// Install is a prebuilt installation (install:DIR).
	Install string `json:"install,omitempty"`
	// SHA is Ref resolved when the plan was made.
	SHA string `json:"sha,omitempty"`
	// Build names the worktree, build and cluster the commit runs on.
	// Commits with the same ref and patches share one (an A/A run).
	Build string `json:"build"`
	// Fingerprint and Version are filled after the build.
	Fingerprint string `json:"fingerprint,omitempty"`
	Version     string `json:"version,omitempty"`
	BuildType   string `json:"build_type,omitempty"`
	// Extensions are the extensions built into the build (matrix
	// --extension), filled after the builds.
	Extensions []Extension `json:"extensions,omitempty"`
}

// Identity is what makes two commits the same build: the sha and the
// patches' checksums (or the prebuilt installation).
func (c Commit) Identity() string {
	if c.Install != "" {
		return "install:" + c.Install
	}
	var b strings.Builder
	b.WriteString(c.SHA)
	for _, p := range c.Patches {
		b.WriteString("+")
		b.WriteString(p.SHA256)
	}
	return b.String()
}

// Patch is a patch file and its checksum.
type Patch struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// Config is one point of the matrix without its commit and repeat.
type Config struct {
	Workload string `json:"workload"`
	Clients  int    `json:"clients"`
	// CPUs pins the server to that many CPUs; 0 means not pinned.
	CPUs     int               `json:"cpus"`
	Settings map[string]string `json:"settings"`
	// Instructions marks an instruction cell (matrix --instructions):
	// instructions per transaction of one client, not a timed run.
	Instructions bool `json:"instructions,omitempty"`
	// Rate is the offered load (an open loop) in RateUnit a second: in
	// transactions (pgbench -R) or in the workload's operations, which
	// pgbench is offered divided by the cell's operations per
	// transaction (PlanOpts.TxRate); 0 is a closed loop. Instruction
	// cells have none.
	Rate float64 `json:"rate,omitempty"`
	// RateUnit is what Rate counts; empty (transactions) in a closed
	// loop and in the records of earlier versions.
	RateUnit RateUnit `json:"rate_unit,omitempty"`
	// Vars are pgbench variables (-D NAME=VALUE) the workload's script
	// reads as :NAME.
	Vars map[string]string `json:"vars,omitempty"`
	// Condition is the background condition held through the warm-up
	// and the window (package condition); empty is none.
	Condition string `json:"condition,omitempty"`
	// Extra are the values of the Scalar axes of the registry (Axes),
	// by axis name: those without a field of their own.
	Extra map[string]string `json:"axes,omitempty"`
}

// Open reports whether the configuration is an open loop: an offered
// rate, whose point may saturate.
func (c Config) Open() bool { return c.Rate > 0 }

// Series is the configuration without its point in a sweep (its rate and
// variables): the configurations of one series differ only there.
func (c Config) Series() Config {
	for _, d := range Axes {
		if d.Point {
			d.clear(&c)
		}
	}
	return c
}

// RateLabel names the configuration's offered rate as its id does:
// "r1000" (transactions a second), "r2000ops" (operations a second), or
// "" in a closed loop.
func (c Config) RateLabel() string {
	if c.Rate <= 0 {
		return ""
	}
	return "r" + FormatRate(c.Rate) + string(c.RateUnit)
}

// Point names the configuration's point in its series: "r1000 :batch=10",
// "r2000ops :batch=10", or "closed" for a closed loop without variables.
func (c Config) Point() string {
	var parts []string
	for _, v := range c.Values(nil) {
		if v.Axis.Point {
			parts = append(parts, v.Axis.labelOf(v.Pair))
		}
	}
	if len(parts) == 0 {
		return "closed"
	}
	return strings.Join(parts, " ")
}

// VarsLabel names the configuration's variables, ":batch=10 :n=2", or
// "" without any.
func (c Config) VarsLabel() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.Vars)) {
		parts = append(parts, ":"+k+"="+c.Vars[k])
	}
	return strings.Join(parts, " ")
}

// FormatRate writes an offered rate as its shortest decimal: 1000, 0.5.
func FormatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// ID names the configuration: churn/c64/cpu2/pgss.max=5000, or
// churn/instr/cpuall/pgss.max=5000 for an instruction cell; an offered
// rate, variables and a condition come before the settings, each only
// when there is one: churn/c64/cpuall/r1000/:batch=10/cond=xmin-holder/
// pgss.max=5000, a rate in operations r2000ops (a closed loop's id is
// what it was before rates, a rate in transactions what it was before
// operations). It is the
// one name of a configuration in plan.json, cell ids and directories,
// records, the analysis, the store and the dashboard: distinct
// configurations have distinct ids, because the workload and the values
// are escaped (EscapeID), so a value holding "/", "," or "%" cannot make
// one id read as another.
func (c Config) ID() string {
	var b strings.Builder
	var buf [16]AxisValue
	for i, v := range c.Values(buf[:0]) {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(v.Axis.id(v.Pair))
	}
	return b.String()
}

// EscapeID percent-encodes the bytes of s that separate the parts of an
// id ("/"), of a list of ids (","), the escape itself ("%") and control
// characters; everything else, spaces and "=" included, stays readable.
func EscapeID(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '/' || c == ',' || c == '%' || c < 0x20 || c == 0x7f {
			percent(&b, c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// percent writes c as %XX.
func percent(b *strings.Builder, c byte) {
	const hex = "0123456789ABCDEF"
	b.WriteByte('%')
	b.WriteByte(hex[c>>4])
	b.WriteByte(hex[c&15])
}

// ShortGUC abbreviates pg_stat_statements.* to pgss.* in names.
func ShortGUC(k string) string {
	return strings.Replace(k, "pg_stat_statements.", "pgss.", 1)
}

// Cell is one planned measurement: a configuration, a repeat, a commit.
type Cell struct {
	ID     string `json:"id"`
	Seq    int    `json:"seq"`
	Commit string `json:"commit"`
	Repeat int    `json:"repeat"`
	Config
}

// Axis is one named axis of a plan: a name and its values in the plan's
// order. A settings axis names a GUC (--set), a variable axis a pgbench
// variable (--var).
type Axis struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// FindingStatus says how a host check came out.
type FindingStatus string

const (
	FindingOK   FindingStatus = "ok"
	FindingWarn FindingStatus = "warn"
	FindingFail FindingStatus = "fail"
)

// Finding is one host check (abtest doctor): its status, why it matters
// for the numbers and how to fix it.
type Finding struct {
	Check  string        `json:"check"`
	Status FindingStatus `json:"status"`
	Value  string        `json:"value"`
	Why    string        `json:"why,omitempty"`
	Fix    string        `json:"fix,omitempty"`
}

// Plan is the whole run, decided before anything runs.
type Plan struct {
	Version  int       `json:"version"`
	Commits  []Commit  `json:"commits"`
	Baseline string    `json:"baseline"`
	Options  PlanOpts  `json:"options"`
	Configs  []Config  `json:"configs"`
	Cells    []Cell    `json:"cells"`
	Shard    string    `json:"shard"`
	Created  time.Time `json:"created"`
	Host     host.Host `json:"host"`
	// Metrics are the definitions the run was made under.
	Metrics Metrics `json:"metrics"`
	// AbtestVersion is the version of abtest that made the plan.
	AbtestVersion string `json:"abtest_version"`
	// Doctor is what abtest doctor found on the host when the plan was
	// made.
	Doctor []Finding `json:"doctor,omitempty"`
}

// PlanOpts are the plan's fixed parameters.
type PlanOpts struct {
	Workloads []string `json:"workloads"`
	Clients   []int    `json:"clients"`
	CPUs      []int    `json:"cpus"`
	Settings  []Axis   `json:"settings"`
	// Rates are the offered rates (matrix -R; 0 a closed loop), Vars the
	// pgbench variable axes (--var) and Conditions the background
	// conditions (--condition): each, like the settings, an axis of the
	// configurations. Empty means the one closed loop, no variables, no
	// condition.
	Rates []float64 `json:"rates,omitempty"`
	// RateUnit is what the rates count (matrix -R …ops): empty,
	// transactions a second, or operations a second of each workload's
	// "-- abtest:ops-per-tx" (Declares).
	RateUnit   RateUnit `json:"rate_unit,omitempty"`
	Vars       []Axis   `json:"vars,omitempty"`
	Conditions []string `json:"conditions,omitempty"`
	// Extra are the values of the registry's Scalar axes (Axes), one
	// Axis each, named as the axis.
	Extra []Axis `json:"axes,omitempty"`
	// InstrRepeats is how many times each instruction cell runs before
	// a confirmation block (matrix --instr-repeats; -r is the timed
	// cells'); 0, in plans before it, means every repeat has them.
	InstrRepeats int `json:"instr_repeats,omitempty"`
	// InstrTransactions is N of each instruction cell (matrix
	// --instr-transactions); 0 is workload.DefaultInstrTransactions.
	InstrTransactions int `json:"instr_transactions,omitempty"`
	// NoInstrConfirm: no confirmation block (bisect's steps, whose good
	// and bad differ by design and are measured again at every step).
	NoInstrConfirm bool `json:"no_instr_confirm,omitempty"`
	// InitdbOpts are initdb options for every cluster of the run
	// (--initdb-opt); Pgbench the one pgbench of its timed cells
	// (--pgbench; empty: the newest build's).
	InitdbOpts []string `json:"initdb_opts,omitempty"`
	Pgbench    string   `json:"pgbench,omitempty"`
	// MustNotSaturate makes a saturated cell of a sweep leave its
	// configuration incomplete (the gate fails), as it always does
	// without rates; by default a sweep reports a saturated point.
	MustNotSaturate bool    `json:"must_not_saturate,omitempty"`
	Repeats         int     `json:"repeats"`
	DurationS       float64 `json:"duration_s"`
	WarmupS         float64 `json:"warmup_s"`
	// WarmupTx, when set, is the warm-up as transactions per client
	// (matrix --warmup-tx, pgbench -t) in place of WarmupS's seconds.
	WarmupTx int `json:"warmup_tx,omitempty"`
	// Design says where the cell length and repeats came from when the
	// user gave neither: this host's measured noise (pipeline.Prepare).
	Design string `json:"design,omitempty"`
	// RestartCells restarts the server before every timed cell (matrix
	// --restart-cells): fresh shared memory, caches and backends.
	RestartCells bool   `json:"restart_cells,omitempty"`
	Protocol     string `json:"protocol"`
	SleepMS      int    `json:"sleep_ms,omitempty"`
	BuildType    string `json:"build_type"`
	// Profiling, MesonOpts and ConfigureOpts are the builds' options
	// beside the type (matrix --profiling, --meson-opt, --configure-opt):
	// they change what is measured, so a resume builds with them too.
	Profiling     bool     `json:"profiling,omitempty"`
	MesonOpts     []string `json:"meson_opts,omitempty"`
	ConfigureOpts []string `json:"configure_opts,omitempty"`
	Order         string   `json:"order"`
	Seed          int64    `json:"seed"`
	Perf          bool     `json:"perf,omitempty"`
	PerfWindowS   float64  `json:"perf_window_s,omitempty"`
	// UntilDecided, MaxRepeats and BudgetS are matrix --until-decided:
	// extra blocks for undecided configurations, up to MaxRepeats repeats
	// and BudgetS seconds of extra blocks (0: no time bound).
	UntilDecided bool    `json:"until_decided,omitempty"`
	MaxRepeats   int     `json:"max_repeats,omitempty"`
	BudgetS      float64 `json:"budget_s,omitempty"`
	// UntilStep is how many blocks each look adds (the planned repeats);
	// 0, in the plans of earlier versions, means 1.
	UntilStep int `json:"until_step,omitempty"`

	// Instructions adds an instruction cell per commit, workload and
	// settings (matrix --instructions); InstructionsOnly plans no timed
	// cells.
	Instructions     bool `json:"instructions,omitempty"`
	InstructionsOnly bool `json:"instructions_only,omitempty"`

	// Extensions are the extension source trees built into every build
	// (--extension), Preload the libraries every cluster preloads beside
	// pg_stat_statements (--preload), SetupSQL the file run in every
	// cluster before its cells (--setup-sql; SetupSQLSHA256 its content
	// when the plan was made). See Extension and SetupSQL.
	Extensions     []string `json:"extensions,omitempty"`
	Preload        []string `json:"preload,omitempty"`
	SetupSQL       string   `json:"setup_sql,omitempty"`
	SetupSQLSHA256 string   `json:"setup_sql_sha256,omitempty"`

	// Declares is what each workload file says of itself beyond its
	// metrics, by workload name (-- abtest:primary, -- abtest:ops-per-tx);
	// absent for the built-in workloads and in earlier plans.
	Declares map[string]WorkloadDeclares `json:"declares,omitempty"`
}

// WorkloadDeclares is what a workload file declares of itself.
type WorkloadDeclares struct {
	// Primary is the metric its open-loop configurations are judged by
	// first ("-- abtest:primary NAME"); empty: latency_p99_ms there.
	// A closed loop's primary stays tps.
	Primary string `json:"primary,omitempty"`
	// OpsPerTx is how many of the user's operations one transaction is
	// ("-- abtest:ops-per-tx EXPR": a positive number or a :variable of
	// the script, set by --var); empty: 1.
	OpsPerTx string `json:"ops_per_tx,omitempty"`
}

// ShownID is a configuration (or cell) id as a person reads it: its
// workload named as they know it (ShownWorkload), the rest as is
// (file:%2Fwork%2Fx%2Fticker.sql/c1/… is ticker.sql/c1/…).
func (p *Plan) ShownID(id string) string {
	if p == nil {
		return id
	}
	for _, wl := range p.Options.Workloads {
		if e := EscapeID(wl); id == e || strings.HasPrefix(id, e+"/") {
			return p.ShownWorkload(wl) + id[len(e):]
		}
	}
	return id
}

// ShownWorkload is a workload's name decoded: a workload file's base
// name (file:/work/x/ticker.sql is ticker.sql), or its path when
// another workload file of the run has the same base name.
func (p *Plan) ShownWorkload(wl string) string {
	path, ok := strings.CutPrefix(wl, "file:")
	if !ok {
		return wl
	}
	base := filepath.Base(path)
	for _, o := range p.Options.Workloads {
		if op, ok := strings.CutPrefix(o, "file:"); ok && o != wl && filepath.Base(op) == base {
			return path
		}
	}
	return base
}

// What says what commit c measures, in one line: its ref and short
// sha, or the install it runs, then its patches' file names.
func (c Commit) What() string {
	what := c.Ref + " " + text.Short(c.SHA)
	if c.Install != "" {
		what = "install " + c.Install
	}
	for _, pa := range c.Patches {
		what += " + " + filepath.Base(pa.File)
	}
	return what
}

// Commit returns the plan's commit labelled label.
func (p *Plan) Commit(label string) (*Commit, bool) {
	for i := range p.Commits {
		if p.Commits[i].Label == label {
			return &p.Commits[i], true
		}
	}
	return nil, false
}

// Labels returns the commits' labels in plan order.
func (p *Plan) Labels() []string {
	out := make([]string, len(p.Commits))
	for i, c := range p.Commits {
		out[i] = c.Label
	}
	return out
}

// Diff lists how plan b differs from plan a in what decides the cells
// (commits and their shas and patches, axes, repeats, durations, order,
// seed, shard); empty when a resume may go on.
func Diff(a, b *Plan) []string {
	var out []string
	ids := func(p *Plan) string {
		var parts []string
		for _, c := range p.Commits {
			parts = append(parts, c.Label+"="+c.Ref+"@"+c.Identity())
		}
		return strings.Join(parts, ",")
	}
	if x, y := ids(a), ids(b); x != y {
		out = append(out, fmt.Sprintf("commits: %s -> %s", x, y))
	}
	if x, y := jsonString(a.Options), jsonString(b.Options); x != y {
		out = append(out, fmt.Sprintf("options: %s -> %s", x, y))
	}
	if a.Shard != b.Shard {
		out = append(out, fmt.Sprintf("shard: %s -> %s", a.Shard, b.Shard))
	}
	return out
}

func jsonString(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
