package workload

// The preflight: what a run checks of its scripts before its first cell,
// so that a mistake every cell would repeat is one line at the start
// rather than a run of failed cells. Statically, the pgbench variables
// a script reads and sets (ScriptVariables, CheckVars); against each
// server, one transaction of the script with the run's variables
// (Runner.Preflight) and the custom settings the server does not know
// once it runs (UnknownSettings).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/suggest"
)

// pgbenchOwn are the variables pgbench sets for every client itself.
var pgbenchOwn = []string{"client_id", "default_seed", "random_seed", "scale"}

// Variables are the pgbench variables a script reads (:name) and sets.
type Variables struct {
	// Reads are the variables the script reads anywhere, in the order
	// of their first reading; Bare those it reads outside a quoted
	// string and whose name does not start with a digit: what a
	// timestamp literal ('12:30') or a URL in a string is not.
	Reads, Bare []string
	// Sets are the variables \set and \setshell set.
	Sets []string
	// QuerySets says the script sets variables from a query's columns
	// (\gset, \aset), whose names a scan cannot know.
	QuerySets bool
}

// ScriptVariables scans a pgbench script as pgbench substitutes its
// variables: ":name" is a reading, name being letters, digits and _
// (or any non-ASCII byte), and a run of colons ("::int") is none. Lines
// that are -- comments, and the rest of a line after a -- outside a
// string, read nothing.
func ScriptVariables(script string) Variables {
	var v Variables
	seen, bare, set := map[string]bool{}, map[string]bool{}, map[string]bool{}
	read := func(text string, quotes bool) {
		quoted := false
		for i := 0; i < len(text); i++ {
			switch ch := text[i]; {
			case ch == '\'' && quotes:
				quoted = !quoted
			case ch == '-' && !quoted && strings.HasPrefix(text[i:], "--"):
				return
			case ch == ':':
				if i+1 < len(text) && text[i+1] == ':' {
					for i+1 < len(text) && text[i+1] == ':' {
						i++
					}
					continue
				}
				j := i + 1
				for j < len(text) && isVarByte(text[j]) {
					j++
				}
				name := text[i+1 : j]
				if name == "" {
					continue
				}
				if !seen[name] {
					seen[name] = true
					v.Reads = append(v.Reads, name)
				}
				if !quoted && !bare[name] && (name[0] < '0' || name[0] > '9') {
					bare[name] = true
					v.Bare = append(v.Bare, name)
				}
				i = j - 1
			}
		}
	}
	for _, line := range strings.Split(script, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--") || t == "" {
			continue
		}
		meta, ok := strings.CutPrefix(t, `\`)
		if !ok {
			// A query may end in \gset or \aset on its own line.
			if sql, meta, ok := strings.Cut(line, `\`); ok {
				line = sql
				v.QuerySets = v.QuerySets || strings.HasPrefix(meta, "gset") || strings.HasPrefix(meta, "aset")
			}
			read(line, true)
			continue
		}
		f := strings.Fields(meta)
		switch f[0] {
		case "set", "setshell":
			if len(f) > 1 && !set[f[1]] {
				set[f[1]] = true
				v.Sets = append(v.Sets, f[1])
			}
			if len(f) > 2 {
				read(strings.Join(f[2:], " "), false)
			}
		case "gset", "aset":
			v.QuerySets = true
		default:
			read(strings.Join(f[1:], " "), false)
		}
	}
	return v
}

func isVarByte(b byte) bool {
	return b == '_' || b >= 0x80 || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// CheckVars refuses (exit 2) the run's pgbench variables (--var names)
// that no workload reads, unless elsewhere reads them (the run's setup
// SQL as ${name}), and a variable a workload reads that nothing sets:
// neither a --var, nor its script (\set, \setshell), nor pgbench
// itself. pgbench says nothing of a -D its script does not read, and
// substitutes nothing for a variable no one set (the server then
// refuses the text ":name"): either way every cell would measure
// something else than asked, or fail. A variable some workloads read
// and others not is a note: those others' cells repeat for each value.
func CheckVars(ws []Workload, vars, elsewhere []string) (notes []string, err error) {
	scanned := make([]Variables, len(ws))
	var all []string
	for i, w := range ws {
		scanned[i] = ScriptVariables(w.Script)
		all = append(all, scanned[i].Reads...)
	}
	for _, name := range vars {
		var readers, others []string
		for i, w := range ws {
			if slices.Contains(scanned[i].Reads, name) {
				readers = append(readers, w.Name)
			} else {
				others = append(others, w.Name)
			}
		}
		if len(readers) == 0 && slices.Contains(elsewhere, name) {
			continue // the setup SQL's: the scripts need not read it
		}
		if len(readers) == 0 {
			return nil, exitcode.BadInputf("--var %s: no workload reads :%s%s, and pgbench would ignore it (%s)", name, name, suggest.DidYouMean(name, all, false), readsList(ws, scanned))
		}
		if len(others) > 0 && !slices.Contains(elsewhere, name) {
			verb := "does"
			if len(others) > 1 {
				verb = "do"
			}
			notes = append(notes, fmt.Sprintf("--var %s: %s %s not read :%s; those cells repeat for each of its values", name, strings.Join(others, ", "), verb, name))
		}
	}
	for i, w := range ws {
		v := scanned[i]
		if v.QuerySets {
			continue // \gset and \aset set what the scan cannot see
		}
		for _, name := range v.Bare {
			if slices.Contains(vars, name) || slices.Contains(v.Sets, name) || slices.Contains(pgbenchOwn, name) {
				continue
			}
			return nil, exitcode.BadInputf("workload %s reads :%s, which nothing sets: give --var %s=V (or \\set it in the script)%s", w.Name, name, name, suggest.DidYouMean(name, vars, false))
		}
	}
	return notes, nil
}

// readsList says what each workload reads, for a message.
func readsList(ws []Workload, scanned []Variables) string {
	var parts []string
	for i, w := range ws {
		if len(scanned[i].Reads) == 0 {
			parts = append(parts, w.Name+" reads none")
			continue
		}
		parts = append(parts, w.Name+" reads :"+strings.Join(scanned[i].Reads, ", :"))
	}
	return strings.Join(parts, "; ")
}

// Preflight runs one transaction of s's workload with one client
// against the server, as a cell would run it but for its length:
// pgbench -t 1 with the spec's variables and protocol, its script
// written into s.OutDir and pgbench started there (as the cells are),
// after the server's checks (database, pg_stat_statements, connection
// slots for s.Clients) and the workload's own setup unless s.SetupDone.
// It then waits for pgbench's backend to leave, so that its statistics
// are flushed before anything is measured. A failure is one line:
// pgbench's own first error (AbortCause), not its "Run was aborted".
func (r *Runner) Preflight(ctx context.Context, s Spec) error {
	c := r.resolve(s.Conn)
	if s.OutDir == "" {
		return exitcode.Failure(fmt.Errorf("workload %s: preflight: no directory to run in", s.Workload.Name))
	}
	if err := r.Proc.MkdirAll(s.OutDir, 0o755); err != nil {
		return exitcode.Failure(err)
	}
	conn, _, err := r.prepare(ctx, c, s)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if !s.SetupDone {
		if err := RunSetup(ctx, c, s.Workload); err != nil {
			return err
		}
	}
	script := filepath.Join(s.OutDir, s.Workload.Name+".sql")
	if err := r.Proc.WriteFile(script, []byte(WithThinkTime(s.Workload.Script, s.SleepMS)), 0o644); err != nil {
		return exitcode.Failure(err)
	}
	pgbench := s.Pgbench
	if pgbench == "" {
		pgbench = "pgbench"
	}
	args := []string{"-n", "-c", "1", "-j", "1", "-M", s.Protocol, "-t", "1"}
	for _, k := range slices.Sorted(maps.Keys(s.Vars)) {
		args = append(args, "-D", k+"="+s.Vars[k])
	}
	args = append(args, "-f", script, "-p", strconv.Itoa(c.Port))
	if c.Host != "" {
		args = append(args, "-h", c.Host)
	}
	if c.User != "" {
		args = append(args, "-U", c.User)
	}
	log := filepath.Join(s.OutDir, "pgbench.log")
	err = r.Proc.Run(ctx, proc.Cmd{Path: pgbench, Args: append(args, c.Database), Dir: s.OutDir, Log: log, User: r.User})
	if err != nil {
		if ctx.Err() != nil {
			return exitcode.Failure(ctx.Err())
		}
		// Not wrapped: the cause is the line, pgbench's tail is in its log.
		cause := err.Error()
		if c := AbortCause(err); c != "" {
			cause = fmt.Sprintf("%s (log: %s)", c, log)
		}
		return fmt.Errorf("workload %s: one transaction (pgbench -t 1) failed: %s", s.Workload.Name, cause)
	}
	r.waitBackendsGone(ctx, conn, c.Database, "pgbench", 2*time.Second)
	return nil
}

// AbortCause is pgbench's first error line in the output of err (a
// *proc.Error of pgbench: its stderr tail, then its log), "pgbench:
// error: client 0 script 0 aborted in command 0 query 0: ERROR:  syntax
// error at or near ":"", what its closing "Run was aborted; the above
// results are incomplete." refers to; "" when there is none. The tail
// comes first: in the log, stdout and stderr interleave, and pgbench
// writes "pgbench:" and the rest of a line apart.
func AbortCause(err error) string {
	pe, ok := errors.AsType[*proc.Error](err)
	if !ok {
		return ""
	}
	if c := abortCause(pe.Tail); c != "" {
		return c
	}
	f, ferr := os.Open(pe.Log)
	if ferr != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return abortCause(lines)
}

// abortCause is the first of lines that is pgbench's error other than
// "Run was aborted", its spaces collapsed.
func abortCause(lines []string) string {
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "pgbench: error: "); ok && !strings.HasPrefix(rest, "Run was aborted") {
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return ""
}

// UnknownSetting is a custom setting (prefix.name) the running server
// does not know: PostgreSQL accepts any prefix.name as a placeholder
// that nothing reads, and drops (with a warning in its log) one whose
// prefix a loaded library reserved.
type UnknownSetting struct {
	Name string
	// Like are the settings the server knows under the same prefix: a
	// loaded library defines them, and Name is likely a typo of one.
	// Empty when no loaded library defines the prefix.
	Like []string
}

// UnknownSettings returns the custom settings among names (those with a
// dot) that the server c names does not know now that it runs.
func (r *Runner) UnknownSettings(ctx context.Context, c Conn, names []string) ([]UnknownSetting, error) {
	var custom []string
	for _, n := range names {
		if strings.Contains(n, ".") {
			custom = append(custom, strings.ToLower(n))
		}
	}
	if len(custom) == 0 || r.Proc.DryRun {
		return nil, nil
	}
	c = r.resolve(c)
	conn, err := pgx.Connect(ctx, c.connString(c.Database))
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("%w: cannot connect to %s: %v", ErrServer, c.where(), err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var out []UnknownSetting
	for _, name := range custom {
		prefix, _, _ := strings.Cut(name, ".")
		rows, err := conn.Query(ctx, marker+" SELECT name FROM pg_settings WHERE lower(name) LIKE $1 || '.%' ORDER BY name", prefix)
		if err != nil {
			return nil, exitcode.Failure(fmt.Errorf("%w: pg_settings: %v", ErrServer, err))
		}
		known, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, exitcode.Failure(fmt.Errorf("%w: pg_settings: %v", ErrServer, err))
		}
		if !slices.ContainsFunc(known, func(k string) bool { return strings.EqualFold(k, name) }) {
			out = append(out, UnknownSetting{Name: name, Like: known})
		}
	}
	return out, nil
}
