package main

import (
	"strings"
	"testing"
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
