package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/procfs"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/internal/testing/testpg"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
)

// fakeSource is a repository that builds like a PostgreSQL 15 tree
// (configure, make, make install) in a moment: its install copies the
// prebuilt install pg. With FAKE_HOLD=compile or install in its
// environment, that make step waits until the file FAKE_RELEASE exists
// and fails: a run killed there leaves no build going on afterwards.
func fakeSource(t *testing.T, pg string) string {
	hold := func(phase string) string {
		return "\tif [ \"$$FAKE_HOLD\" = " + phase + " ]; then while [ ! -e \"$$FAKE_RELEASE\" ]; do sleep 0.1; done; exit 1; fi\n"
	}
	repo := testenv.NewRepo(t, map[string]string{
		"src/include/catalog/catversion.h": "#define CATALOG_VERSION_NO\t202209061\n",
		"src/backend/parser/gram.c":        "/* generated */\n",
		"configure": `#!/bin/sh
for a in "$@"; do case "$a" in --prefix=*) prefix="${a#--prefix=}";; esac; done
mkdir -p contrib/pg_stat_statements
printf 'all:\ninstall:\n' >contrib/pg_stat_statements/Makefile
sed "s|@prefix@|$prefix|g" "$(dirname "$0")/Makefile.fake" >Makefile
touch config.status
`,
		"Makefile.fake": "all:\n\ttouch compiling\n" + hold("compile") +
			"install:\n\tmkdir -p @prefix@\n\tcp -a " + pg + "/. @prefix@/\n\ttouch installing\n" + hold("install"),
	})
	if err := os.Chmod(filepath.Join(repo, "configure"), 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, repo, "commit", "-qam", "configure is a program")
	return repo
}

// kill -9 of abtest in each phase of a run (build, install, initdb,
// warm-up, measurement) while the user's cluster of the same name runs
// from the install the run builds into: the build stops it, and
// afterwards the next command (status, env, a --resume, even of a
// directory without a plan) starts it again on its port and settings,
// and says so. Killed during the compile, before any stop, the cluster
// has run all along. Cells of 1 s: a phase is seen on disk within
// milliseconds, and the resumes measure nothing the test reads. Alone,
// with cells of 3 s it took 52–66 s at load 7 (warm-up and measurement
// 19–26 s each), with 1 s 28–45 s at load 3–6 (9–16 s); 22–28
// CPU-seconds either way. Open-loop (plumbingRate) as the fault suite:
// 16.9 CPU-seconds alone against 18.8 in a closed loop (within the
// noise: its cells are few and short; perf -a put most of the rest in
// postgres processes, initdb's among them).
func TestKilledRunRestoresUserCluster(t *testing.T) {
	t.Parallel() // its proof is no TPS figure: it may share the CPUs
	testenv.RequireTools(t, "cc", "make")
	pg := testenv.PGInstall(t)
	env := matrixEnv(t)
	base := filepath.Dir(env["PG_DATA_DIR"])
	// Debian's binaries find their share directory at ../../../../share
	// from bin: the installs live where that is PostgreSQL 15's.
	env["PG_INSTALL_DIR"] = filepath.Join(base, "i", "usr", "lib", "postgresql")
	share, err := exec.Command(filepath.Join(pg, "bin", "pg_config"), "--sharedir").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(base, "i", "usr", "share", "postgresql"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.TrimSpace(string(share)), filepath.Join(base, "i", "usr", "share", "postgresql", "15")); err != nil {
		t.Fatal(err)
	}
	env["PG_SOURCE_DIR"] = fakeSource(t, pg)
	if code, stdout, stderr := abtest(t, env, "switch", "-k", "HEAD", "--worktree", "f1", "-b", "release", "--set", "work_mem=7MB"); code != 0 {
		t.Fatalf("switch: exit %d\n%s\n%s", code, stdout, stderr)
	}
	cm := testpg.ManagerAt(t, env["PG_DATA_DIR"])
	user, err := cm.ReadState("f1")
	if err != nil {
		t.Fatal(err)
	}
	cellsDir := func(out string) string { return filepath.Join(out, "cells") }
	built := filepath.Join(env["PG_WORKTREES_DIR"], "f1", "build")
	for _, p := range []struct {
		phase, hold string
		reached     func(out string) bool
		next        func(out string) []string
	}{
		{"build", "compile", func(string) bool { return exists(filepath.Join(built, "compiling")) }, nil},
		{"install", "install", func(string) bool { return exists(filepath.Join(built, "installing")) },
			func(out string) []string { return []string{"matrix", "--resume", out} }},
		{"initdb", "", func(string) bool { return exists(cluster.InitdbStaging(env["PG_DATA_DIR"], matrix.ClusterName("f1"))) },
			func(string) []string { return []string{"env", "--worktree", "f1"} }},
		{"warm-up", "", func(out string) bool { return hasDir(cellsDir(out), "warm-up") },
			func(out string) []string { return []string{"matrix", "--resume", out, "--sample-every", "1s"} }},
		{"measurement", "", func(out string) bool {
			return countLines(filepath.Join(out, results.CellsFile)) >= 1 && len(pgbenchOf(out)) > 0
		}, func(out string) []string { return []string{"matrix", "--resume", out} }},
	} {
		t.Run(p.phase, func(t *testing.T) {
			// The previous phase's run left its own clusters: running, or
			// (killed in initdb) a data directory not yet the server's.
			for _, c := range []string{matrix.ClusterName("f1"), matrix.ClusterName("b")} {
				dir := filepath.Join(env["PG_DATA_DIR"], c)
				if err := cm.Remove(context.Background(), c); err != nil {
					if _, running := cluster.PID(dir); running {
						t.Fatal(err)
					}
					os.RemoveAll(dir)
				}
			}
			os.Remove(filepath.Join(built, "compiling"))
			os.Remove(filepath.Join(built, "installing"))
			out := filepath.Join(env["BENCH_RESULTS_DIR"], p.phase)
			release := filepath.Join(base, "release-"+p.phase)
			t.Cleanup(func() { os.WriteFile(release, nil, 0o644) })
			runEnv := map[string]string{"FAKE_HOLD": p.hold, "FAKE_RELEASE": release}
			for k, v := range env {
				runEnv[k] = v
			}
			c := startMatrix(t, runEnv,
				"matrix", "-k", "f1=HEAD,b=install:"+pg, "--force", "-c", "1", "-w", "select1", "-r", "1", "-d", "1", "--warmup", "1", "-R", plumbingRate, "-o", out, "--sample-every", "1s")
			deadline := time.Now().Add(90 * time.Second)
			for !p.reached(out) {
				if time.Now().After(deadline) || c.cmd.ProcessState != nil {
					t.Fatalf("the run did not reach %s:\n%s", p.phase, c.out)
				}
				time.Sleep(5 * time.Millisecond)
			}
			c.cmd.Process.Kill()
			c.cmd.Wait()
			// pgbench mostly dies at its next progress line, on the pipe
			// abtest held; one that does not is ended by the resume.
			orphans := pgbenchOf(out)
			os.WriteFile(release, nil, 0o644)
			_, running := cluster.PID(user.DataDir)
			if running != (p.phase == "build") {
				t.Fatalf("killed in %s: the user's cluster running %v: the test proves nothing\n%s", p.phase, running, c.out)
			}
			args := []string{"status"}
			if p.next != nil {
				args = p.next(out)
			}
			code, stdout, stderr := abtest(t, env, args...)
			t.Logf("after kill -9 in %s: abtest %s: exit %d\n%s\n%s", p.phase, strings.Join(args, " "), code, stdout, stderr)
			if p.phase != "build" && !strings.Contains(stderr, fmt.Sprintf("restored cluster f1 on port %d, stopped by abtest pid %d", user.Port, c.cmd.Process.Pid)) {
				t.Errorf("abtest %s does not say it restored f1 (port %d, stopped by pid %d)", strings.Join(args, " "), user.Port, c.cmd.Process.Pid)
			}
			for _, pid := range orphans {
				if procfs.Alive(pid) {
					t.Errorf("pgbench pid %d of the killed run still runs after abtest %s", pid, strings.Join(args, " "))
				}
			}
			st, err := cm.ReadState("f1")
			if err != nil {
				t.Fatal(err)
			}
			if _, running := cluster.PID(user.DataDir); !running || st.Port != user.Port || st.Settings["work_mem"] != "7MB" || st.Stopped != nil {
				t.Errorf("the user's cluster after kill -9 in %s and abtest %s: running %v, port %d (was %d), work_mem %q, stop record %+v",
					p.phase, args[0], running, st.Port, user.Port, st.Settings["work_mem"], st.Stopped)
			}
		})
	}
}

// pgbenchOf lists the pgbench processes that write into results
// directory out.
func pgbenchOf(out string) []int {
	var pids []int
	for _, s := range procfs.All() {
		argv, err := procfs.Cmdline(s.PID)
		if err == nil && s.Alive() && len(argv) > 0 && filepath.Base(argv[0]) == "pgbench" && strings.Contains(strings.Join(argv, " "), out+"/") {
			pids = append(pids, s.PID)
		}
	}
	return pids
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
