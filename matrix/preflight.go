package matrix

// The preflight (issue 39): before the first cell, each workload's
// script runs one transaction against each server it will measure, with
// the run's settings, preloads, setup SQL and pgbench variables, as its
// cells will start it. A mistake every cell would repeat (a preload the
// server cannot load, initdb options it refuses, a setting it will not
// start with, a data directory it cannot use, a script pgbench aborts,
// a custom setting a loaded library does not define) is then one line
// and exit 2 before anything is measured, instead of a run of failed
// cells that exits 0. It costs what the first cell's start costs anyway
// (the initdb and start happen once) plus about 50 ms a script: it runs
// before any warm-up, and every cell resets pg_stat_statements at its
// warm-up's start (its window's, without one) and reads its probes'
// counters as deltas after the preflight's backends have left.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/suggest"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// PreflightDir, in a results directory, is where the preflight runs its
// scripts; it is removed once the preflight is done.
const PreflightDir = "preflight"

// Preflight lists the cells the preflight runs one transaction of: the
// first of cells for each build, settings, workload and variables,
// ordered by build (its commits' order) and then by settings, so that
// each server starts once per settings.
func Preflight(p *results.Plan, cells []results.Cell) []results.Cell {
	builds := map[string]int{}
	for i, c := range p.Commits {
		if _, ok := builds[c.Build]; !ok {
			builds[c.Build] = i
		}
	}
	build := func(c results.Cell) string {
		commit, _ := p.Commit(c.Commit)
		if commit == nil {
			return ""
		}
		return commit.Build
	}
	seen := map[string]bool{}
	settings := map[string]int{} // settings (build's) → order of first sight
	var out []results.Cell
	for _, c := range cells {
		server := build(c) + "\x00" + fmt.Sprint(c.Settings) // fmt sorts map keys
		key := server + "\x00" + c.Workload + "\x00" + fmt.Sprint(c.Vars)
		if seen[key] {
			continue
		}
		seen[key] = true
		if _, ok := settings[server]; !ok {
			settings[server] = len(settings)
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b results.Cell) int {
		if d := builds[build(a)] - builds[build(b)]; d != 0 {
			return d
		}
		return settings[build(a)+"\x00"+fmt.Sprint(a.Settings)] - settings[build(b)+"\x00"+fmt.Sprint(b.Settings)]
	})
	return out
}

// PrintPreflight is -n's account of the preflight: one line a script
// run, before the cells.
func PrintPreflight(w io.Writer, p *results.Plan) {
	runs := Preflight(p, p.Cells)
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "# preflight before the first cell (exit 2 if one fails): %s of one transaction, one client (pgbench -t 1)\n", text.Count(len(runs), "run"))
	for _, c := range runs {
		commit, _ := p.Commit(c.Commit)
		what := c.Workload
		if v := c.VarsLabel(); v != "" {
			what += " " + v
		}
		fmt.Fprintf(w, "# preflight: %s on build %s%s\n", what, commit.Build, settingsLabel(c.Settings))
	}
}

// settingsLabel is " with NAME=VALUE, …" of a cell's settings.
func settingsLabel(s map[string]string) string {
	if len(s) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return " with " + strings.Join(parts, ", ")
}

// preflight runs Preflight(todo) (nothing when todo is empty: a resume
// with nothing left, or in a dry run), silently when it passes (-n
// shows it). A cause every cell would repeat is bad input (exit 2); an
// interruption, or a failure to write the run's own files, is not.
func (r *run) preflight(ctx context.Context, todo []results.Cell) error {
	runs := Preflight(r.plan, todo)
	if len(runs) == 0 || r.deps.Proc.DryRun || r.deps.Clusters == nil || r.deps.Workload == nil {
		return nil
	}
	dir := filepath.Join(r.dir, PreflightDir)
	defer os.RemoveAll(dir)
	warned, setup := map[string]bool{}, map[string]bool{}
	for i, cell := range runs {
		commit, _ := r.plan.Commit(cell.Commit)
		// The setup SQL runs with the values of the build's first cell
		// only (its first run here): the cell then finds it done, and it
		// runs again only when the values change, as without a
		// preflight (setup SQL that is not idempotent stays correct).
		first := !setup[commit.Build]
		setup[commit.Build] = true
		err := r.preflightOne(ctx, cell, filepath.Join(dir, fmt.Sprint(i+1)), first, warned)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			// The plan is written: a resume runs the preflight again.
			return exitcode.Failure(fmt.Errorf("%w in the preflight, before the first cell; no cell ran", ErrInterrupted))
		}
		if errors.Is(err, errOwnFiles) {
			return err
		}
		return exitcode.BadInputf("preflight before the first cell, %s on build %s%s: %s", cell.Workload, commit.Build, settingsLabel(cell.Settings), text.OneLine(err.Error()))
	}
	return nil
}

// errOwnFiles marks a preflight failure of the run's own files (its
// cluster log, its directory): no fault of the input.
var errOwnFiles = errors.New("matrix: the run's own files")

// preflightOne starts cell's server as the cell would (its settings,
// the plan's preloads and initdb options, its setup SQL when setup),
// checks its custom settings (checkCustom) and runs one transaction of
// its workload in dir.
func (r *run) preflightOne(ctx context.Context, cell results.Cell, dir string, setup bool, warned map[string]bool) error {
	commit, _ := r.plan.Commit(cell.Commit)
	cm := r.deps.Clusters
	name := ClusterName(commit.Build)
	opts, _, err := r.clusterOptions(cell, r.installs[commit.Build])
	if err != nil {
		return err
	}
	release, err := cm.Acquire(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	if err := r.markStarted(name); err != nil {
		return exitcode.Failure(fmt.Errorf("%w: %w", errOwnFiles, err))
	}
	st, err := cm.Start(ctx, name, opts)
	if err != nil {
		return errors.New(withCause(err))
	}
	if setup {
		if err := r.setup(ctx, st, cell); err != nil {
			return err
		}
	}
	conn := workload.Conn{Host: st.SocketDir, Port: st.Port, User: cluster.SuperUser, Database: cluster.Database}
	if err := r.checkCustom(ctx, conn, cell.Settings, warned); err != nil {
		return err
	}
	w, err := workload.Resolve(cell.Workload)
	if err != nil {
		return err
	}
	return r.deps.Workload.Preflight(ctx, workload.Spec{
		Workload: w, Conn: conn, Clients: r.maxClients, Protocol: r.plan.Options.Protocol, SleepMS: r.plan.Options.SleepMS,
		Vars: cell.Vars, Pgbench: r.pgbench, OutDir: dir,
	})
}

// checkCustom refuses a custom setting (prefix.name) of the cell that
// the running server does not know while it knows others of that prefix:
// a library loaded them, and PostgreSQL dropped the misspelt one (or
// keeps it as a placeholder nothing reads). A prefix no loaded library
// defines is a placeholder the user's SQL may read: said once.
func (r *run) checkCustom(ctx context.Context, c workload.Conn, settings map[string]string, warned map[string]bool) error {
	unknown, err := r.deps.Workload.UnknownSettings(ctx, c, slices.Sorted(maps.Keys(settings)))
	if err != nil {
		return err
	}
	for _, u := range unknown {
		prefix, _, _ := strings.Cut(u.Name, ".")
		if len(u.Like) > 0 {
			return exitcode.BadInputf("--set %s: the server does not know it, though a loaded library defines %s under %s.%s", u.Name, text.Count(len(u.Like), "setting"), prefix, suggest.DidYouMean(u.Name, u.Like, false))
		}
		if !warned[u.Name] {
			warned[u.Name] = true
			r.deps.warnf("--set %s: no loaded library defines settings under %s., so the server keeps it as a placeholder that only SQL reading it sees (preload the library that defines it, --preload LIB)", u.Name, prefix)
		}
	}
	return nil
}

// withCause is err's text with the line of the failed tool's output
// that says why in place of its last line (proc.Error shows the last):
// pgbench's first error (workload.AbortCause) rather than its closing
// "Run was aborted; the above results are incomplete.", and the line
// before a closing hint (initdb's "hint: Try "initdb --help" for more
// information.").
func withCause(err error) string {
	msg := err.Error()
	pe, ok := errors.AsType[*proc.Error](err)
	if !ok || len(pe.Tail) == 0 {
		return msg
	}
	last := pe.Tail[len(pe.Tail)-1]
	cause := ""
	switch {
	case strings.Contains(last, "Run was aborted"):
		cause = workload.AbortCause(err)
	case strings.Contains(last, "hint:") && len(pe.Tail) > 1:
		cause = pe.Tail[len(pe.Tail)-2]
	}
	if cause == "" {
		return msg
	}
	return strings.Replace(msg, last, cause, 1)
}
