package matrix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testenv"
	"github.com/pgabtest/abtest/internal/testpg"
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
