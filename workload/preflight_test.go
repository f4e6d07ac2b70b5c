package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
)

// TestScriptVariables reads a script's variables as pgbench substitutes
// them: casts, comments, quoted strings and meta-commands.
func TestScriptVariables(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   Variables
	}{
		{"SELECT 1;\n", Variables{}},
		{"-- reads :nothing, a comment\nSELECT :batch::int, x::text; -- and :notthis\n",
			Variables{Reads: []string{"batch"}, Bare: []string{"batch"}}},
		{"SELECT '12:30', ':quoted', 'a:b';\n",
			Variables{Reads: []string{"30", "quoted", "b"}}},
		{"\\set n :scale * 10\n\\sleep :think ms\n\\if :n > 1\nSELECT :n, :client_id;\n\\endif\n",
			Variables{Reads: []string{"scale", "think", "n", "client_id"}, Bare: []string{"scale", "think", "n", "client_id"}, Sets: []string{"n"}}},
		{"SELECT 1 AS one \\gset\nSELECT :one;\n",
			Variables{Reads: []string{"one"}, Bare: []string{"one"}, QuerySets: true}},
		{"\\setshell v echo :arg\n", Variables{Reads: []string{"arg"}, Bare: []string{"arg"}, Sets: []string{"v"}}},
	} {
		got := ScriptVariables(tc.script)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.script, got, tc.want)
		}
	}
	// The built-in scripts set what they read.
	for _, name := range Names {
		w, _ := Builtin(name)
		v := ScriptVariables(w.Script)
		for _, r := range v.Bare {
			if !slices.Contains(v.Sets, r) {
				t.Errorf("%s reads :%s, which it does not set", name, r)
			}
		}
	}
}

// TestCheckVars: a --var no workload reads (a typo: pgbench says
// nothing of an unused -D), and a :name a workload reads that nothing
// sets (pgbench leaves ":batch" in the SQL), are exit 2 in one line; a
// --var some workloads read is a note.
func TestCheckVars(t *testing.T) {
	sel, _ := Builtin("select1")
	churn, _ := Builtin("churn")
	batch := Workload{Name: "batch", Script: "SELECT :batch;\n"}
	gset := Workload{Name: "gset", Script: "SELECT 2 AS batch \\gset\nSELECT :batch;\n"}
	for _, tc := range []struct {
		ws   []Workload
		vars []string
		want string // "" is accepted
	}{
		{[]Workload{sel, churn}, nil, ""},
		{[]Workload{batch}, []string{"batch"}, ""},
		{[]Workload{gset}, nil, ""},
		{[]Workload{sel}, []string{"bacth"}, "--var bacth: no workload reads :bacth, and pgbench would ignore it (select1 reads none)"},
		{[]Workload{batch}, []string{"bacth"}, "--var bacth: no workload reads :bacth (did you mean batch?)"},
		{[]Workload{batch}, nil, "workload batch reads :batch, which nothing sets: give --var batch=V"},
	} {
		notes, err := CheckVars(tc.ws, tc.vars, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %v: %v", tc.ws[0].Name, tc.vars, err)
		case tc.want != "" && (exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%v %v: %v (notes %q); want exit 2 with %q", tc.ws[0].Name, tc.vars, err, notes, tc.want)
		}
	}
	if _, err := CheckVars([]Workload{sel}, []string{"tick_ms"}, []string{"tick_ms"}); err != nil {
		t.Errorf("a variable the setup SQL reads (${tick_ms}): %v", err)
	}
	notes, err := CheckVars([]Workload{sel, batch}, []string{"batch"}, nil)
	if err != nil || len(notes) != 1 || !strings.Contains(notes[0], "select1 does not read :batch") {
		t.Errorf("a variable one of two workloads reads: %q, %v; want a note", notes, err)
	}
}

// TestAbortCause: pgbench's first error, not its closing "Run was
// aborted", from its stderr tail, else from its log as proc writes it.
func TestAbortCause(t *testing.T) {
	want := `pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR: syntax error at or near ":"`
	tail := []string{
		"pgbench (15.20 (Debian 15.20-0+deb12u1))",
		`pgbench: error: client 0 script 0 aborted in command 0 query 0: ERROR:  syntax error at or near ":"`,
		"LINE 1: SELECT :batch;",
		"               ^",
		"pgbench: error: Run was aborted; the above results are incomplete.",
	}
	log := filepath.Join(t.TempDir(), "pgbench.log")
	os.WriteFile(log, []byte("# 2026-12-04T14:29:07Z $ pgbench -n -c 1 -T 1 benchmark\n"+strings.Join(tail, "\n")+"\n"), 0o644)
	if got := AbortCause(&proc.Error{Cmd: "pgbench", Tail: tail}); got != want {
		t.Errorf("AbortCause of the tail = %q, want %q", got, want)
	}
	if got := AbortCause(fmt.Errorf("workload x: %w", &proc.Error{Cmd: "pgbench", Tail: tail[4:], Log: log})); got != want {
		t.Errorf("AbortCause of the log = %q, want %q", got, want)
	}
	if got := AbortCause(&proc.Error{Cmd: "pgbench", Tail: tail[4:]}); got != "" {
		t.Errorf("AbortCause without the cause = %q", got)
	}
	if got := AbortCause(errors.New("pgbench: error: client 0 aborted")); got != "" {
		t.Errorf("AbortCause of no tool's error = %q", got)
	}
}

// TestPreflightAgainstAServer: one transaction of a script passes with
// its variable given, and fails without it in one line that is
// pgbench's own error; UnknownSettings tells a setting of a loaded
// library's prefix that the server does not know (with its siblings)
// from a placeholder of a prefix nothing defines.
func TestPreflightAgainstAServer(t *testing.T) {
	t.Parallel()
	st, install := startCluster(t, 1000)
	r := runner()
	if testenv.ServerUser(t) != "" {
		r.User = testpg.Account(t)
	}
	w := Workload{Name: "batch", Script: "SELECT :batch::int;\n"}
	s := spec(st, install, w)
	s.Protocol, s.Clients = "simple", 4
	s.Vars = map[string]string{"batch": "10"}
	s.OutDir = filepath.Join(testenv.SharedTempDir(t), "ok")
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if err := r.Preflight(context.Background(), s); err != nil {
			t.Fatalf("with :batch set: %v", err)
		}
		t.Logf("one preflight run: %s", time.Since(t0).Round(time.Millisecond))
	}
	s.Vars, s.OutDir = nil, filepath.Join(testenv.SharedTempDir(t), "unset")
	err := r.Preflight(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "pgbench: error: client 0") || strings.Contains(err.Error(), "Run was aborted") || strings.Contains(err.Error(), "\n") {
		log, _ := os.ReadFile(filepath.Join(s.OutDir, "pgbench.log"))
		t.Errorf("without :batch: %v; want one line with pgbench's own error; its log:\n%s", err, log)
	}
	unknown, err := r.UnknownSettings(context.Background(), s.Conn, []string{"work_mem", "pg_stat_statements.trackk", "myapp.x", "pg_stat_statements.max"})
	if err != nil || len(unknown) != 2 {
		t.Fatalf("UnknownSettings: %+v, %v; want pg_stat_statements.trackk and myapp.x", unknown, err)
	}
	if unknown[0].Name != "pg_stat_statements.trackk" || !slices.Contains(unknown[0].Like, "pg_stat_statements.track") {
		t.Errorf("a typo of a loaded library's setting: %+v", unknown[0])
	}
	if unknown[1].Name != "myapp.x" || len(unknown[1].Like) != 0 {
		t.Errorf("a placeholder: %+v", unknown[1])
	}
}
