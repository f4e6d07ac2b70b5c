// Package workspace is abtest's hand-managed side: named worktrees, each
// with its build and its cluster, changed together by Switch (check
// out, patch, build, start, stop, remove) and listed by Status. The
// command line only turns flags into a Request and prints; the matrix
// uses the same managers for its own builds and clusters.
package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
	"github.com/pgabtest/abtest/worktree"
)

// Workspace holds the managers of one configuration.
type Workspace struct {
	Config *config.Loaded
	Run    *proc.Runner
	// Euid is the effective uid: as root, servers and builds run as
	// Config.RunAs (postgres when empty).
	Euid int
	// Now is the clock of the build's progress; nil is time.Now.
	Now func() time.Time
	// Out receives what Switch did, one line per step, the build's
	// progress and the clusters' messages; nil discards them.
	Out io.Writer
	// Notes receives what is no part of a command's output: the
	// clusters Clusters started again (RestoreStopped); nil is Out.
	Notes io.Writer
	// Exports receives the export lines of the env.sh of the cluster
	// Switch started, and nothing else: the CLI's stdout, while Out is
	// its stderr, so that eval "$(abtest switch NAME)" sets the
	// cluster's variables. Nil writes none.
	Exports io.Writer

	restored bool
}

// Worktrees is the worktree manager of the configuration.
func (w *Workspace) Worktrees() *worktree.Manager {
	return &worktree.Manager{
		Source:     w.Config.SourceDir,
		SourceFrom: w.Config.SourceOf("source_dir").String(),
		Root:       w.Config.WorktreesDir,
		Run:        w.Run,
	}
}

// ServerUser is the account that runs PostgreSQL: nil when abtest is not
// root, else run_as (--run-as), postgres by default. A missing or root
// account is a usage error.
func ServerUser(cfg *config.Loaded, euid int) (*proc.User, error) {
	if euid != 0 {
		return nil, nil
	}
	name := cfg.RunAs
	if name == "" {
		name = "postgres"
	}
	u, err := proc.LookupUser(name)
	if err != nil {
		return nil, exitcode.BadInputf("abtest runs as root and PostgreSQL refuses to; the account %q to run it as does not exist: pass --run-as USER (set by %s)", name, cfg.SourceOf("run_as"))
	}
	if u.UID == 0 {
		return nil, exitcode.BadInputf("--run-as %s: the account is root; PostgreSQL needs an unprivileged one", name)
	}
	return u, nil
}

// ReadEnv is the env.sh abtest wrote for cluster name
// (cluster.Manager.ReadEnv): as root, the state naming its checksum is
// the server account's, which is trusted too.
func ReadEnv(cfg *config.Loaded, euid int, name string) ([]byte, error) {
	u, _ := ServerUser(cfg, euid)
	return (&cluster.Manager{Root: cfg.DataDir, User: u}).ReadEnv(name)
}

// Clusters is the cluster manager of the configuration, logging to Out.
// It looks up the server's account (ServerUser), so it is only asked for
// when a cluster or a build is touched: creating a worktree as root
// needs no postgres account. The first call starts again the clusters
// an abtest that died had stopped (cluster.Manager.RestoreStopped), one
// line each on Notes: every command that opens the clusters (switch,
// status, env, bench, matrix and what builds on it) repairs what a
// kill -9 left.
func (w *Workspace) Clusters() (*cluster.Manager, error) {
	u, err := ServerUser(w.Config, w.Euid)
	if err != nil {
		return nil, err
	}
	if u != nil && w.Run != nil && w.Run.Unprivileged == nil {
		// What root may not run (an install another account can
		// write: pg_config, postgres --version) runs as the server's
		// account (proc.Runner.Unprivileged).
		w.Run.Unprivileged = u
	}
	if u != nil {
		safefile.TrustAccount(int(u.UID))
	}
	cm := &cluster.Manager{
		Root:         w.Config.DataDir,
		Run:          w.Run,
		User:         u,
		StartTimeout: time.Duration(w.Config.StartTimeout) * time.Second,
	}
	if !w.restored {
		w.restored = true
		// A build killed while installing left its install the build
		// account's: sealed before a cluster it stopped starts again.
		leftovers := &build.Builder{InstallRoot: w.Config.InstallDir, Run: w.Run, User: u}
		for _, name := range leftovers.SealLeftovers() {
			fmt.Fprintf(w.notes(), "install %s: sealed (root's again) after a build killed while installing into it\n", name)
		}
		for _, r := range cm.RestoreStopped(context.Background()) {
			fmt.Fprintln(w.notes(), r)
		}
	}
	cm.Log = w.Out
	return cm, nil
}

// notes is Notes, or out when it is nil.
func (w *Workspace) notes() io.Writer {
	if w.Notes == nil {
		return w.out()
	}
	return w.Notes
}

// Builder is the builder of the configuration: it stops cm's servers of
// an install before installing over them and, as root, builds as the
// server's account (a patch's build scripts never run as root).
func (w *Workspace) Builder(cm *cluster.Manager) *build.Builder {
	return &build.Builder{
		WorktreesRoot: w.Config.WorktreesDir,
		InstallRoot:   w.Config.InstallDir,
		Run:           w.Run,
		Servers:       cm,
		User:          cm.User,
	}
}

// InstallFor returns the installation for name: given (--install), the
// configuration's [installs] table, the build under the install root,
// or else the one the cluster's state recorded (a cluster started once
// with --install keeps it without being told again).
func (w *Workspace) InstallFor(name, given string) string {
	if given != "" {
		abs, _ := filepath.Abs(given)
		return abs
	}
	if dir, ok := w.Config.Installs[name]; ok {
		return dir
	}
	built := filepath.Join(w.Config.InstallDir, name)
	if _, err := os.Stat(filepath.Join(built, "bin", "postgres")); err == nil {
		return built
	}
	u, _ := ServerUser(w.Config, w.Euid)
	if st, err := (&cluster.Manager{Root: w.Config.DataDir, User: u}).ReadState(name); err == nil && st.Install != "" {
		return st.Install
	}
	return built
}

// removeInstall removes the install root's NAME (never a prebuilt one).
func (w *Workspace) removeInstall(name string) error {
	dir := filepath.Join(w.Config.InstallDir, name)
	if err := safepath.CheckRemovable(w.Config.InstallDir, dir); err != nil {
		return exitcode.BadInput(fmt.Errorf("removing install %s: %w", name, err))
	}
	return exitcode.Failure(w.Run.RemoveAll(dir))
}

// now is Now, or time.Now when it is nil.
func (w *Workspace) now() time.Time {
	if w.Now == nil {
		return time.Now()
	}
	return w.Now()
}

// out is Out, or io.Discard when it is nil.
func (w *Workspace) out() io.Writer {
	if w.Out == nil {
		return io.Discard
	}
	return w.Out
}

// ServerProcesses returns a function listing the postmaster and its
// children of abtest's cluster name, or, without a name, of the server
// on port (host and user as libpq takes them: PGHOST, PGUSER). A named
// cluster is read through the workspace's manager, which knows the
// server's account: its state files are the trusted ones as root.
func (w *Workspace) ServerProcesses(ctx context.Context, name string, port int, host, user string) (func() []int, error) {
	if name != "" {
		cm, err := w.Clusters()
		if err != nil {
			return nil, err
		}
		return cm.ProcessesOf(name)
	}
	if port <= 0 {
		return nil, exitcode.BadInputf("perf record: name the cluster: NAME (--worktree NAME) or -p PORT")
	}
	dir, err := cluster.DataDirAt(ctx, port, host, user)
	if err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	return cluster.RunningProcesses(dir)
}
