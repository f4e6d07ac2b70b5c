package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/results"
)

// ConfFile is the include file abtest writes into the data directory.
// postgresql.conf includes it once, at its end, so abtest's settings win
// over initdb's defaults while every other line of postgresql.conf stays
// the user's own.
const ConfFile = "abtest.conf"

// lacksInclude reports whether data directory dir's postgresql.conf was
// read and does not include abtest.conf.
func lacksInclude(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "postgresql.conf"))
	return err == nil && !strings.Contains(string(data), includeLine)
}

// includeLine is what postgresql.conf gains at initdb.
const includeLine = "include_if_exists = '" + ConfFile + "'\t# settings written by abtest"

// Setting is one GUC given with --set.
type Setting struct {
	Name  string
	Value string
}

// ParseSetting parses NAME=VALUE (results.ParseSetting).
func ParseSetting(s string) (Setting, error) {
	name, value, err := results.ParseSetting(s)
	return Setting{Name: name, Value: value}, err
}

// confValue quotes v for postgresql.conf.
func confValue(v string) string {
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// Conf is everything abtest decides about a cluster's configuration.
type Conf struct {
	Port        int
	Listen      string // listen_addresses; "" means Unix socket only
	SocketDir   string
	MaxConns    int
	SharedBufMB int
	// Settings are abtest's DefaultSettings overridden by --set ones,
	// each once.
	Settings []Setting
}

// Render returns the contents of abtest.conf. Later lines win, so the
// settings come last and can override what abtest chose above them
// (shared_preload_libraries with more libraries, for one).
func (c Conf) Render() string {
	var b strings.Builder
	b.WriteString("# Written by abtest on every start; do not edit: put your own settings\n")
	b.WriteString("# in postgresql.conf, or pass them with abtest switch --set NAME=VALUE.\n")
	line := func(k, v string) { fmt.Fprintf(&b, "%s = %s\n", k, v) }
	line("port", strconv.Itoa(c.Port))
	line("listen_addresses", confValue(c.Listen))
	line("unix_socket_directories", confValue(c.SocketDir))
	line("unix_socket_permissions", "0700")
	line("max_connections", strconv.Itoa(c.MaxConns))
	line("shared_buffers", confValue(strconv.Itoa(c.SharedBufMB)+"MB"))
	b.WriteString("\n# pg_stat_statements, and what the samplers and probes read\n")
	line("shared_preload_libraries", confValue("pg_stat_statements"))
	line("compute_query_id", "on")
	line("track_io_timing", "on")
	b.WriteString("\n# the server log stays in the data directory (pg_ctl -l)\n")
	line("logging_collector", "off")
	line("log_line_prefix", confValue("%m [%p] "))
	line("log_checkpoints", "on")
	if len(c.Settings) > 0 {
		b.WriteString("\n# settings: abtest's defaults, then --set\n")
		for _, s := range c.Settings {
			line(s.Name, confValue(s.Value))
		}
	}
	return b.String()
}

// MaxConnections sizes max_connections for the largest client count a
// run will use: the clients, the sampler and probe connections, and
// PostgreSQL's reserved slots, never below PostgreSQL's own default.
func MaxConnections(clients int) int {
	n := clients + clients/10 + 20
	if n < 100 {
		n = 100
	}
	return n
}

// SharedBuffersMB sizes shared_buffers from the machine's memory: a quarter
// of it, the usual advice, capped at 8 GB so that the two or more clusters
// of an A/B run fit side by side; at least 128 MB.
func SharedBuffersMB(memTotalBytes uint64) int {
	mb := int(memTotalBytes / 4 / (1 << 20))
	if mb > 8192 {
		mb = 8192
	}
	if mb < 128 {
		mb = 128
	}
	return mb
}

// Env is what env.sh exports.
type Env struct {
	Name       string
	Path       string // where env.sh is written
	InstallDir string
	DataDir    string
	SocketDir  string
	Port       int
	// PassFile is the superuser's password file (PassFile), exported as
	// PGPASSFILE for TCP connections; "" for a cluster on the Unix
	// socket only, which trusts its private socket.
	PassFile string
}

// Render returns env.sh.
func (e Env) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by abtest for cluster %s. Use it with:\n#   source %s\n", e.Name, e.Path)
	exp := func(k, v string) { fmt.Fprintf(&b, "export %s=%s\n", k, v) }
	exp("PATH", proc.Quote(e.InstallDir+"/bin")+`"${PATH:+:$PATH}"`)
	exp("LD_LIBRARY_PATH", proc.Quote(build.LibDir(e.InstallDir))+`"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"`)
	exp("PGDATA", proc.Quote(e.DataDir))
	exp("PGHOST", proc.Quote(e.SocketDir))
	exp("PGPORT", strconv.Itoa(e.Port))
	exp("PGUSER", SuperUser)
	exp("PGDATABASE", Database)
	if e.PassFile != "" {
		exp("PGPASSFILE", proc.Quote(e.PassFile))
	}
	return b.String()
}

// dedupSettings keeps the last of settings given twice, in the order
// given.
func dedupSettings(in []Setting) []Setting {
	last := map[string]int{}
	for i, s := range in {
		last[s.Name] = i
	}
	var out []Setting
	for i, s := range in {
		if last[s.Name] == i {
			out = append(out, s)
		}
	}
	return out
}

// settingsMap is the cell-level view of settings (defaults included), for
// the state file and status.
func settingsMap(c Conf) map[string]string {
	m := map[string]string{}
	for _, s := range c.Settings {
		m[s.Name] = s.Value
	}
	return m
}
