package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/results"
)

// ClusterPrefix names the matrix's own clusters (cluster.MatrixPrefix):
// a matrix measures build NAME on cluster m-NAME, never on the cluster
// NAME a user started with `switch`, which it leaves as it found it.
const ClusterPrefix = cluster.MatrixPrefix

// ClusterName is the matrix's cluster for build name (cluster.ForBuild).
func ClusterName(build string) string { return cluster.ForBuild(build) }

// ClustersFile, in a results directory, lists the clusters the run
// started, as they happen: a resume after the run was killed stops them,
// as the killed run would have at its end. The user's clusters its
// builds stopped are recorded in their own states instead
// (cluster.StopRecord): any later abtest starts them again, a resume of
// this directory included, even when the run died before its plan.
const ClustersFile = "clusters.json"

// clusterLog is what ClustersFile holds.
type clusterLog struct {
	// Started are clusters this run (or a killed run of the same
	// directory) started: stopped at the end.
	Started []string `json:"started,omitempty"`
}

// loadClusterLog takes over what a killed run of dir left to undo.
func (r *run) loadClusterLog() error {
	r.started, r.restore = map[string]bool{}, map[string]bool{}
	data, err := os.ReadFile(filepath.Join(r.dir, ClustersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return exitcode.Failure(err)
	}
	var l clusterLog
	if err := json.Unmarshal(data, &l); err != nil {
		return exitcode.Failure(fmt.Errorf("%s: %w", filepath.Join(r.dir, ClustersFile), err))
	}
	for _, n := range l.Started {
		r.started[n] = true
	}
	if len(l.Started) > 0 {
		r.deps.printf("resume: taking over clusters of the previous run of %s (started %v)\n", r.dir, l.Started)
	}
	return nil
}

// ProcessesFile, in a results directory, lists the commands the run
// has running (proc.Tracker): what a SIGKILL of abtest leaves running
// (pgbench loading a server, make writing into a build, initdb), which
// the next run of the directory ends before it starts anything.
const ProcessesFile = "processes.json"

// trackProcesses ends what a killed run of the directory left running,
// then records this run's commands until the returned func is called.
func (r *run) trackProcesses() (func(), error) {
	if r.deps.Proc.DryRun {
		return func() {}, nil
	}
	path := filepath.Join(r.dir, ProcessesFile)
	ended, err := proc.EndLeftovers(path, 5*time.Second)
	for _, p := range ended {
		r.deps.printf("resume: ended %s (pid %d), left running by the killed run of %s\n", filepath.Base(p.Path), p.PID, r.dir)
	}
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("ending what the killed run left running: %w", err))
	}
	tr := proc.NewTracker(path)
	r.deps.Proc.Track = tr
	return func() {
		r.deps.Proc.Track = nil
		if err := tr.Err(); err != nil {
			r.note("%v", err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.note("%v", err)
		}
	}, nil
}

// saveClusterLog writes ClustersFile durably (before the cluster it
// names is started, so that a kill cannot lose it).
func (r *run) saveClusterLog() error {
	l := clusterLog{Started: slices.Sorted(maps.Keys(r.started))}
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return r.deps.Proc.WriteFile(filepath.Join(r.dir, ClustersFile), append(data, '\n'), 0o644)
}

// markStarted records that this run starts cluster name (unless it runs
// already, and no earlier run of this directory started it).
func (r *run) markStarted(name string) error {
	if r.started[name] {
		return nil
	}
	if dir, err := r.deps.Clusters.DataDir(name); err == nil {
		if _, running := cluster.PID(dir); running {
			return nil
		}
	}
	r.started[name] = true
	return r.saveClusterLog()
}

// recordStops remembers the clusters a build stops, to start the user's
// again at the end of the run; the cluster manager records each stop in
// the cluster's state before it stops it (why: this build, this run).
type recordStops struct {
	build.Servers
	r   *run
	why string
}

// stopRecorder is a build.Servers that records why it stops
// (cluster.Manager).
type stopRecorder interface {
	StopUsingFor(ctx context.Context, install, why string) ([]string, error)
}

func (s *recordStops) StopUsing(ctx context.Context, install string) ([]string, error) {
	var stopped []string
	var err error
	if sr, ok := s.Servers.(stopRecorder); ok {
		stopped, err = sr.StopUsingFor(ctx, install, s.why)
	} else {
		stopped, err = s.Servers.StopUsing(ctx, install)
	}
	s.r.markStopped(stopped)
	return stopped, err
}

// markStopped remembers the clusters a build stopped before installing
// over their binaries; the matrix's own are started again by their cells.
func (r *run) markStopped(names []string) {
	own := map[string]bool{}
	for _, c := range r.plan.Commits {
		own[ClusterName(c.Build)] = true
	}
	for _, n := range names {
		if own[n] {
			r.ownStopped = append(r.ownStopped, n)
		} else {
			r.restore[n] = true
		}
	}
}

// leaveClusters stops the clusters this run started and starts again the
// user's clusters its builds stopped, even after an interrupt or a
// failure: a matrix leaves the machine as it found it.
func (r *run) leaveClusters() {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cm := r.deps.Clusters
	left := false
	for _, n := range slices.Sorted(maps.Keys(r.started)) {
		if _, err := cm.Stop(ctx, n); err != nil {
			left = true
			r.note("stopping cluster %s: %v", n, err)
			continue
		}
		delete(r.started, n)
	}
	// The run's own clusters a build stopped stay stopped, as a run
	// that ends leaves them: no later command is to start them again.
	for _, n := range r.ownStopped {
		if err := cm.KeepStopped(n); err != nil {
			r.note("cluster %s: forgetting its stop record: %v", n, err)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.restore)) {
		st, err := cm.ReadState(n)
		if err == nil {
			r.deps.printf("cluster %s: starting it again (a build of this run stopped it)\n", n)
			_, err = cm.Start(ctx, n, cluster.OptionsOf(st))
		}
		if err != nil {
			left = true
			r.note("starting cluster %s again: %v (abtest switch %s starts it)", n, err, n)
			continue
		}
		delete(r.restore, n)
	}
	if left {
		_ = r.saveClusterLog()
	} else if err := os.Remove(filepath.Join(r.dir, ClustersFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		r.note("%v", err)
	}
}

func (r *run) note(format string, args ...any) {
	r.deps.warnf(format, args...)
}

// checkServer records in rec the server the cell measured, read from the
// running postmaster, and fails the cell when it is not the plan's: a
// binary replaced under it, or another build fingerprint.
func checkServer(cm *cluster.Manager, name string, commit *results.Commit, rec *results.Record) error {
	id, err := cm.Identify(name)
	if err != nil {
		return fmt.Errorf("identifying the measured server: %w", err)
	}
	rec.Server = &results.Server{Fingerprint: id.Fingerprint, Version: id.Version, Exe: id.Exe, PID: id.PID}
	if id.Replaced {
		return fmt.Errorf("the measured server (pid %d) runs a binary replaced since it started (%s): not the planned build of %s", id.PID, id.Exe, commit.Label)
	}
	if id.Fingerprint != commit.Fingerprint {
		return fmt.Errorf("the measured server (pid %d) was started from build fingerprint %s, the plan's %s is %s", id.PID, text.Short(id.Fingerprint), commit.Label, text.Short(commit.Fingerprint))
	}
	return nil
}
