package matrix

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// PresetFull is the bash harness's full suite (--preset full): it fills
// the options not given.
var PresetFull = Options{
	Workloads: "select1,churn,slow_churn,within_max", Axes: map[string][]string{"clients": {"1,16,64,128"}, "cpus": {"2,4,8"}}, PgssMax: "1000,5000",
	Seconds: 30, Repeats: 8,
}

// Options are a matrix run as a person writes it: lists as
// comma-separated text, durations in seconds. Request checks and types
// them; what only the plan can check is left to Prepare.
type Options struct {
	// Commits is -k: SPEC[,SPEC…] (ParseSpec).
	Commits string
	// Workloads and PgssMax (-m) are lists.
	Workloads, PgssMax string
	// Axes are the values of the registry's axis flags by axis name
	// (results.Axes): one LIST (-c 1,16; -R 500,1000), or one NAME=V1,V2
	// a flag (--set, --var; a value in double quotes keeps its commas).
	Axes            map[string][]string
	MustNotSaturate bool
	// InstrRepeats is --instr-repeats: runs of each instruction cell
	// before its confirmation (0: one). InstructionsOnly is
	// --instructions-only: instruction cells and no timed ones (one
	// client, no CPU placement).
	InstrRepeats     int
	InstructionsOnly bool
	// InstrTransactions is --instr-transactions (0: the default N).
	InstrTransactions int
	// InitdbOpts are --initdb-opt, Pgbench --pgbench (Request).
	InitdbOpts                  []string
	Pgbench                     string
	Seconds, Warmup, PerfWindow int
	// WarmupTx is --warmup-tx, RestartCells --restart-cells (Request).
	WarmupTx                         int
	RestartCells                     bool
	Repeats, SleepMS, MaxRepeats     int
	Build, Protocol, Order           string
	NameTemplate, Preset, Shard      string
	Seed                             int64
	Perf, Instructions, UntilDecided bool
	Budget                           time.Duration
	// Extensions, Preload and SetupSQL are --extension DIR, --preload
	// LIB (repeatable, or lists) and --setup-sql FILE (Request).
	Extensions, Preload []string
	SetupSQL            string
	// BuildOptions are the build's options besides its type (switch
	// -b's: profiling, meson and configure options).
	BuildOptions build.Options
	// Given reports whether an option was given by its flag's long name
	// (commits, clients, cpus, …): a preset fills only the others, an
	// explicit -C is not trimmed to the host, shards and a one-commit
	// run need explicit values. Nil means none was.
	Given func(flag string) bool
	// Getenv reads the shard of --shard auto; Now seeds the order when
	// no seed is given.
	Getenv func(string) string
	Now    time.Time
}

func (o *Options) given(flag string) bool { return o.Given != nil && o.Given(flag) }

// preset returns the preset's value of a list option not given.
func (o *Options) preset(flag, own, preset string) string {
	if o.Preset == "full" && !o.given(flag) {
		return preset
	}
	return own
}

// list is the one LIST of the axis named name (the preset's when its
// flag was not given).
func (o *Options) list(d *results.AxisDef) string {
	return o.preset(d.Flag.Name, strings.Join(o.Axes[d.Name], ","), strings.Join(PresetFull.Axes[d.Name], ","))
}

// Request checks o and returns the matrix.Request it asks for.
func (o Options) Request() (Request, error) {
	if o.Preset != "" && o.Preset != "full" {
		return Request{}, exitcode.BadInputf("--preset %q: the preset is full", o.Preset)
	}
	if o.given("instr-transactions") && o.InstrTransactions == 0 {
		// In a Request 0 means the default; on the command line it is
		// a mistake.
		return Request{}, exitcode.BadInputf("--instr-transactions 0: want 1 to 1000000 transactions per instruction run")
	}
	r := Request{
		NameTemplate: o.NameTemplate, Protocol: o.Protocol, SleepMS: o.SleepMS, Order: Order(o.Order), Seed: o.Seed,
		Perf: o.Perf, Repeats: o.Repeats, Instructions: o.Instructions, MustNotSaturate: o.MustNotSaturate, InstrRepeats: o.InstrRepeats, InstrTransactions: o.InstrTransactions, InitdbOpts: o.InitdbOpts, Pgbench: o.Pgbench,
		Adaptive:     Adaptive{UntilDecided: o.UntilDecided, MaxRepeats: o.MaxRepeats, Budget: o.Budget},
		BuildOptions: o.BuildOptions, Extensions: o.Extensions, SetupSQL: o.SetupSQL,
	}
	for _, l := range o.Preload {
		for _, lib := range strings.Split(l, ",") {
			r.Preload = append(r.Preload, strings.TrimSpace(lib))
		}
	}
	if !o.given("seed") {
		r.Seed = o.Now.UnixNano() % 1_000_000_007
	}
	if err := o.lists(&r); err != nil {
		return r, err
	}
	if err := o.durations(&r); err != nil {
		return r, err
	}
	var err error
	if r.Build, err = build.ParseType(o.Build); err != nil {
		return r, err
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if r.Shard, err = ParseShardEnv(o.Shard, getenv); err != nil {
		return r, err
	} else if r.Shard.N > 1 && !o.given("seed") {
		return r, exitcode.BadInputf("--shard %s: give --seed N, the same on every shard, so that the shards make one run", o.Shard)
	}
	if len(r.Commits) == 1 && !o.given("repeats") {
		return r, exitcode.BadInputf("-k %s: one commit has nothing to compare with; give two (-k base,patch), or pass -r N for a noise run of it alone", r.Commits[0].Label)
	}
	return r, o.instructionsOnly(&r)
}

// instructionsOnly plans instruction cells alone (--instructions-only):
// the CPU-cost verdict of a change without the timed cells' minutes. An
// instruction cell runs one client with no CPU placement, so -c (other
// than 1), -C and the options of timed cells are refused, not ignored.
func (o *Options) instructionsOnly(r *Request) error {
	if !o.InstructionsOnly {
		return nil
	}
	for _, f := range []struct{ flag, name string }{{"cpus", "-C"}, {"until-decided", "--until-decided"}, {"perf", "--perf"}, {"sleep", "-S"}} {
		if o.given(f.flag) {
			return exitcode.BadInputf("%s with --instructions-only: an instruction cell runs one client, unpinned, for a count of transactions; drop %s, or use --instructions to add instruction cells to timed ones", f.name, f.name)
		}
	}
	if !o.given("clients") {
		r.Axes["clients"] = []string{"1"}
	}
	delete(r.Axes, "cpus")
	r.InstructionsOnly = true
	return nil
}

// lists parses the commits and ParseAxes the rest.
func (o *Options) lists(r *Request) error {
	var err error
	if r.Commits, err = ParseSpecs(o.Commits); err != nil {
		return err
	}
	return o.ParseAxes(r)
}

// ParseAxes sets r's workloads and axes from o's (matrix's and bisect's
// flags): the preset's lists where no flag was given, -m first among the
// settings. It parses them as Request.Check does, so that a bad value is
// refused here.
func (o *Options) ParseAxes(r *Request) error {
	var err error
	if r.Workloads, err = WorkloadNames(o.preset("workloads", o.Workloads, PresetFull.Workloads)); err != nil {
		return err
	}
	r.Axes = map[string][]string{}
	for _, d := range results.Axes {
		list := o.list(d)
		if d.Name == "cpus" {
			if list, err = o.cpuCounts(list); err != nil {
				return err
			}
		}
		if d.Flag.Each && len(o.Axes[d.Name]) > 0 {
			r.Axes[d.Name] = slices.Clone(o.Axes[d.Name])
		} else if list != "" {
			r.Axes[d.Name] = []string{list}
		}
	}
	pgss := o.preset("pgss-max", o.PgssMax, PresetFull.PgssMax)
	if _, err := splitInts("-m", pgss); err != nil {
		return err
	}
	for _, s := range o.Axes["settings"] {
		if name, _, _ := results.ParseSetting(s); name == results.PgssMax {
			return exitcode.BadInputf("--set %s: use -m for pg_stat_statements.max", name)
		}
	}
	r.Axes["settings"] = slices.Insert(r.Axes["settings"], 0, results.PgssMax+"="+pgss)
	_, err = r.planAxes()
	return err
}

// planAxes parses r's workloads and axes into a plan's options, each
// axis of the registry in turn, a condition's own settings joined to the
// settings (conditionSettings).
func (r *Request) planAxes() (results.PlanOpts, error) {
	o := results.PlanOpts{Workloads: r.Workloads}
	for name := range r.Axes {
		if d, ok := results.AxisNamed(name); !ok || d.Flag.Name == "" {
			return o, exitcode.BadInputf("matrix: axis %q: not an axis of this abtest", name)
		}
	}
	for _, d := range results.Axes {
		if err := parseAxis(d, r.Axes[d.Name], &o); err != nil {
			return o, err
		}
	}
	var err error
	o.Settings, err = conditionSettings(o.Settings, o.Conditions)
	return o, err
}

// parseAxis sets o's field of the axis d from its flag's values: one
// LIST in items, or one NAME=V1,V2 an item (settings, vars).
func parseAxis(d *results.AxisDef, items []string, o *results.PlanOpts) (err error) {
	switch list := strings.Join(items, ","); d.Name {
	case "clients":
		o.Clients, err = splitInts("-c", list)
	case "cpus":
		o.CPUs, err = splitInts("-C", list)
	case "rate":
		o.Rates, o.RateUnit, err = ParseRateList(list)
	case "condition":
		o.Conditions, err = parseConditions(list)
	case "settings", "vars":
		parse, axes := results.ParseAxis, &o.Settings
		if d.Name == "vars" {
			parse, axes = results.ParseVarAxis, &o.Vars
		}
		for _, s := range items {
			ax, err := parse(s)
			if err != nil {
				return err
			}
			*axes = append(*axes, ax)
		}
	default:
		if d.IsScalar() && list != "" {
			ax, err := d.ParseScalar(list)
			o.Extra = append(o.Extra, ax)
			return err
		}
	}
	return err
}

// conditionSettings adds the settings the conditions need as fixed
// settings of every configuration (the condition stays the only
// difference between a cell under it and one without), refusing a
// settings axis that contradicts them.
func conditionSettings(axes []results.Axis, conds []string) ([]results.Axis, error) {
	for _, c := range conds {
		for name, v := range workload.ConditionSettings(c) {
			i := slices.IndexFunc(axes, func(a results.Axis) bool { return a.Name == name })
			switch {
			case i < 0:
				axes = append(axes, results.Axis{Name: name, Values: []string{v}})
			case !slices.Equal(axes[i].Values, []string{v}):
				return nil, exitcode.BadInputf("--condition %s needs %s=%s in every cell; drop --set %s", c, name, v, name)
			}
		}
	}
	return axes, nil
}

// ParseRateList parses matrix -R (results.RatesUsage): offered rates a second,
// each from 0 (a closed loop) to workload.MaxRate, none twice, and what
// they count: transactions, or the workload's operations when the list
// ends in "ops" ("500,2000ops"; "500ops,2000ops" says the same, "tx"
// the transactions of the default). One list has one unit. Empty is the
// closed loop alone.
func ParseRateList(list string) ([]float64, results.RateUnit, error) {
	if strings.TrimSpace(list) == "" {
		return nil, results.PerTx, nil
	}
	var out []float64
	unit, given := results.PerTx, ""
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		num, u := f, ""
		for _, suffix := range []string{string(results.PerOp), "tx"} {
			if n, ok := strings.CutSuffix(f, suffix); ok {
				num, u = strings.TrimSpace(n), suffix
			}
		}
		if u != "" {
			if given != "" && u != given {
				return nil, "", exitcode.BadInputf("-R %q: one unit for the list: all in transactions a second, or all in operations (-R 500,2000ops)", list)
			}
			given = u
		}
		r, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return nil, "", badRates(list)
		}
		out = append(out, r)
	}
	if given == string(results.PerOp) {
		unit = results.PerOp
	}
	for i, r := range out {
		if workload.CheckRate(r) != nil || slices.Contains(out[:i], r) {
			return nil, "", badRates(list)
		}
	}
	return out, unit, nil
}

// badRates says what -R takes.
func badRates(shown string) error {
	return exitcode.BadInputf("-R %q: want offered rates a second, each once, from 0 (a closed loop) to %g, in transactions (-R 500,1000,4000) or, with ops after the list, in the workload's operations (-R 500,2000ops)", shown, workload.MaxRate)
}

// parseConditions parses --condition: background conditions, each once
// (condition.Check). Empty is none alone.
func parseConditions(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, c := range strings.Split(list, ",") {
		c = strings.TrimSpace(c)
		if slices.Contains(out, c) {
			return nil, exitcode.BadInputf("--condition %s given twice", c)
		}
		if err := workload.CheckCondition(c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// durations sets the measured, warm-up and perf durations and, under
// the preset, its repeats.
func (o *Options) durations(r *Request) error {
	var err error
	if r.Duration, err = Seconds(o.Seconds, "-d"); err != nil {
		return err
	}
	if r.Warmup, err = Seconds(o.Warmup, "--warmup"); err != nil {
		return err
	}
	r.WarmupTx, r.RestartCells = o.WarmupTx, o.RestartCells
	r.Designable = o.Given != nil && !o.given("duration") && !o.given("repeats") && o.Preset == ""
	if o.WarmupTx != 0 {
		if o.given("warmup") {
			return exitcode.BadInputf("--warmup and --warmup-tx: give one warm-up, in seconds or in transactions")
		}
		r.Warmup = 0
	}
	if o.Preset == "full" {
		if !o.given("repeats") {
			r.Repeats = PresetFull.Repeats
		}
		if !o.given("duration") {
			r.Duration = time.Duration(PresetFull.Seconds) * time.Second
		}
	}
	if r.Perf {
		pw, err := Seconds(o.PerfWindow, "--perf-window")
		if err != nil {
			return err
		}
		r.PerfWindow = min(pw, r.Duration)
	}
	return nil
}

// Seconds is n seconds as a duration, bounded (0 to MaxDuration) so that
// no product overflows; flag names the option in the error.
func Seconds(n int, flag string) (time.Duration, error) {
	most := int(MaxDuration / time.Second)
	if n < 0 || n > most {
		return 0, exitcode.BadInputf("%s %d: want 0 to %d seconds", flag, n, most)
	}
	return time.Duration(n) * time.Second, nil
}

// splitInts parses a comma-separated list of positive numbers.
func splitInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, exitcode.BadInputf("%s %q: want a comma-separated list of positive numbers", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseSpecs parses -k: comma-separated specs (ParseSpec).
func ParseSpecs(specs string) ([]Commit, error) {
	if specs == "" {
		return nil, exitcode.BadInputf("matrix: -k SPEC[,SPEC…] is required, e.g. -k base,patch")
	}
	var out []Commit
	for _, s := range strings.Split(specs, ",") {
		c, err := ParseSpec(strings.TrimSpace(s))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// cpuCounts checks -C's list; the full preset's larger counts are
// dropped on a smaller host.
func (o *Options) cpuCounts(list string) (string, error) {
	counts, err := splitInts("-C", list)
	if err != nil || list == "" || o.given("cpus") {
		return list, err
	}
	online, err := cluster.AllowedCPUs()
	if err != nil {
		return "", exitcode.Failure(err)
	}
	var kept []string
	for _, n := range counts {
		if n <= len(online) {
			kept = append(kept, strconv.Itoa(n))
		}
	}
	return strings.Join(kept, ","), nil
}

// WorkloadNames checks a -w list and returns its items as typed (file:
// items keep their path, so the cells can resolve them again).
func WorkloadNames(list string) ([]string, error) {
	if _, err := workload.ResolveList(list); err != nil {
		return nil, err
	}
	var names []string
	for _, item := range strings.Split(list, ",") {
		if item = strings.TrimSpace(item); item != "" {
			names = append(names, item)
		}
	}
	return names, nil
}

// planFlags are the long names of the flags that decide a plan besides
// the axes' (results.Axes): a resume takes the plan from its directory
// and refuses them.
var planFlags = []string{"commits", "workloads", "duration", "repeats", "pgss-max", "must-not-saturate", "instr-repeats", "instr-transactions", "initdb-opt", "pgbench", "build", "protocol",
	"sleep", "warmup", "warmup-tx", "restart-cells", "order", "seed", "shard", "preset", "name-template", "perf", "perf-window", "until-decided", "max-repeats", "budget", "instructions",
	"profiling", "meson-opt", "configure-opt", "extension", "preload", "setup-sql"}

// ResumePlan returns the plan stored in dir, to run its missing cells.
// given reports the options given again by their flags' long names: a
// resume runs the stored plan, so a plan option is a usage error.
func ResumePlan(dir string, given func(flag string) bool) (*results.Plan, error) {
	flags := planFlags[:1:1] // -k, the axes, the others
	for _, d := range results.Axes {
		if d.Flag.Name != "" {
			flags = append(flags, d.Flag.Name)
		}
	}
	flags = append(flags, planFlags[1:]...)
	if given := slices.DeleteFunc(flags, func(f string) bool { return given == nil || !given(f) }); len(given) > 0 {
		return nil, exitcode.BadInputf("--resume %s runs the plan stored there; drop --%s (or start a new run with -o)", dir, strings.Join(given, ", --"))
	}
	return results.ReadPlan(dir)
}
