package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgabtest/abtest/internal/testing/storetest"
)

// fuzzCommand runs `abtest -n CMD ARGS…` with ARGS from the fuzzer (one
// per line): the flag and plan parsing must never panic, and must end in
// exit 0 (a valid dry run, or help) or 2 (bad input, one line).
func fuzzCommand(f *testing.F, command string, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
	}
	env, _ := setup(f)
	f.Fuzz(func(t *testing.T, in string) {
		args := append([]string{"-n", command}, strings.Split(in, "\n")...)
		code, _, stderr := abtest(t, env, args...)
		// An old spelling's deprecation note comes before the one line.
		stderr = regexp.MustCompile(`(?m)^abtest: deprecated: .*\n`).ReplaceAllString(stderr, "")
		if code != 0 && code != 2 {
			t.Fatalf("%q: exit %d, %s", args, code, stderr)
		}
		if code == 2 && strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 {
			t.Fatalf("%q: exit 2 with more than one line: %q", args, stderr)
		}
	})
}

func FuzzMatrixFlags(f *testing.F) {
	fuzzCommand(f, "matrix",
		"-k\na=install:/x,b=install:/x\n-w\nselect1\n-r\n1",
		"-k\na=install:/x,b=install:/x\n-c\n2,2",
		"-k\na=install:/x,b=install:/x\n--set\nwork_mem=1MB,4MB\n-C\n1\n-d\n1",
		"-k\na=install:/x,b=install:/x\n--until-decided\n--max-repeats\n9\n--budget\n1h",
		"-k\na=install:/x,b=install:/x\n-r\n100000000",
		"-k\na=install:/x,b=install:/x\n--shard\n2/3\n--order\nrandom\n--seed\n-5",
		"--resume\n/nonexistent\n-c\n4",
		"-k\nHEAD,HEAD~1\n--preset\nfull",
		"-k\na=install:/x,b=install:/x\n-R\n500,1000\n--var\nbatch=1,10\n--condition\nnone,xmin-holder,bulk-update=500",
		"-k\na=install:/x,b=install:/x\n-R\nNaN,0\n--must-not-saturate", "-k\na=install:/x,b=install:/x\n--condition\nfile:/nonexistent",
		"-k\na=install:/x,b=install:/x\n--var\n1x=2\n--var\nbatch=", "-k\na=install:/x,b=install:/x\n--condition\nidle-slot\n--set\nwal_level=replica",
		"-k\na=install:/x,b=install:/x\n--initdb-opt=-D/x\n--pgbench\nrel/pgbench", "-k\na=install:/x,b=install:/x\n--initdb-opt\n--no-data-checksums\n--instr-repeats\n-1",
	)
}

func FuzzBenchFlags(f *testing.F) {
	fuzzCommand(f, "bench",
		"-d\n1\n-w\nselect1\n-p\n5999\n--host\n/nonexistent",
		"--sample-every\n-1s", "-t\n-1", "-d\n99999999999", "-p\n70000", "-w\nselect1,select1", "-R\n1e300\n-d\n1",
		"-C\n0-1\n-d\n1\n-w\nchurn\n-M\nprepared",
	)
}

func FuzzSwitchFlags(f *testing.F) {
	fuzzCommand(f, "switch",
		"-w\nx\n-c\nHEAD", "-w\nx\n--stop", "-w\n-x", "-w\n.git\n-c\nHEAD~1", "-w\nx\n-p\n70000\n--install\n/x",
		"-w\nx\n--set\nsearch_path=a,b\n--install\n/x", "-w\nx\n-b\nfast", "-w\nx\n--remove\n--stop",
	)
}

// FuzzStoreReaderFlags drives analyze, history, dashboard, serve,
// annotate and store (the input's first line; the rest are the arguments, one per
// line, $RUN a results directory and $ROOT a directory of the fuzzer's)
// against a store holding one run: never a panic, exit 0 or 2, a refusal
// in one line, and a refusal creates nothing (in the results root, the
// directory of $ROOT or the working directory). serve stops once it
// says it is serving.
func FuzzStoreReaderFlags(f *testing.F) {
	for _, s := range []string{
		"analyze\n$RUN", "analyze\n$RUN\n--alpha\nNaN", "analyze\n$RUN\n--threshold\ntps=Inf", "analyze\n$RUN\n--baseline\nnope",
		"analyze\n$RUN\n-o\n$ROOT/nodir/r.md", "analyze\n$RUN\n-o\n\x00", "analyze\n$RUN\n-o\n0/", "analyze\n--run\nseed:1", "analyze\n$RUN\n--format\ntext\n--fail-on-regression",
		"history\n--metric\ntps\n--config\nselect1", "history\n--metric\ntps\n--since\n30d\n--json", "history\n--since\nbogus",
		"dashboard\n-o\n$ROOT/site", "dashboard", "serve\n--addr\n127.0.0.1:0", "serve\n--addr\n127.0.0.1:99999", "serve\n--addr\n10.0.0.1:80",
		"annotate\n--commit\nnosuch\n--metric\ntps\n--note\nx", "annotate\n--metric\ntps", "annotate\n--commit\nhead\n--metric\ntps\n--note\nexpected",
		"store\nimport\n$RUN", "store\nimport\n$ROOT", "store\nimport\n--store\nftp://x/y\n$RUN", "store\nimport", "store\nbogus",
	} {
		f.Add(s)
	}
	root := f.TempDir()
	run, err := storetest.Nights(filepath.Join(root, "nights"), 1, nil)
	if err != nil {
		f.Fatal(err)
	}
	env := map[string]string{"BENCH_RESULTS_DIR": filepath.Join(root, "results")}
	if code, _, stderr := abtest(f, env, "store", "import", run[0]); code != 0 {
		f.Fatalf("store import: exit %d: %s", code, stderr)
	}
	f.Fuzz(func(t *testing.T, in string) {
		command, rest, _ := strings.Cut(in, "\n")
		if !slices.Contains([]string{"analyze", "history", "dashboard", "serve", "annotate", "store"}, command) {
			return
		}
		dir := t.TempDir()
		t.Chdir(t.TempDir())
		args := []string{command}
		if command == "serve" {
			// Fuzz workers run at once: serve's default port would be
			// taken by another's serve (exit 3). An --addr in the
			// input comes later and wins.
			args = append(args, "--addr", "127.0.0.1:0")
		}
		if rest != "" {
			args = append(args, strings.Split(strings.NewReplacer("$RUN", run[0], "$ROOT", dir).Replace(rest), "\n")...)
		}
		before := tree(t, env["BENCH_RESULTS_DIR"], dir, ".")
		code, stderr := abtestUntilServing(t, env, args)
		if code != 0 && code != 2 {
			t.Fatalf("%q: exit %d, %s", args, code, stderr)
		}
		if code == 2 && strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 {
			t.Fatalf("%q: exit 2 with more than one line: %q", args, stderr)
		}
		if after := tree(t, env["BENCH_RESULTS_DIR"], dir, "."); code == 2 && !slices.Equal(before, after) {
			t.Fatalf("%q: refused (%s) but the files changed from %q to %q", args, strings.TrimSpace(stderr), before, after)
		}
	})
}

// abtestUntilServing runs abtest ARGS, ending a serve once it says
// "serving".
func abtestUntilServing(t *testing.T, env map[string]string, args []string) (int, string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr strings.Builder
	stdout := writerFunc(func(p []byte) (int, error) {
		if bytes.HasPrefix(p, []byte("serving ")) {
			cancel()
		}
		return len(p), nil
	})
	wd, _ := os.Getwd()
	code := Main(ctx, append([]string{"abtest"}, args...), &Env{
		Stdout: stdout, Stderr: &stderr, Getenv: func(k string) string { return env[k] },
		Getwd: func() (string, error) { return wd, nil }, Home: "/nonexistent-home", Now: time.Now, Geteuid: os.Geteuid,
	})
	return code, stderr.String()
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

// tree lists every path under roots (the roots themselves when they
// exist), the SQLite journal files a store leaves for a moment aside.
func tree(t *testing.T, roots ...string) []string {
	var out []string
	for _, r := range roots {
		filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !strings.HasSuffix(p, "-wal") && !strings.HasSuffix(p, "-shm") && !strings.HasSuffix(p, "-journal") {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}
