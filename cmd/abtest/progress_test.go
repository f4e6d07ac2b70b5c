package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/internal/testing/testenv"
	"github.com/pgabtest/abtest/matrix"
)

// TestMatrixTakesSwitchBuildOptions: matrix accepts the build options of
// switch -b with the same meaning; the plan-deciding ones reach the
// request (recorded in plan.json), --force the builds; --resume refuses
// them like every plan flag.
func TestMatrixTakesSwitchBuildOptions(t *testing.T) {
	opts := []string{"--profiling", "--meson-opt", "-Dfoo=bar", "--configure-opt", "--enable-cassert", "--force", "--no-ccache"}
	m := parsed(t, append([]string{"matrix", "-k", "a,b"}, opts...)...)
	s := parsed(t, append([]string{"switch", "--worktree", "x", "-b", "release"}, opts...)...)
	for _, f := range []string{"profiling", "meson-opt", "configure-opt", "force", "no-ccache"} {
		if m[f] == nil || !jsonEqual(m[f], s[f]) {
			t.Errorf("--%s: matrix %v, switch %v", f, m[f], s[f])
		}
	}
	req := m["request"].(matrix.Request)
	want := build.Options{Profiling: true, MesonOpts: []string{"-Dfoo=bar"}, ConfigureOpts: []string{"--enable-cassert"}}
	if !jsonEqual(req.BuildOptions, want) {
		t.Errorf("request build options %+v, want %+v", req.BuildOptions, want)
	}
	code, _, stderr := abtest(t, nil, "matrix", "--resume", t.TempDir(), "--profiling")
	if code != 2 || !strings.Contains(stderr, "--profiling") {
		t.Errorf("--resume with --profiling: exit %d %q", code, stderr)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestMatrixDryRunEstimatesBuilds: -n counts the builds and says which
// estimate each has: the last cold build of this tree from its record,
// the machine's median for another tree, the references of another machine (said so)
// scaled by the load now without records (warm for a commit an earlier build of the plan compiles); the
// total adds builds and cells.
func TestMatrixDryRunEstimatesBuilds(t *testing.T) {
	testenv.RequireTools(t, "ccache")
	env, _ := setup(t)
	env["PG_INSTALL_DIR"] = filepath.Join(t.TempDir(), "install")
	env["BENCH_RESULTS_DIR"] = t.TempDir()
	env["PG_DATA_DIR"] = t.TempDir()
	a := filepath.Join(env["PG_INSTALL_DIR"], "a")
	os.MkdirAll(filepath.Join(a, "bin"), 0o755)
	rec, _ := json.Marshal(build.Info{Name: "a", Install: a, Fingerprint: strings.Repeat("0", 64), Seconds: build.Timings{Total: 200}})
	if err := os.WriteFile(filepath.Join(a, build.InfoFile), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := abtest(t, env, "-n", "matrix", "-k", "a=HEAD,b=HEAD~1", "-c", "1", "-w", "select1", "-r", "1", "-d", "10", "--warmup", "0", "--profiling", "--configure-opt", "--enable-cassert")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"# build options: release --profiling --configure-opt --enable-cassert\n",
		"# build a: cold, about 3m20s (the last cold build of this tree, ",
		"# build b: cold, about 3m20s (the median of 1 cold builds on this machine)",
		"# estimate: 7m5s = builds 6m40s (2 cold) + cells 25s (10 s measured + 0 s warm-up per cell, plus about 250ms of orchestration, 2s a cluster's first start, 500ms a restart)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// Without records: the stated defaults; the patched build of the
	// same commit comes second, when ccache has that commit (warm).
	os.RemoveAll(a)
	patch := filepath.Join(t.TempDir(), "fix.patch")
	os.WriteFile(patch, []byte("x"), 0o644)
	_, out, _ = abtest(t, env, "-n", "matrix", "-k", "a=HEAD,b=HEAD+"+patch, "-c", "1", "-w", "select1", "-r", "1", "-d", "10", "--warmup", "0")
	for _, want := range []string{
		`(?m)^# build a: cold, about \S+ \(reference, not this machine: no cold build recorded here; a cold build of 2m03s on a 2-CPU VM, ×[0-9.]+ for load [0-9.]+ now against 0\.0 then\)$`,
		`(?m)^# build b: warm, about \S+ \(reference, not this machine: no warm build recorded here; a warm build of 18s on a 2-CPU VM, ×`,
		`(?m)^# estimate: \S+ = builds \S+ \(1 warm, 1 cold\) \+ cells 25s`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
}
