package results

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// RateUnit is what an offered rate counts.
type RateUnit string

const (
	// PerTx is transactions a second, what pgbench -R offers (the
	// empty value: every rate before operations was one).
	PerTx RateUnit = ""
	// PerOp is the workload's own operations a second: a workload file
	// says how many one transaction carries ("-- abtest:ops-per-tx"),
	// and pgbench is offered the rate divided by that.
	PerOp RateUnit = "ops"
)

// Valid reports whether u is one of the units.
func (u RateUnit) Valid() bool { return u == PerTx || u == PerOp }

// MaxOpsPerTx bounds a declared number of operations per transaction.
const MaxOpsPerTx = 1e6

var opsVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// CheckOpsPerTx checks the expression of "-- abtest:ops-per-tx EXPR": a
// positive number up to MaxOpsPerTx, or :NAME, a pgbench variable of the
// script that a --var axis sets.
func CheckOpsPerTx(expr string) error {
	if name, ok := strings.CutPrefix(expr, ":"); ok {
		if !opsVarName.MatchString(name) {
			return fmt.Errorf("%q: want a positive number or :NAME, a variable of the script set by --var", expr)
		}
		return nil
	}
	_, err := opsNumber(expr)
	return err
}

// opsNumber parses a number of operations per transaction.
func opsNumber(s string) (float64, error) {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(n > 0) || n > MaxOpsPerTx || math.IsInf(n, 0) {
		return 0, fmt.Errorf("%q: want a positive number of operations per transaction, up to %g", s, float64(MaxOpsPerTx))
	}
	return n, nil
}

// OpsVar is the --var that d's operations per transaction name (":batch"
// → "batch"), or "".
func (d WorkloadDeclares) OpsVar() string {
	name, _ := strings.CutPrefix(d.OpsPerTx, ":")
	if name == d.OpsPerTx {
		return ""
	}
	return name
}

// Ops is how many operations one transaction of d's workload carries
// under the variables vars: 1 when d declares none; an error when its
// variable is not set or not a positive number.
func (d WorkloadDeclares) Ops(vars map[string]string) (float64, error) {
	if d.OpsPerTx == "" {
		return 1, nil
	}
	if name := d.OpsVar(); name != "" {
		v, ok := vars[name]
		if !ok {
			return 0, fmt.Errorf("-- abtest:ops-per-tx %s: no --var %s sets it", d.OpsPerTx, name)
		}
		n, err := opsNumber(v)
		if err != nil {
			return 0, fmt.Errorf("-- abtest:ops-per-tx %s: --var %s=%s: %w", d.OpsPerTx, name, v, err)
		}
		return n, nil
	}
	n, err := opsNumber(d.OpsPerTx)
	if err != nil {
		return 0, fmt.Errorf("-- abtest:ops-per-tx %w", err)
	}
	return n, nil
}

// OpsPerTx is how many of its workload's operations a transaction of c
// carries (the workload's Declares; 1 without, as in earlier plans,
// and for a declaration this plan cannot evaluate: the matrix refused
// such a plan before its first cell).
func (o PlanOpts) OpsPerTx(c Config) float64 {
	n, err := o.Declares[c.Workload].Ops(c.Vars)
	if err != nil {
		return 1
	}
	return n
}

// TxRate is the rate pgbench offers in configuration c, in transactions
// a second: its Rate, divided by its operations per transaction when
// the rate counts operations.
func (o PlanOpts) TxRate(c Config) float64 {
	if c.RateUnit == PerOp {
		return c.Rate / o.OpsPerTx(c)
	}
	return c.Rate
}

// OpsRate is configuration c's offered rate in its workload's
// operations a second (its transactions a second without a
// declaration); 0 in a closed loop.
func (o PlanOpts) OpsRate(c Config) float64 {
	if c.RateUnit == PerOp {
		return c.Rate
	}
	return c.Rate * o.OpsPerTx(c)
}
