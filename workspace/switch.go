package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/worktree"
)

// Request is one `abtest switch`: the steps asked for, done in this
// order: move the worktree to Commit, apply Patches, build, start the
// cluster. Remove and Stop stand alone.
type Request struct {
	Name    string
	Commit  string
	Patches []string
	// Build, when set, builds and installs the worktree.
	Build *BuildSpec
	// Cluster, when set, starts (or restarts) the cluster.
	Cluster *ClusterSpec
	// Remove stops the cluster and removes worktree, install and data;
	// Stop stops the cluster, even while a matrix measures on it when
	// Force.
	Remove, Stop, Force bool
	// Prune, alone, removes the socket directories whose cluster is gone
	// (cluster.Manager.Prune).
	Prune bool
}

// BuildSpec is a build as asked for.
type BuildSpec struct {
	// Type is release, debug or debug_noassert.
	Type                     string
	MesonOpts, ConfigureOpts []string
	Profiling, NoCCache      bool
	// Force rebuilds even when the fingerprint is unchanged.
	Force bool
	// Extensions are extension source trees built with PGXS into the
	// build after it (build.Builder.BuildExtension).
	Extensions []string
}

// ClusterSpec is a cluster start as asked for, before validation.
type ClusterSpec struct {
	// Port is a number, "auto" for a free one, or "" for the previous
	// one (else auto).
	Port string
	// PgssMax is pg_stat_statements.max (at least 100); MaxClients the
	// largest client count to size max_connections for.
	PgssMax, MaxClients int
	Listen              string
	DataChecksums       bool
	// Install is a prebuilt installation; "" picks one (InstallFor).
	Install string
	// Recreate makes the data directory anew.
	Recreate bool
	// Settings are GUC=VALUE, applied last.
	Settings []string
	// CPUs is a CPU count or list to pin the server to.
	CPUs string
}

// Options checks s and returns the cluster options for install.
func (s *ClusterSpec) Options(install string) (cluster.Options, error) {
	o := cluster.Options{
		Install: install, PgssMax: s.PgssMax, MaxClients: s.MaxClients, Listen: s.Listen,
		DataChecksums: s.DataChecksums, Recreate: s.Recreate,
	}
	switch p := s.Port; p {
	case "":
	case "auto":
		o.AutoPort = true
	default:
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return o, exitcode.BadInputf("-p %q: want a port number (1-65535) or auto", p)
		}
		o.Port = n
	}
	if o.PgssMax < 100 {
		return o, exitcode.BadInputf("-m %d: pg_stat_statements.max must be at least 100", o.PgssMax)
	}
	if o.MaxClients < 1 {
		return o, exitcode.BadInputf("--max-clients %d: want at least 1", o.MaxClients)
	}
	for _, set := range s.Settings {
		st, err := cluster.ParseSetting(set)
		if err != nil {
			return o, err
		}
		o.Settings = append(o.Settings, st)
	}
	var err error
	if s.CPUs != "" {
		o.CPUs, err = cluster.PickCPUs(s.CPUs)
	}
	return o, err
}

// buildOptions checks b and returns the build options under the
// configuration's ccache and contrib settings.
func (w *Workspace) buildOptions(b *BuildSpec) (build.Options, error) {
	t, err := build.ParseType(b.Type)
	if err != nil {
		return build.Options{}, err
	}
	return build.Options{
		Type: t, MesonOpts: b.MesonOpts, ConfigureOpts: b.ConfigureOpts, Profiling: b.Profiling,
		NoCCache: b.NoCCache || !w.Config.CCache, Contrib: w.Config.Contrib, Force: b.Force,
	}, nil
}

// Switch does r. Every value is checked before anything changes on
// disk: a bad one is a usage error (exit 2) and nothing is done.
func (w *Workspace) Switch(ctx context.Context, r Request) error {
	if r.Prune {
		return w.prune(r)
	}
	wt := w.Worktrees()
	if _, err := wt.Dir(r.Name); err != nil {
		return exitcode.BadInput(err)
	}
	if (r.Remove || r.Stop) && (r.Commit != "" || len(r.Patches) > 0 || r.Build != nil || r.Cluster != nil || r.Remove && r.Stop) {
		return exitcode.BadInputf("switch: --remove and --stop take only NAME")
	}
	var bopts build.Options
	var copts cluster.Options
	var exts []*build.Extension
	var err error
	if r.Build != nil {
		if bopts, err = w.buildOptions(r.Build); err != nil {
			return err
		}
		if exts, err = w.readExtensions(ctx, r.Build.Extensions); err != nil {
			return err
		}
	}
	if r.Cluster != nil {
		if copts, err = r.Cluster.Options(w.InstallFor(r.Name, r.Cluster.Install)); err != nil {
			return err
		}
	}
	if err := w.matrixLabel(r); err != nil {
		return err
	}
	if r.Remove || r.Stop {
		return w.removeOrStop(ctx, wt, r)
	}
	if err := worktree.CheckPatches(r.Patches); err != nil {
		return err
	}
	if err := w.moveAndPatch(ctx, wt, r.Name, r.Commit, r.Patches); err != nil {
		return err
	}
	if r.Build != nil {
		res, err := w.Build(ctx, r.Name, bopts)
		if err != nil {
			return err
		}
		if err := w.buildExtensions(ctx, r.Name, res, exts, bopts); err != nil {
			return err
		}
	}
	if r.Cluster == nil {
		return nil
	}
	cm, err := w.Clusters()
	if err != nil {
		return err
	}
	st, err := cm.Start(ctx, r.Name, copts)
	if err != nil || w.Run.DryRun {
		return err
	}
	fmt.Fprintf(w.out(), "source %s\n", st.EnvFile)
	return w.exports(cm, r.Name)
}

// exports writes the export lines of cluster name's env.sh on Exports.
func (w *Workspace) exports(cm *cluster.Manager, name string) error {
	if w.Exports == nil {
		return nil
	}
	data, err := cm.ReadEnv(name)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "export ") {
			if _, err := fmt.Fprintln(w.Exports, line); err != nil {
				return exitcode.Failure(err)
			}
		}
	}
	return nil
}

// removeOrStop is Remove (cluster, install and worktree) or Stop.
func (w *Workspace) removeOrStop(ctx context.Context, wt *worktree.Manager, r Request) error {
	cm, err := w.Clusters()
	if err != nil {
		return err
	}
	if r.Remove {
		if !w.exists(wt, cm, r.Name) {
			return exitcode.BadInputf("switch --remove: nothing named %s to remove (no worktree, install or cluster)", r.Name)
		}
		if err := cm.Remove(ctx, r.Name); err != nil {
			return err
		}
		if err := w.removeInstall(r.Name); err != nil {
			return err
		}
		if err := wt.Remove(ctx, r.Name); err != nil {
			return err
		}
		if !w.Run.DryRun {
			fmt.Fprintf(w.out(), "%s: removed cluster, install and worktree\n", r.Name)
		}
		return nil
	}
	stop := cm.Stop
	if r.Force {
		stop = cm.ForceStop
	}
	stopped, err := stop(ctx, r.Name)
	if err != nil || w.Run.DryRun {
		return err
	}
	if stopped {
		fmt.Fprintf(w.out(), "cluster %s: stopped\n", r.Name)
	} else {
		fmt.Fprintf(w.out(), "cluster %s: not running\n", r.Name)
	}
	return nil
}

// prune removes the socket directories whose cluster is gone and says
// which; a dry run prints the commands instead.
func (w *Workspace) prune(r Request) error {
	if r.Name != "" || r.Commit != "" || len(r.Patches) > 0 || r.Build != nil || r.Cluster != nil || r.Remove || r.Stop {
		return exitcode.BadInputf("switch: --prune takes no other action (no NAME)")
	}
	cm, err := w.Clusters()
	if err != nil {
		return err
	}
	removed, err := cm.Prune()
	if w.Run.DryRun {
		return err
	}
	for _, o := range removed {
		fmt.Fprintf(w.out(), "removed socket directory %s: %s%s\n", o.Dir, o.Reason, w.otherRoot(o.DataDir))
	}
	if len(removed) == 0 && err == nil {
		fmt.Fprintln(w.out(), "no socket directory whose cluster is gone")
	}
	return err
}

// otherRoot says, for a pruned socket directory's data directory, when
// it was a cluster of another data root than the configuration's: prune
// removes the orphans of every root (their servers are gone), and says
// whose they were.
func (w *Workspace) otherRoot(dataDir string) string {
	if dataDir == "" {
		return ""
	}
	if rel, err := filepath.Rel(w.Config.DataDir, dataDir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return ""
	}
	return fmt.Sprintf(" (a cluster of another data root, %s, not %s)", filepath.Dir(dataDir), w.Config.DataDir)
}

// exists says whether anything --remove removes is there for name.
func (w *Workspace) exists(wt *worktree.Manager, cm *cluster.Manager, name string) bool {
	wtDir, _ := wt.Dir(name)
	dataDir, _ := cm.DataDir(name)
	for _, p := range []string{wtDir, filepath.Join(w.Config.InstallDir, name), dataDir, cm.EnvFile(name)} {
		if _, err := os.Lstat(p); p != "" && err == nil {
			return true
		}
	}
	return false
}

// moveAndPatch puts worktree name at commit (when given) and applies
// patches.
func (w *Workspace) moveAndPatch(ctx context.Context, wt *worktree.Manager, name, commit string, patches []string) error {
	if commit != "" {
		res, err := wt.Switch(ctx, name, commit)
		if err != nil {
			return err
		}
		if !w.Run.DryRun {
			switch res.Action {
			case "moved":
				fmt.Fprintf(w.out(), "worktree %s: moved %s -> %s %s (%s)\n", name, text.Short(res.From), text.Short(res.Commit.SHA), res.Commit.Subject, res.Dir)
			default:
				fmt.Fprintf(w.out(), "worktree %s: %s at %s %s (%s)\n", name, res.Action, text.Short(res.Commit.SHA), res.Commit.Subject, res.Dir)
			}
		}
	}
	if len(patches) == 0 {
		return nil
	}
	applied, err := wt.Apply(ctx, name, patches)
	if err != nil {
		return err
	}
	for _, p := range applied {
		if !w.Run.DryRun {
			fmt.Fprintf(w.out(), "worktree %s: applied %s (%d commit(s), sha256 %s) %s\n", name, p.File, len(p.Commits), text.Short(p.SHA256), p.Subject)
		}
	}
	return nil
}

// Build builds worktree name. The builder stops every cluster running
// the install's binaries before it installs over them (the cluster
// manager owns that rule); they are started again afterwards with their
// settings, on the new build: cluster.Start keeps the data directory
// when the build's catalog version matches it and makes it anew (with a
// message) when it does not.
func (w *Workspace) Build(ctx context.Context, name string, o build.Options) (*build.Result, error) {
	wt := w.Worktrees()
	prov, err := wt.Info(ctx, name)
	if err != nil {
		return nil, err
	}
	dir, _ := wt.Dir(name)
	cm, err := w.Clusters()
	if err != nil {
		return nil, err
	}
	res, err := w.Builder(cm).BuildShown(ctx, progress.Console(w.out(), false, w.now), prov, dir, o)
	if err != nil || w.Run.DryRun {
		return res, err
	}
	for _, c := range res.Stopped {
		st, err := cm.ReadState(c)
		if err != nil {
			return res, err
		}
		if _, err := cm.Start(ctx, c, cluster.OptionsOf(st)); err != nil {
			return res, err
		}
	}
	return res, nil
}
