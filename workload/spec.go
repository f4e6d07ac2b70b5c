package workload

// What one run is: the Spec with its defaults and checks, where the
// server is (Conn, from the PG* variables as psql and pgbench read them),
// and pgbench's command line.

import (
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/safefile"
)

// Defaults are the bash harness's.
const (
	DefaultDuration = 30 * time.Second
	DefaultClients  = 64
	DefaultPort     = 5432
	DefaultDatabase = "benchmark"
)

// Conn says where the server is. Empty fields fall back to the PG*
// environment variables, as with psql and pgbench, then to the defaults.
type Conn struct {
	Host     string
	Port     int
	User     string
	Database string
}

// Spec is one run of one workload.
type Spec struct {
	Workload Workload
	Conn     Conn
	// Duration is pgbench -T; ignored when Transactions is set.
	Duration time.Duration
	// Transactions is pgbench -t (per client).
	Transactions int
	Clients      int
	Threads      int
	// Protocol is simple, extended or prepared.
	Protocol string
	// SleepMS is think time appended to each transaction (-S).
	SleepMS int
	// Rate is pgbench -R: open-loop transactions per second.
	Rate float64
	// Vars are pgbench variables, -D NAME=VALUE each, that the script
	// reads as :NAME.
	Vars map[string]string
	// SetupDone says the workload's setup SQL ran already (a matrix
	// cell runs it once, before its condition and warm-up).
	SetupDone bool
	// BacklogBound is how far behind Rate, in time of offered work, the
	// point may fall before it is saturated; 0 is DefaultBacklogBound.
	BacklogBound time.Duration
	// CPUs pins pgbench to these CPUs.
	CPUs []int
	// SampleEvery and WaitEvery are the sampler's intervals.
	SampleEvery, WaitEvery time.Duration
	// OutDir keeps pgbench's output, the script, the transaction log and
	// the samples; empty means a temporary directory that is removed.
	OutDir string
	// Pgbench is the pgbench to run; empty means pgbench on PATH.
	Pgbench string
	// KeepTxLog keeps pgbench's per-transaction log in OutDir (a few MB);
	// otherwise it is removed once read.
	KeepTxLog bool
	// ExpectedTPS, when known (a warm-up's TPS), sizes the
	// per-transaction log's sampling rate; otherwise an upper bound is
	// assumed, and a larger share of it is logged so that a run far
	// below the bound still has its back-to-back pairs (samplingRate).
	ExpectedTPS float64
	// PeakTPS, when known, is the highest TPS earlier windows of the
	// same server and configuration ran at (the matrix's earlier
	// repeats). A 1 s warm-up under load read a tenth of its window's
	// TPS, and the cell logged several times its budget: the rate is
	// sized for the higher of the two (samplingRate).
	PeakTPS float64
	// NoReset keeps pg_stat_statements' contents from before the run: a
	// measurement after a warm-up starts from the warmed-up state
	// (deallocs still count from the start of this run).
	NoReset bool
	// Continues says the run follows the last run on the same kept
	// connection (Runner.Sessions) with nothing counted by
	// pg_stat_statements between: a warm-up and its window, without a
	// condition's sessions beside them. Its baseline is then that run's
	// final reading, unless an entry was evicted since; a reading of
	// 1 000 entries costs the server 3–5 ms, 0.1–0.2 % of a 3 s cell
	// (issue 27). Only with NoReset.
	Continues bool
}

func (r *Runner) getenv(k string) string {
	if r.Getenv != nil {
		return r.Getenv(k)
	}
	return os.Getenv(k)
}

// resolve fills a Conn from the PG* variables and the defaults.
func (r *Runner) resolve(c Conn) Conn {
	if c.Host == "" {
		c.Host = r.getenv("PGHOST")
	}
	if c.Port == 0 {
		c.Port, _ = strconv.Atoi(r.getenv("PGPORT"))
		if c.Port == 0 {
			c.Port = DefaultPort
		}
	}
	if c.User == "" {
		c.User = r.getenv("PGUSER")
	}
	if c.Database == "" {
		c.Database = r.getenv("PGDATABASE")
		if c.Database == "" {
			c.Database = DefaultDatabase
		}
	}
	return c
}

// where names the server for messages: host:port or the socket path.
func (c Conn) where() string {
	host := c.Host
	if host == "" {
		host = "/var/run/postgresql"
	}
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("socket %s/.s.PGSQL.%d", host, c.Port)
	}
	return fmt.Sprintf("%s:%d", host, c.Port)
}

func (c Conn) connString(db string) string {
	parts := []string{"port=" + strconv.Itoa(c.Port), "dbname=" + quoteConn(db), "sslmode=prefer", "connect_timeout=10", "application_name=abtest"}
	if c.Host != "" {
		parts = append(parts, "host="+quoteConn(c.Host))
	}
	if c.User != "" {
		parts = append(parts, "user="+quoteConn(c.User))
	}
	return strings.Join(parts, " ")
}

func quoteConn(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

// checkProtocol defaults *p to simple and checks it against the
// workload (-M).
func checkProtocol(p *string, w Workload) error {
	switch *p {
	case "":
		*p = "simple"
	case "simple", "extended", "prepared":
	default:
		return exitcode.BadInputf("-M %q: use simple, extended or prepared", *p)
	}
	if w.SimpleOnly && *p != "simple" {
		return exitcode.BadInputf("workload %s needs -M simple: its distinct query texts come from pgbench's textual substitution of variables, which -M %s turns into bind parameters", w.Name, *p)
	}
	return nil
}

// Check validates spec before anything runs.
func (s *Spec) Check() error {
	if err := checkProtocol(&s.Protocol, s.Workload); err != nil {
		return err
	}
	// A pgbench given by path runs as the server's account when abtest
	// is root: not one another account can write.
	if strings.Contains(s.Pgbench, "/") {
		if err := safefile.Trusted(s.Pgbench); err != nil {
			return exitcode.BadInputf("--pgbench %s: %v", s.Pgbench, err)
		}
	}
	if s.Clients == 0 {
		s.Clients = DefaultClients
	}
	if err := CheckClients(s.Clients); err != nil {
		return err
	}
	if s.Threads == 0 {
		n := runtime.NumCPU()
		if len(s.CPUs) > 0 {
			n = len(s.CPUs)
		}
		s.Threads = min(s.Clients, n)
	}
	if s.Threads < 1 || s.Threads > s.Clients {
		return exitcode.BadInputf("-j %d: want 1 to %d threads (no more than clients)", s.Threads, s.Clients)
	}
	if s.Duration == 0 && s.Transactions == 0 {
		s.Duration = DefaultDuration
	}
	if s.Duration < 0 || s.Transactions < 0 || s.Duration > 0 && s.Duration < time.Second {
		return exitcode.BadInputf("-d: want at least 1 second")
	}
	if s.BacklogBound < 0 {
		return exitcode.BadInputf("backlog bound %s: want a positive duration, or 0 for the default %s", s.BacklogBound, DefaultBacklogBound)
	}
	if !(s.Rate >= 0 && s.Rate <= 1e9) || s.SleepMS < 0 {
		return exitcode.BadInputf("-R %g -S %d: want a rate from 0 (closed loop) to 1e9 TPS and a think time of at least 0 ms", s.Rate, s.SleepMS)
	}
	if s.SampleEvery == 0 {
		s.SampleEvery = 5 * time.Second
	}
	if s.WaitEvery == 0 {
		s.WaitEvery = time.Second
	}
	return nil
}

// progressEvery is pgbench's -P interval in seconds for a run of d:
// every second, so that a cell of a few seconds still draws TPS over
// time and shows a stall, and at most about 300 reports in a long one.
func progressEvery(d time.Duration) int {
	return max(1, int(d.Seconds())/300)
}

// pgbenchArgs returns pgbench's command line for spec.
func pgbenchArgs(s Spec, c Conn, script, logPrefix string, sampling float64) []string {
	args := []string{"-n", "-c", strconv.Itoa(s.Clients), "-j", strconv.Itoa(s.Threads), "-M", s.Protocol, "-P", strconv.Itoa(progressEvery(s.Duration))}
	if s.Transactions > 0 {
		args = append(args, "-t", strconv.Itoa(s.Transactions))
	} else {
		args = append(args, "-T", strconv.Itoa(int(s.Duration.Seconds())))
	}
	if s.Rate > 0 {
		args = append(args, "-R", strconv.FormatFloat(s.Rate, 'f', -1, 64))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Vars)) {
		args = append(args, "-D", k+"="+s.Vars[k])
	}
	args = append(args, "--log", "--log-prefix="+logPrefix)
	if sampling < 1 {
		args = append(args, "--sampling-rate="+strconv.FormatFloat(sampling, 'g', 4, 64))
	}
	args = append(args, "-f", script, "-p", strconv.Itoa(c.Port))
	if c.Host != "" {
		args = append(args, "-h", c.Host)
	}
	if c.User != "" {
		args = append(args, "-U", c.User)
	}
	return append(args, c.Database)
}
