package matrix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/results"
)

func TestClusterName(t *testing.T) {
	if got := ClusterName("base"); got != "m-base" {
		t.Errorf("ClusterName(base) = %q", got)
	}
	long := strings.Repeat("x", 64)
	got := ClusterName(long)
	if len(got) != 64 || !strings.HasPrefix(got, "m-x") || got == ClusterName(long[:63]+"y") {
		t.Errorf("ClusterName of 64 characters = %q", got)
	}
}

// TestCheckServer: a cell records the server it measured and fails when
// that is not the plan's build: another fingerprint, or a binary
// installed over the running server ("(deleted)").
func TestCheckServer(t *testing.T) {
	t.Parallel()
	install := testpg.CopyInstall(t, testenv.PGInstall(t), "fp-one")
	cm := testpg.Manager(t)
	ctx := context.Background()
	st, err := cm.Start(ctx, "m-x", cluster.Options{Install: install, Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := cluster.PID(st.DataDir)

	rec := &results.Record{}
	if err := checkServer(cm, "m-x", &results.Commit{Label: "x", Fingerprint: "fp-one"}, rec); err != nil {
		t.Errorf("the planned server: %v", err)
	}
	if s := rec.Server; s == nil || s.PID != pid || s.Fingerprint != "fp-one" || s.Exe != filepath.Join(install, "bin", "postgres") || !strings.HasPrefix(s.Version, "PostgreSQL 15") {
		t.Errorf("recorded server %+v", rec.Server)
	}
	if err := checkServer(cm, "m-x", &results.Commit{Label: "x", Fingerprint: "fp-two"}, rec); err == nil || !strings.Contains(err.Error(), "fingerprint") {
		t.Errorf("another fingerprint: %v", err)
	}
	// Install over the running server (a new inode, as make install does).
	bin := filepath.Join(install, "bin", "postgres")
	if out, err := exec.Command("cp", "-p", bin, bin+".new").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	err = checkServer(cm, "m-x", &results.Commit{Label: "x", Fingerprint: "fp-one"}, rec)
	if err == nil || !strings.Contains(err.Error(), "replaced") || !strings.HasSuffix(rec.Server.Exe, "(deleted)") {
		t.Errorf("a replaced binary: %v, recorded %+v", err, rec.Server)
	}
}

type fakeServers []string

func (f fakeServers) StopUsing(context.Context, string) ([]string, error) { return f, nil }

// TestRecordStops: the user's clusters a build stops are remembered to
// be started again at the end of the run (their states record the stop
// for a kill: cluster.StopRecord); the matrix's own are not, their cells
// start them.
func TestRecordStops(t *testing.T) {
	r := &run{deps: &Deps{Proc: &proc.Runner{}}, dir: t.TempDir(), plan: &results.Plan{Commits: []results.Commit{{Label: "x", Build: "x"}}}}
	if err := r.loadClusterLog(); err != nil {
		t.Fatal(err)
	}
	s := &recordStops{Servers: fakeServers{"x", ClusterName("x")}, r: r}
	if _, err := s.StopUsing(context.Background(), "/i"); err != nil {
		t.Fatal(err)
	}
	if len(r.restore) != 1 || !r.restore["x"] || len(r.started) != 0 {
		t.Errorf("restore %v, started %v", r.restore, r.started)
	}
}

// A run of a results directory first ends what a killed run of it left
// running (processes.json), says so, then records its own commands
// there until it ends, when the file goes.
func TestRunEndsWhatAKilledRunLeft(t *testing.T) {
	dir := t.TempDir()
	// A process a killed run started, in its own group, still running.
	left, err := (&proc.Runner{Track: proc.NewTracker(filepath.Join(dir, ProcessesFile))}).Start(context.Background(), proc.Cmd{Path: "/bin/sleep", Args: []string{"60"}})
	if err != nil {
		t.Fatal(err)
	}
	pid := left.Pid()
	t.Cleanup(func() { left.Signal(9) })
	// The file as SIGKILL left it: the tracker's own record of the
	// running sleep (copied, since this tracker would write it again when
	// the sleep ends).
	data, err := os.ReadFile(filepath.Join(dir, ProcessesFile))
	if err != nil || !strings.Contains(string(data), "/bin/sleep") {
		t.Fatalf("processes.json = %q, %v", data, err)
	}
	out := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, ProcessesFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	r := &run{deps: &Deps{Proc: &proc.Runner{}, Out: &said, Quiet: false}, dir: out}
	untrack, err := r.trackProcesses()
	if err != nil {
		t.Fatal(err)
	}
	left.Wait()
	if !strings.Contains(said.String(), "ended sleep (pid "+strconv.Itoa(pid)+")") {
		t.Errorf("the run did not say it ended the sleep pid %d: %q", pid, said.String())
	}
	if r.deps.Proc.Track == nil {
		t.Fatal("the run does not record its own commands")
	}
	if err := r.deps.Proc.Run(context.Background(), proc.Cmd{Path: "/bin/true"}); err != nil {
		t.Fatal(err)
	}
	untrack()
	if _, err := os.Stat(filepath.Join(out, ProcessesFile)); !os.IsNotExist(err) {
		t.Errorf("%s left after the run ended: %v", ProcessesFile, err)
	}
}
