// Package cluster runs one isolated PostgreSQL instance per name: initdb,
// a generated configuration include, start and stop with pg_ctl, a private
// Unix socket directory, ports that never collide, CPU placement, and an
// env.sh that hands the cluster to psql and pgbench.
//
// Layout, for a name NAME under the data root ($PG_DATA_DIR):
//
//	NAME/              PGDATA; holds abtest.conf (the include), server.log,
//	                   abtest.state.json (port, CPUs, settings, install),
//	                   abtest.pgpass (the superuser's password, for TCP)
//	NAME.env.sh        PATH, PGDATA, PGHOST, PGPORT, … for `source`
//	.NAME.lock         held while an abtest process works on NAME
//
// When abtest runs as root, initdb, pg_ctl and postgres run as an
// unprivileged account (PostgreSQL refuses root), which owns the data and
// socket directories. Only the private socket directory is trusted; TCP
// takes the password (auth.go). abtest only ever stops a server through
// pg_ctl on a data directory of its own: it never signals a process it
// did not start.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/safefile"
	"github.com/pgabtest/abtest/internal/safepath"
)

const (
	// SuperUser is the bootstrap superuser initdb creates.
	SuperUser = "postgres"
	// Database is the database abtest creates for workloads.
	Database = "benchmark"
	// DefaultPgssMax is pg_stat_statements.max unless -m says otherwise.
	DefaultPgssMax = 5000
	// DefaultStartTimeout bounds the wait for the first connection.
	DefaultStartTimeout = 60 * time.Second
	// FirstPort is where -p auto starts looking: 5432 is left to the
	// system's own PostgreSQL.
	FirstPort = 5433

	stateFile = "abtest.state.json"
	logFile   = "server.log"
)

// Sentinel errors, for errors.Is.
var (
	// ErrPortBusy: the port is held by a process abtest did not start.
	ErrPortBusy = errors.New("cluster: port in use")
	// ErrBusy: another abtest process works on the same cluster.
	ErrBusy = errors.New("cluster: busy")
	// ErrNoInstall: no PostgreSQL installation to run.
	ErrNoInstall = errors.New("cluster: no installation")
	// ErrStart: the server did not start or accept connections.
	ErrStart = errors.New("cluster: server did not start")
	// ErrSetting: PostgreSQL rejected a setting.
	ErrSetting = errors.New("cluster: setting rejected")
	// ErrNotFound: there is no such cluster.
	ErrNotFound = errors.New("cluster: no such cluster")
)

// Manager manages the clusters under one data root.
type Manager struct {
	// Root is the data root ($PG_DATA_DIR).
	Root string
	// Run runs initdb, pg_ctl and postgres.
	Run *proc.Runner
	// User runs the server programs; nil runs them as the caller. It must
	// be set when abtest runs as root.
	User *proc.User
	// StartTimeout bounds the wait for the first connection; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Log receives one line per step ("initdb", "started"); nil discards.
	Log io.Writer

	// socketParent replaces /tmp as the parent of socket directories
	// (tests of this package, which prune).
	socketParent string
}

// Options are what a start may change.
type Options struct {
	// Install is the installation prefix (bin/postgres inside).
	Install string
	// Port is the TCP port number (also names the Unix socket); 0 keeps
	// the cluster's previous port, or picks a free one for a new cluster.
	Port int
	// AutoPort picks a free port even when the cluster had one.
	AutoPort bool
	// PgssMax is shorthand for a pg_stat_statements.max setting (-m),
	// placed before Settings; 0 means none, so DefaultSettings' value.
	PgssMax int
	// Preload are libraries shared_preload_libraries loads beside
	// pg_stat_statements (matrix --preload), placed before Settings.
	Preload []string
	// Settings are --set values, applied last.
	Settings []Setting
	// CPUs pins the postmaster and so every backend; nil means no pinning.
	CPUs []int
	// MaxClients is the largest client count a run will use; 0 means 64.
	MaxClients int
	// Listen is listen_addresses; "" means Unix socket only.
	Listen string
	// DataChecksums passes --data-checksums to initdb.
	DataChecksums bool
	// InitdbOpts are more initdb options (matrix --initdb-opt), e.g.
	// --no-data-checksums to compare PG 18 with 17 on equal terms; a
	// cluster made with others is made anew (CheckInitdbOpts).
	InitdbOpts []string
	// Recreate runs initdb again over an existing data directory.
	Recreate bool
}

func (m *Manager) logf(format string, args ...any) {
	if m.Log != nil && !m.Run.DryRun {
		fmt.Fprintf(m.Log, format+"\n", args...)
	}
}

// DataDir returns the data directory of cluster name.
func (m *Manager) DataDir(name string) (string, error) {
	return safepath.Under(m.Root, name)
}

// EnvFile returns the path of name's env.sh.
func (m *Manager) EnvFile(name string) string {
	return filepath.Join(m.Root, name+".env.sh")
}

// Start starts cluster name with opts and returns its state, whose
// Action says what was done: initdb when there is no data directory (or
// Recreate, or the install's catalog version differs from the data
// directory's), configuration written, server started and waited for
// until a real connection succeeds. A running cluster is left alone only
// when it runs what is asked: the same install, build fingerprint and
// postgres binary (not replaced since it started), configuration and
// CPUs; otherwise it is restarted. Settings are checked before anything
// is created (CheckSettings). While another process holds the cluster
// (Acquire), only a Start that changes nothing succeeds: starting a
// stopped server, restarting or recreating it is ErrBusy unless forced.
func (m *Manager) Start(ctx context.Context, name string, opts Options) (*State, error) {
	dir, err := m.DataDir(name)
	if err != nil {
		return nil, exitcode.BadInput(err)
	}
	settings, err := m.precheck(ctx, &opts)
	if err != nil {
		return nil, err
	}
	unlock, err := m.lock(name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !opts.Recreate {
		if err := m.checkDataDirOwner(name, dir); err != nil {
			return nil, exitcode.BadInput(err)
		}
	}
	s, err := m.survey(ctx, name, dir, opts)
	if err != nil {
		return nil, err
	}
	if !s.fresh {
		if err := m.checkHostAuth(name, dir, opts.Listen); err != nil {
			return nil, err
		}
	}
	if !s.running {
		// A stopped cluster another process holds is in a quiet period
		// (Quiesce): something runs on its data directory.
		if err := m.checkUse(name, "start", false); err != nil {
			return nil, err
		}
	}
	if err := m.reinit(ctx, s); err != nil {
		return nil, err
	}
	if err := m.configure(ctx, s, settings); err != nil {
		return nil, err
	}
	if unchanged, err := m.decide(ctx, s); err != nil || unchanged != nil {
		return unchanged, err
	}
	return m.launch(ctx, s)
}

// startup is one Start under way: what it found, what it decided, and
// what undoes a refusal.
type startup struct {
	name, dir string
	opts      Options
	// prev is the state before this start; nil once initdb made a new
	// data directory (prevSocket keeps its socket directory).
	prev, prevSocket *State
	pid              int
	running          bool
	port             int
	id               installID
	// fresh: the data directory is (to be) made by initdb.
	fresh    bool
	conf     Conf
	confPath string
	oldConf  []byte
	newConf  string
	action   Action
	reason   string
	// passed are the options initdb was given (initdb), when it ran.
	passed *[]string
}

// precheck refuses what would fail later, before anything is created or
// locked: the account, the install and the settings. It fills opts'
// defaults and returns the effective settings.
func (m *Manager) precheck(ctx context.Context, opts *Options) ([]Setting, error) {
	if err := m.checkUser(); err != nil {
		return nil, err
	}
	if opts.MaxClients == 0 {
		opts.MaxClients = 64
	}
	settings := effectiveSettings(*opts)
	if err := m.checkInstall(ctx, opts.Install); err != nil {
		return nil, err
	}
	if err := m.checkSettings(ctx, opts.Install, settings); err != nil {
		return nil, err
	}
	if err := CheckListen(ctx, opts.Listen); err != nil {
		return nil, err
	}
	return settings, nil
}

// survey reads what is there: the previous state, whether the server
// runs, the port, the install's identity and whether initdb must run.
func (m *Manager) survey(ctx context.Context, name, dir string, opts Options) (*startup, error) {
	s := &startup{name: name, dir: dir, opts: opts}
	s.prev, _ = m.ReadState(name)
	var err error
	if s.pid, s.running, err = m.running(name, dir); err != nil {
		return nil, err
	}
	if s.port, err = m.choosePort(name, dir, s.prev, opts); err != nil {
		return nil, err
	}
	s.id = m.identify(opts.Install)
	if s.fresh, err = m.needsInitdb(ctx, name, dir, opts, s.id); err != nil {
		return nil, err
	}
	if !s.fresh && s.prev == nil && !s.running && lacksInclude(dir) {
		// What an abtest before staging left when killed during initdb:
		// a data directory never started that ignores abtest.conf.
		m.logf("cluster %s: data directory %s was never started and does not include %s: it is made anew", name, dir, ConfFile)
		s.fresh = true
	}
	if !s.fresh && s.prev != nil && !slices.Equal(s.prev.InitdbOpts, opts.InitdbOpts) {
		m.logf("cluster %s: made with initdb options %q, asked for %q: it is made anew", name, s.prev.InitdbOpts, opts.InitdbOpts)
		s.fresh = true
	}
	return s, nil
}

// reinit runs initdb when survey said so, stopping the old server first.
func (m *Manager) reinit(ctx context.Context, s *startup) error {
	s.prevSocket = s.prev
	if !s.fresh {
		return nil
	}
	if s.running {
		if err := m.checkUse(s.name, "recreate", false); err != nil {
			return err
		}
		if err := m.pgctlStop(ctx, s.dir, s.opts.Install, "fast"); err != nil {
			return err
		}
		s.running = false
	}
	passed, err := m.initdb(ctx, s.name, s.dir, s.port, s.opts)
	if err != nil {
		return err
	}
	s.passed = &passed
	s.prev = nil
	return nil
}

// configure writes the configuration include and has postgres check it.
func (m *Manager) configure(ctx context.Context, s *startup, settings []Setting) error {
	sock, err := m.socketDir(s.name, s.dir, s.prevSocket)
	if err != nil {
		if s.fresh {
			_ = m.Run.RemoveAll(s.dir)
		}
		return exitcode.Failure(fmt.Errorf("cluster %s: socket directory: %w", s.name, err))
	}
	s.conf = Conf{
		Port:        s.port,
		Listen:      s.opts.Listen,
		SocketDir:   sock,
		MaxConns:    MaxConnections(s.opts.MaxClients),
		SharedBufMB: SharedBuffersMB(m.memTotal()),
		Settings:    settings,
	}
	s.confPath = filepath.Join(s.dir, ConfFile)
	if s.oldConf, err = m.readTrusted(s.confPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.newConf = s.conf.Render()
	if err := m.writeOwned(s.confPath, []byte(s.newConf), 0o600); err != nil {
		return exitcode.Failure(err)
	}
	if err := m.validate(ctx, s.opts.Install, s.dir); err != nil {
		m.restore(s)
		return err
	}
	return nil
}

// restore puts things back as they were after a refusal: the old
// include, or no new cluster; a stopped one keeps no socket directory.
func (m *Manager) restore(s *startup) {
	if s.fresh {
		_ = m.Run.RemoveAll(s.dir)
	} else if s.oldConf != nil {
		_ = m.writeOwned(s.confPath, s.oldConf, 0o600)
	}
	if !s.running {
		m.socketDone(s.name, s.conf.SocketDir, s.dir)
	}
}

// decide sets what the start does and why. A running server that runs
// what is asked is left alone: decide returns its state (Unchanged).
// One that does not is stopped, to be started again by launch.
func (m *Manager) decide(ctx context.Context, s *startup) (*State, error) {
	s.action, s.reason = Created, "initdb"
	if s.fresh {
		return nil, nil
	}
	s.action, s.reason = Started, "not running"
	if !s.running {
		return nil, nil
	}
	s.action = Restarted
	s.reason = m.restartReason(s.prev, s.pid, s.opts, s.id, confDiff(string(s.oldConf), s.newConf))
	if s.reason == "" {
		m.logf("cluster %s: already running (pid %d, port %d), as asked", s.name, s.pid, s.port)
		s.prev.Action, s.prev.Reason = Unchanged, ""
		return s.prev, nil
	}
	if err := m.checkUse(s.name, "restart", false); err != nil {
		m.restore(s)
		return nil, err
	}
	m.logf("cluster %s: restarting: %s", s.name, s.reason)
	if err := m.pgctlStop(ctx, s.dir, s.opts.Install, "fast"); err != nil {
		return nil, err
	}
	return nil, nil
}

// launch starts the server and records its state and env.sh. A start
// that fails restores the old include (undoLaunch) and, when the server
// ran before, starts it again as it was.
func (m *Manager) launch(ctx context.Context, s *startup) (*State, error) {
	st := &State{
		Name: s.name, Install: s.opts.Install, DataDir: s.dir, SocketDir: s.conf.SocketDir,
		Port: s.port, Listen: s.opts.Listen, CPUs: s.opts.CPUs, MaxClients: s.opts.MaxClients, Settings: settingsMap(s.conf),
		EnvFile: m.EnvFile(s.name), Fingerprint: s.id.fingerprint, Binary: s.id.binary,
		Action: s.action, Reason: s.reason, InitdbOpts: s.opts.InitdbOpts, InitdbPassed: s.passed,
	}
	if s.passed == nil && s.prev != nil {
		st.InitdbPassed = s.prev.InitdbPassed
	}
	st.Initialized = s.prev != nil && s.prev.Initialized
	st.InstallOwner = ownerOf(filepath.Join(s.opts.Install, "bin", "pg_ctl"))
	st.Version, _ = build.ServerVersion(ctx, m.Run, s.opts.Install, m.User)
	if err := m.start(ctx, st); err != nil {
		m.undoLaunch(ctx, s, err)
		return nil, err
	}
	pass, err := m.syncPassFile(s.dir, s.port)
	if err != nil {
		return nil, err
	}
	env := Env{Name: s.name, Path: st.EnvFile, InstallDir: s.opts.Install, DataDir: s.dir, SocketDir: s.conf.SocketDir, Port: s.port}
	if s.opts.Listen != "" {
		env.PassFile = pass
	}
	st.EnvSHA256 = sha256Hex([]byte(env.Render()))
	if err := m.writeState(st); err != nil {
		return nil, exitcode.Failure(err)
	}
	if err := m.Run.WriteFile(st.EnvFile, []byte(env.Render()), 0o644); err != nil {
		return nil, exitcode.Failure(err)
	}
	return st, nil
}

// running reports whether cluster name runs, and takes over a stale
// postmaster.pid: when its pid is not this cluster's postmaster the file
// is removed, since postgres refuses to start over a file whose pid is
// alive, whatever that process is.
func (m *Manager) running(name, dir string) (int, bool, error) {
	pid, err := postmaster(dir)
	var stale *staleError
	switch {
	case err == nil:
		return pid, true, nil
	case errors.As(err, &stale):
		m.logf("cluster %s: %v: taking it over", name, stale)
		if err := m.Run.RemoveAll(filepath.Join(dir, pidFileName)); err != nil {
			return 0, false, exitcode.Failure(err)
		}
		m.removeStaleSocketLocks(name, stale.pid)
	}
	return 0, false, nil
}

// removeStaleSocketLocks removes the socket lock files a dead postmaster
// left in the cluster's socket directory. Postgres takes such a file over
// itself only when its pid is gone; a killed postmaster whose parent does
// not reap it (a container's init) stays a zombie, kill(pid, 0) succeeds,
// and every later start fails with "lock file … already exists".
func (m *Manager) removeStaleSocketLocks(name string, pid int) {
	st, err := m.ReadState(name)
	if err != nil || st.SocketDir == "" || m.Run.DryRun {
		return
	}
	if ps, err := procfs.ReadStat(pid); err == nil && ps.Alive() {
		return
	}
	locks, _ := filepath.Glob(filepath.Join(st.SocketDir, ".s.PGSQL.*.lock"))
	for _, lock := range locks {
		data, err := os.ReadFile(lock)
		if err != nil {
			continue
		}
		first, _, _ := strings.Cut(string(data), "\n")
		if strings.TrimSpace(first) != strconv.Itoa(pid) {
			continue
		}
		m.logf("cluster %s: removing %s of dead postmaster %d", name, lock, pid)
		os.Remove(strings.TrimSuffix(lock, ".lock"))
		os.Remove(lock)
	}
}

// initialize creates the benchmark database and pg_stat_statements in it,
// once per data directory.
func (m *Manager) initialize(ctx context.Context, st *State) error {
	conn, err := pgx.Connect(ctx, st.ConnString("postgres"))
	if err != nil {
		return err
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", Database).Scan(&n); err != nil {
		conn.Close(ctx)
		return err
	}
	if n == 0 {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+Database); err != nil {
			conn.Close(ctx)
			return err
		}
	}
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, st.ConnString(Database))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	// In public whatever search_path the cluster is given: --set
	// search_path=a,b names schemas a fresh database does not have.
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public"); err != nil {
		return fmt.Errorf("CREATE EXTENSION pg_stat_statements: %w", err)
	}
	st.Initialized = true
	return nil
}

// cmd returns a command of the installation's bin directory, run as the
// server's user.
func (m *Manager) cmd(install, program string, args ...string) proc.Cmd {
	return proc.Cmd{
		Path: filepath.Join(install, "bin", program),
		Args: args,
		User: m.User,
		Env:  []string{"LD_LIBRARY_PATH=" + build.LibDir(install)},
		// pg_ctl and initdb must not run in a directory the user
		// cannot enter (root's cwd, often).
		Dir: "/",
	}
}

// initdb makes name's data directory dir anew. initdb writes into a
// staging directory beside it (InitdbStaging), renamed to dir only once
// its configuration includes abtest.conf: an abtest killed during
// initdb (which runs on, orphaned, to its end) leaves no data directory
// that looks whole but ignores abtest.conf, only a staging directory the
// next initdb of name removes. The superuser gets a new password, kept
// in PassFile for port (auth.go). It returns the options beyond
// abtest's own that initdb was given.
func (m *Manager) initdb(ctx context.Context, name, dir string, port int, opts Options) ([]string, error) {
	if err := safepath.CheckRemovable(m.Root, dir); err != nil {
		return nil, exitcode.BadInput(err)
	}
	stage := InitdbStaging(m.Root, name)
	for _, p := range []string{dir, stage} {
		if err := m.removeStale(ctx, p); err != nil {
			return nil, exitcode.Failure(err)
		}
	}
	if err := m.Run.MkdirAll(m.Root, 0o755); err != nil {
		return nil, exitcode.Failure(err)
	}
	if err := m.privateDir(stage); err != nil {
		return nil, exitcode.Failure(err)
	}
	more, err := m.knownInitdbOpts(ctx, opts.Install, opts.InitdbOpts)
	if err != nil {
		return nil, err
	}
	auth, password, done, err := m.initdbAuth(name)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("initdb %s: password file: %w", name, err))
	}
	defer done()
	m.logf("cluster %s: initdb %s", name, dir)
	args := []string{"-D", stage, "-U", SuperUser, "--no-locale", "-E", "UTF8"}
	args = append(args, auth...)
	args = append(args, "--no-instructions")
	if opts.DataChecksums {
		args = append(args, "--data-checksums")
	}
	args = append(args, more...)
	c := m.cmd(opts.Install, "initdb", args...)
	c.Log = filepath.Join(m.Root, name+".initdb.log")
	if err := m.Run.Run(ctx, c); err != nil {
		_ = m.Run.RemoveAll(stage)
		return nil, exitcode.Failure(fmt.Errorf("initdb %s: %w", name, err))
	}
	err = m.includeConf(stage)
	if err == nil {
		err = m.writeOwned(filepath.Join(stage, PassFile), []byte(passLine(port, password)), 0o600)
	}
	if err != nil {
		_ = m.Run.RemoveAll(stage)
		return nil, exitcode.Failure(err)
	}
	return append([]string{}, more...), exitcode.Failure(m.Run.Rename(stage, dir))
}

// knownInitdbOpts are opts without --no-data-checksums when install's
// initdb does not know it (before PostgreSQL 17, whose initdb leaves
// checksums off unless asked): there it is the default, so one
// --initdb-opt=--no-data-checksums makes 15 and 18 equal.
func (m *Manager) knownInitdbOpts(ctx context.Context, install string, opts []string) ([]string, error) {
	const off = "--no-data-checksums"
	if !slices.Contains(opts, off) {
		return opts, nil
	}
	c := m.cmd(install, "initdb", "--help")
	c.ReadOnly = true
	help, err := m.Run.Output(ctx, c)
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("initdb --help of %s: %w", install, err))
	}
	if m.Run.DryRun || strings.Contains(help, off) {
		return opts, nil
	}
	return slices.DeleteFunc(slices.Clone(opts), func(o string) bool { return o == off }), nil
}

// InitdbStaging is where initdb makes cluster name's data directory
// under root before it takes its place.
func InitdbStaging(root, name string) string {
	return filepath.Join(root, "."+name+".initdb")
}

// includeConf appends the line that includes abtest.conf to the
// postgresql.conf of data directory dir.
func (m *Manager) includeConf(dir string) error {
	pgconf := filepath.Join(dir, "postgresql.conf")
	if m.Run.DryRun {
		m.Run.Note("append %q to %s", includeLine, pgconf)
		return nil
	}
	// The file is the server account's (initdb wrote it), appended to
	// as root: never through a link, nor a hard link to another file.
	uid, _ := m.owner()
	f, err := safefile.OpenOwned(pgconf, os.O_WRONLY|os.O_APPEND, 0, uid)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "\n%s\n", includeLine)
	return err
}

// removeStale removes path, what a killed abtest left: an initdb it
// started may still be writing into it, so a directory that fills again
// while it is removed is tried again for a while.
func (m *Manager) removeStale(ctx context.Context, path string) error {
	deadline := time.Now().Add(staleRemoveWait)
	for {
		err := m.Run.RemoveAll(path)
		if err == nil || !errors.Is(err, syscall.ENOTEMPTY) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// staleRemoveWait bounds removeStale: an orphaned initdb ends in seconds.
const staleRemoveWait = 30 * time.Second

// validate asks postgres itself to read the configuration (postgres -C),
// so that a bad --set is reported in the server's own words before
// anything starts or stops.
func (m *Manager) validate(ctx context.Context, install, dir string) error {
	if m.Run.DryRun {
		return nil
	}
	return m.askPostgres(ctx, install, dir)
}

// askPostgres has postgres read data directory dir's configuration
// (postgres -C port): a setting it refuses is bad input, said in its
// own words.
func (m *Manager) askPostgres(ctx context.Context, install, dir string) error {
	c := m.cmd(install, "postgres", "-D", dir, "-C", "port")
	c.ReadOnly = true
	if _, err := m.Run.Output(ctx, c); err != nil {
		var pe *proc.Error
		msg := err.Error()
		if errors.As(err, &pe) && len(pe.Tail) > 0 {
			msg = serverComplaint(pe.Tail)
		}
		return unlessInterrupted(ctx, exitcode.BadInputf("%w: %s", ErrSetting, msg))
	}
	return nil
}

// unlessInterrupted is err, the verdict of a check that ran a command,
// unless ctx ended: a check cut short by SIGINT says nothing of the
// install or the settings, and is an interruption (exit 3).
func unlessInterrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return exitcode.Failure(ctx.Err())
	}
	return err
}

// serverComplaint picks the line of postgres's output that names the
// offending parameter.
func serverComplaint(lines []string) string {
	pick := lines[len(lines)-1]
	for _, l := range lines {
		if strings.Contains(l, "parameter") || strings.Contains(l, "invalid value") {
			pick = l
			break
		}
	}
	return stripLogPrefix(pick)
}

// stripLogPrefix drops log_line_prefix (time, pid) from a server log line,
// keeping "LOG:  …", "FATAL:  …".
func stripLogPrefix(line string) string {
	for _, level := range []string{"FATAL:", "PANIC:", "ERROR:", "LOG:", "WARNING:"} {
		if i := strings.Index(line, level); i >= 0 {
			return strings.Join(strings.Fields(line[i:]), " ")
		}
	}
	return strings.TrimSpace(line)
}

func (m *Manager) checkUser() error {
	if os.Geteuid() == 0 && m.User == nil {
		return exitcode.BadInputf("abtest runs as root and PostgreSQL refuses to: pass --run-as USER (an unprivileged account), or create the postgres account")
	}
	return nil
}

// checkInstall checks that install holds a server and pg_stat_statements,
// and that the server's account can reach it.
func (m *Manager) checkInstall(ctx context.Context, install string) error {
	if install == "" {
		return exitcode.BadInputf("%w: no installation given", ErrNoInstall)
	}
	postgres := filepath.Join(install, "bin", "postgres")
	if _, err := os.Stat(postgres); err != nil {
		return exitcode.BadInputf("%w: %s has no bin/postgres; build it (abtest switch NAME -b release) or pass --install DIR", ErrNoInstall, install)
	}
	// Before anything of it runs: as root, an install another account
	// owns or can write (a local user's, or one an older abtest left the
	// server account's) is refused. What Start runs from it, Stop can
	// run (checkPgCtl trusts these owners and more).
	if err := build.CheckTrusted(install); err != nil {
		return err
	}
	if m.User != nil {
		c := proc.Cmd{Path: "test", Args: []string{"-x", postgres}, User: m.User, Dir: "/", ReadOnly: true}
		if err := m.Run.Run(ctx, c); err != nil {
			return unlessInterrupted(ctx, exitcode.BadInputf("%w: user %s cannot run %s (a parent directory is private?); put installs and data under a directory it can enter", ErrNoInstall, m.User.Name, postgres))
		}
	}
	if m.User != nil {
		// The data root (or its nearest existing ancestor, before it is
		// made) must be enterable by the server's account.
		if dir, ok := m.Run.CanEnter(ctx, m.User, m.Root); !ok {
			return unlessInterrupted(ctx, exitcode.BadInputf("user %s cannot enter %s (a parent directory is private): set PG_DATA_DIR to a directory it can reach, e.g. /var/tmp/abtest/data", m.User.Name, dir))
		}
	}
	pc := m.cmd(install, "pg_config", "--pkglibdir")
	pc.ReadOnly = true
	out, err := m.Run.Output(ctx, pc)
	if err != nil {
		return unlessInterrupted(ctx, exitcode.BadInputf("%w: %s: pg_config: %v", ErrNoInstall, install, err))
	}
	so := filepath.Join(strings.TrimSpace(out), "pg_stat_statements.so")
	if _, err := os.Stat(so); err != nil {
		return exitcode.BadInputf("%w: %s lacks pg_stat_statements (%s); install contrib/pg_stat_statements", ErrNoInstall, install, so)
	}
	return nil
}

func (m *Manager) memTotal() uint64 {
	return uint64(host.Memory("/").MemoryMB) << 20
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func lastLogLine(path string) string {
	lines := proc.TailFile(path, 5)
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "FATAL") || strings.Contains(lines[i], "PANIC") {
			return stripLogPrefix(lines[i])
		}
	}
	if len(lines) > 0 {
		return stripLogPrefix(lines[len(lines)-1])
	}
	return "no server log"
}
