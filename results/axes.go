package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// The axes of a configuration, as data: each is one entry of Axes, and
// a configuration's id, its point in a series, its benchfmt name, its
// grouping key, the store's point column, the flags of matrix, bisect
// and nightly and what a cell does with the value all come from there.
// Adding an axis is adding an entry (Scalar stores its values in
// Config.Extra); an axis with an effect no entry has yet also adds a
// field to Effects and reads it where the cell runs (matrix).

// Pair is one value of an axis in a configuration. Name is the
// variable's or setting's name on an axis of many (vars, settings),
// "instr" for an instruction cell's clients, empty otherwise.
type Pair struct{ Name, Value string }

// Effect is how an axis' value reaches its cell.
type Effect string

const (
	// ByShape: what the cell runs (the workload, the clients).
	ByShape Effect = "shape"
	// ByServer: the server's settings or placement; a change restarts
	// the cluster.
	ByServer Effect = "server"
	// ByPgbench: an argument of pgbench (-R, -D).
	ByPgbench Effect = "pgbench"
	// ByCondition: a background condition held through the cell.
	ByCondition Effect = "condition"
)

// Flag is how an axis is given on the command line.
type Flag struct {
	Name    string
	Aliases []string
	// Value is the default, Usage the help.
	Value, Usage string
	// Each: every flag is one axis NAME=V1,V2 (repeatable, --set,
	// --var); otherwise the flag is one LIST (its file: items are paths
	// relative to the working directory).
	Each bool
}

// AxisDef is one axis of the configurations.
type AxisDef struct {
	// Name names the axis (and its values in Config.Extra and
	// PlanOpts.Extra for a Scalar one).
	Name string
	// Flag is its flag (no Name: it has none of its own); TOML its key
	// in nightly.toml's [matrix] (empty: none).
	Flag Flag
	TOML string
	// Effect is how a value reaches the cell (apply sets it).
	Effect Effect
	// Point: the axis places a configuration in its series (a sweep's
	// rate and variables); Series drops it.
	Point bool
	// JSON are the record's fields that hold it; with Stored the store
	// keeps them in its configurations' point column.
	JSON   []string
	Stored bool
	// Check refuses a value the schema knows to be wrong (nil: any);
	// what only the instrument can tell (a condition's script, a rate
	// pgbench takes) the matrix checks.
	Check func(name, value string) error

	scalar bool
	pairs  func(c *Config, dst []Pair) []Pair
	id     func(p Pair) string
	label  func(p Pair) string // in Point; nil is id
	bench  func(p Pair) (key, value string)
	clear  func(c *Config)
	apply  func(p Pair, e *Effects)
}

// Effects are what a configuration asks of its cell: the server's
// settings and CPUs, pgbench's clients, rate and variables, the
// condition held.
type Effects struct {
	Clients, CPUs int
	Settings      map[string]string
	Rate          float64
	RateUnit      RateUnit
	Vars          map[string]string
	Condition     string
}

// RatesUsage is the help of -R.
const RatesUsage = "offered rates `LIST` a second, open loop (pgbench -R; 0 = a closed loop): a sweep, each point marked saturated or not. " +
	"In transactions (-R 500,1000), or in the workload's operations with ops after the list (-R 500,2000ops): " +
	"its file declares how many a transaction carries (-- abtest:ops-per-tx :batch), and pgbench is offered the rate divided by that"

// Axes is the registry, in the order of a configuration's id:
// workload/c64/cpu2/r1000/:batch=10/cond=xmin-holder/pgss.max=5000.
var Axes = []*AxisDef{
	{Name: "workload", Effect: ByShape, JSON: []string{"workload"},
		pairs: func(c *Config, dst []Pair) []Pair { return append(dst, Pair{Value: c.Workload}) },
		id:    func(p Pair) string { return EscapeID(p.Value) },
		bench: func(p Pair) (string, string) { return "workload", p.Value }},
	{Name: "clients", Effect: ByShape, JSON: []string{"clients", "instructions"}, TOML: "clients", Check: checkClients,
		Flag: Flag{Name: "clients", Aliases: []string{"c"}, Value: "64", Usage: "client counts `LIST`"},
		pairs: func(c *Config, dst []Pair) []Pair {
			p := Pair{Value: strconv.Itoa(c.Clients)}
			if c.Instructions {
				p.Name = "instr"
			}
			return append(dst, p)
		},
		id: func(p Pair) string {
			if p.Name == "instr" {
				return "instr"
			}
			return "c" + p.Value
		},
		bench: func(p Pair) (string, string) { return "clients", p.Value },
		apply: func(p Pair, e *Effects) { e.Clients, _ = strconv.Atoi(p.Value) }},
	{Name: "cpus", Effect: ByServer, JSON: []string{"cpus"}, TOML: "cpus",
		Flag: Flag{Name: "cpus", Aliases: []string{"C"}, Usage: "server CPU counts `LIST` (pgbench gets the other CPUs); default: not pinned"},
		pairs: func(c *Config, dst []Pair) []Pair {
			if c.CPUs == 0 {
				return append(dst, Pair{Value: "all"})
			}
			return append(dst, Pair{Value: strconv.Itoa(c.CPUs)})
		},
		id:    func(p Pair) string { return "cpu" + p.Value },
		bench: func(p Pair) (string, string) { return "cpus", p.Value },
		apply: func(p Pair, e *Effects) { e.CPUs, _ = strconv.Atoi(p.Value) }},
	{Name: "rate", Effect: ByPgbench, Point: true, JSON: []string{"rate", "rate_unit"}, Stored: true, TOML: "rates", Check: checkRate,
		Flag: Flag{Name: "rate", Aliases: []string{"R"}, Usage: RatesUsage},
		pairs: func(c *Config, dst []Pair) []Pair {
			if c.Rate <= 0 {
				return dst
			}
			return append(dst, Pair{Value: FormatRate(c.Rate) + string(c.RateUnit)})
		},
		id:    func(p Pair) string { return "r" + p.Value },
		bench: func(p Pair) (string, string) { return "rate", p.Value },
		clear: func(c *Config) { c.Rate, c.RateUnit = 0, "" },
		apply: func(p Pair, e *Effects) {
			num, ops := strings.CutSuffix(p.Value, string(PerOp))
			e.Rate, _ = strconv.ParseFloat(num, 64)
			if ops {
				e.RateUnit = PerOp
			}
		}},
	{Name: "vars", Effect: ByPgbench, Point: true, JSON: []string{"vars"}, Stored: true, TOML: "vars", Check: CheckVar,
		Flag:  Flag{Name: "var", Each: true, Usage: "pgbench variable axis `NAME=V1,V2` (-D; the workload reads :NAME; repeatable)"},
		pairs: func(c *Config, dst []Pair) []Pair { return appendSorted(dst, c.Vars) },
		id:    func(p Pair) string { return ":" + p.Name + "=" + EscapeID(p.Value) },
		label: func(p Pair) string { return ":" + p.Name + "=" + p.Value },
		bench: func(p Pair) (string, string) { return p.Name, p.Value },
		clear: func(c *Config) { c.Vars = nil },
		apply: func(p Pair, e *Effects) { setIn(&e.Vars, p) }},
	{Name: "condition", Effect: ByCondition, JSON: []string{"condition"}, Stored: true, TOML: "conditions",
		Flag: Flag{Name: "condition", Usage: "background conditions `LIST` held through warm-up and window: none, xmin-holder, idle-slot, autovacuum-off, checkpoint-storm[=S], bulk-update[=ROWS/S], file:PATH"},
		pairs: func(c *Config, dst []Pair) []Pair {
			if c.Condition == "" {
				return dst
			}
			return append(dst, Pair{Value: c.Condition})
		},
		id:    func(p Pair) string { return "cond=" + EscapeID(p.Value) },
		bench: func(p Pair) (string, string) { return "condition", p.Value },
		apply: func(p Pair, e *Effects) { e.Condition = p.Value }},
	{Name: "settings", Effect: ByServer, JSON: []string{"settings"}, TOML: "settings", Check: CheckSetting,
		Flag:  Flag{Name: "set", Each: true, Usage: "settings axis `GUC=V1,V2` (repeatable; one value is a fixed setting)"},
		pairs: func(c *Config, dst []Pair) []Pair { return appendSorted(dst, c.Settings) },
		id:    func(p Pair) string { return ShortGUC(p.Name) + "=" + EscapeID(p.Value) },
		bench: func(p Pair) (string, string) { return ShortGUC(p.Name), p.Value },
		apply: func(p Pair, e *Effects) { setIn(&e.Settings, p) }},
}

// The last axis, whatever entries come before it.
func init() { Axes = append(Axes, unknownAxes) }

// unknownAxes are the values of Config.Extra no axis of this abtest
// names (a record of a newer one): they still tell configurations
// apart, +NAME=VALUE in the id, and are stored.
var unknownAxes = &AxisDef{Name: "unknown", JSON: []string{"axes"}, Stored: true,
	pairs: func(c *Config, dst []Pair) []Pair {
		for _, k := range slices.Sorted(maps.Keys(c.Extra)) {
			if d, ok := AxisNamed(k); !ok || !d.scalar {
				dst = append(dst, Pair{k, c.Extra[k]})
			}
		}
		return dst
	},
	id:    func(p Pair) string { return "+" + EscapeID(p.Name) + "=" + EscapeID(p.Value) },
	bench: func(p Pair) (string, string) { return p.Name, p.Value },
}

// Scalar is an axis of one value a cell, kept in Config.Extra and
// PlanOpts.Extra under name: its id segment is seg and the value
// (think=5), its flag --flag LIST, its nightly key toml; apply gives the
// value its effect (nil: none but the name).
func Scalar(name, seg, flag, usage, toml string, effect Effect, check func(name, value string) error, apply func(v string, e *Effects)) *AxisDef {
	return &AxisDef{Name: name, Effect: effect, Point: effect == ByPgbench, JSON: []string{"axes"}, Stored: true, TOML: toml, Check: check, scalar: true,
		Flag: Flag{Name: flag, Usage: usage},
		pairs: func(c *Config, dst []Pair) []Pair {
			if v, ok := c.Extra[name]; ok {
				return append(dst, Pair{Name: name, Value: v})
			}
			return dst
		},
		id:    func(p Pair) string { return seg + "=" + EscapeID(p.Value) },
		bench: func(p Pair) (string, string) { return seg, p.Value },
		clear: func(c *Config) {
			if _, ok := c.Extra[name]; ok {
				c.Extra = without(c.Extra, name)
			}
		},
		apply: func(p Pair, e *Effects) {
			if apply != nil {
				apply(p.Value, e)
			}
		}}
}

// AxisNamed returns the registry's axis named name.
func AxisNamed(name string) (*AxisDef, bool) {
	i := slices.IndexFunc(Axes, func(d *AxisDef) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return Axes[i], true
}

// IsScalar reports an axis made by Scalar: its values are in
// Config.Extra and PlanOpts.Extra.
func (d *AxisDef) IsScalar() bool { return d.scalar }

// ParseScalar parses a Scalar axis' flag LIST into its values, each
// checked, none twice.
func (d *AxisDef) ParseScalar(list string) (Axis, error) {
	ax := Axis{Name: d.Name, Values: splitValues(list)}
	return ax, ax.checkValues("--"+d.Flag.Name, d.check)
}

// check is Check, or nothing.
func (d *AxisDef) check(name, value string) error {
	if d.Check == nil {
		return nil
	}
	return d.Check(name, value)
}

// checkClients refuses a client count that is no number (bench's -c;
// matrix checks its bounds).
func checkClients(_, v string) error {
	if n, err := strconv.Atoi(v); err != nil || n < 1 {
		return exitcode.BadInputf("-c %q: want a client count of at least 1", v)
	}
	return nil
}

// checkRate refuses a rate that is no number, in transactions or ops a
// second (bench's -R; matrix checks what pgbench takes).
func checkRate(_, v string) error {
	if _, err := strconv.ParseFloat(strings.TrimSuffix(v, string(PerOp)), 64); err != nil {
		return exitcode.BadInputf("-R %q: want an offered rate a second, e.g. -R 1000 (or 2000ops)", v)
	}
	return nil
}

// OneEffects are the effects of axis flag values (by axis name, as a
// command reads them: one LIST, or NAME=V a flag) for a command that
// runs one configuration and reads only the axes takes names (why says
// so): each checked, one value of each (of each name), none of another
// axis, a new one included until the command reads it.
func OneEffects(values map[string][]string, why string, takes ...string) (Effects, error) {
	var e Effects
	var seen []AxisValue
	for _, d := range Axes {
		for _, v := range values[d.Name] {
			p := Pair{Value: strings.TrimSpace(v)}
			if d.Flag.Each {
				name, val, _ := strings.Cut(v, "=")
				p = Pair{strings.TrimSpace(name), strings.TrimSpace(val)}
			}
			if p == (Pair{}) {
				continue
			}
			if f := d.Flag.Name; !slices.Contains(takes, d.Name) {
				return e, exitcode.BadInputf("--%s %s: %s; abtest matrix --%s takes it", f, v, why, f)
			}
			if strings.Contains(p.Value, ",") || slices.ContainsFunc(seen, func(o AxisValue) bool { return o.Axis == d && o.Name == p.Name }) {
				return e, exitcode.BadInputf("--%s %s: one value here, a configuration (abtest matrix sweeps lists)", d.Flag.Name, v)
			}
			if err := d.check(p.Name, p.Value); err != nil {
				return e, err
			}
			seen = append(seen, AxisValue{d, p})
			e.apply(seen[len(seen)-1])
		}
	}
	return e, nil
}

// apply gives v its effect on e.
func (e *Effects) apply(v AxisValue) {
	if v.Axis.apply != nil {
		v.Axis.apply(v.Pair, e)
	}
}

// AxisValue is one value of a configuration and its axis.
type AxisValue struct {
	Axis *AxisDef
	Pair
}

// Values appends c's values, axis by axis in the registry's order, each
// axis' in name order, to dst: what the configuration is.
func (c *Config) Values(dst []AxisValue) []AxisValue {
	var buf [4]Pair
	for _, d := range Axes {
		for _, p := range d.pairs(c, buf[:0]) {
			dst = append(dst, AxisValue{d, p})
		}
	}
	return dst
}

// AppendKey appends to b a key that is equal for two configurations
// exactly when their ids are: the values, each length-prefixed.
func (c *Config) AppendKey(b []byte) []byte {
	var buf [16]AxisValue
	for _, v := range c.Values(buf[:0]) {
		for _, s := range []string{v.Axis.Name, v.Name, v.Value} {
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, ':')
			b = append(b, s...)
		}
	}
	return b
}

// SameConfig reports whether a and b are one configuration (the same id).
func SameConfig(a, b *Config) bool {
	var x, y [16]AxisValue
	va, vb := a.Values(x[:0]), b.Values(y[:0])
	return slices.EqualFunc(va, vb, func(p, q AxisValue) bool { return p.Axis == q.Axis && p.Pair == q.Pair })
}

// BenchKeys are c's key=value sub-names of a benchmark name, raw (the
// writer escapes them): workload=churn, clients=64, cpus=all, rate=1000….
func (c Config) BenchKeys() [][2]string {
	var out [][2]string
	for _, v := range c.Values(nil) {
		k, x := v.Axis.bench(v.Pair)
		out = append(out, [2]string{k, x})
	}
	return out
}

// Effects are what c asks of its cell, each axis applied in turn.
func (c Config) Effects() Effects {
	var e Effects
	for _, v := range c.Values(nil) {
		e.apply(v)
	}
	return e
}

// PointJSON is c's values of the Stored axes as a JSON object of the
// record's own fields ({"rate":1000,"vars":{"batch":"10"}}), "" when it
// has none: the store's point column.
func (c Config) PointJSON() (string, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return "", err
	}
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, d := range Axes {
		for _, k := range d.JSON {
			if v, ok := fields[k]; ok && d.Stored && !seen[k] {
				seen[k] = true
				if b.Len() == 0 {
					b.WriteByte('{')
				} else {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%q:%s", k, v)
			}
		}
	}
	if b.Len() == 0 {
		return "", nil
	}
	b.WriteByte('}')
	return b.String(), nil
}

// ReadPoint sets c's Stored axes from a PointJSON text; a field that is
// not one of theirs is an error.
func (c *Config) ReadPoint(text string) error {
	if text == "" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return err
	}
	for k := range fields {
		if !slices.ContainsFunc(Axes, func(d *AxisDef) bool { return d.Stored && slices.Contains(d.JSON, k) }) {
			return fmt.Errorf("point %s: %q is not a field of a stored axis", text, k)
		}
	}
	return json.Unmarshal([]byte(text), c)
}

func appendSorted(dst []Pair, m map[string]string) []Pair {
	if len(m) == 1 {
		for k, v := range m {
			return append(dst, Pair{k, v})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		dst = append(dst, Pair{k, m[k]})
	}
	return dst
}

func setIn(m *map[string]string, p Pair) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[p.Name] = p.Value
}

// without is m without key k, a new map (nil when empty): a record's
// maps are shared, never written.
func without(m map[string]string, k string) map[string]string {
	var out map[string]string
	for n, v := range m {
		if n != k {
			if out == nil {
				out = map[string]string{}
			}
			out[n] = v
		}
	}
	return out
}

// labelOf names a value in Config.Point.
func (d *AxisDef) labelOf(p Pair) string {
	if d.label != nil {
		return d.label(p)
	}
	return d.id(p)
}
