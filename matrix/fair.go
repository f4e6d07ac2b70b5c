package matrix

// Fair across versions: one pgbench for every server of a run, and what
// each commit's server ran with recorded (servers.json), so the report
// can say where servers differ besides their code.

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/results"
)

var versionNumbers = regexp.MustCompile(`(\d+)(?:\.(\d+))?`)

// versionKey orders "postgres (PostgreSQL) 15.18" before "… 18.3"; a
// version it cannot read is the lowest.
func versionKey(v string) [2]int {
	m := versionNumbers.FindStringSubmatch(v)
	if m == nil {
		return [2]int{}
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return [2]int{major, minor}
}

// newer reports whether version a is newer than b.
func newer(a, b string) bool {
	ka, kb := versionKey(a), versionKey(b)
	return slices.Compare(ka[:], kb[:]) > 0
}

// choosePgbench is the one pgbench of the run's timed cells: the plan's
// (--pgbench), else the newest build's, so that every server is driven
// by the same client (an older pgbench against a newer server, or two
// pgbench versions, would make the client part of the difference).
func (r *run) choosePgbench() string {
	if p := r.plan.Options.Pgbench; p != "" {
		return p
	}
	var best *results.Commit
	for i := range r.plan.Commits {
		c := &r.plan.Commits[i]
		if best == nil || newer(c.Version, best.Version) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return filepath.Join(r.installs[best.Build], "bin", "pgbench")
}

// noteServer records, once per commit, what its server runs with
// (servers.json); a failure to read it is a warning, not a failed cell.
func (r *run) noteServer(ctx context.Context, commit *results.Commit, st *cluster.State) {
	if r.deps.Proc.DryRun {
		return
	}
	if r.servers == nil {
		r.servers, _ = results.ReadServers(r.dir)
		if r.servers == nil {
			r.servers = results.Servers{}
		}
	}
	if _, ok := r.servers[commit.Label]; ok {
		return
	}
	settings, err := cluster.ServerSettings(ctx, st)
	if err != nil {
		r.deps.warnf("%v", err)
		return
	}
	r.servers[commit.Label] = results.ServerSetup{Version: st.Version, InitdbOpts: st.InitdbOpts, InitdbPassed: st.InitdbPassed, Settings: settings}
	if err := results.WriteServers(r.dir, r.servers); err != nil {
		r.deps.warnf("writing %s: %v", results.ServersFile, err)
	}
}
