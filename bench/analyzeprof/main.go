// Command analyzeprof runs what `abtest analyze DIR -o FILE` runs (load,
// analyse, write the report) with CPU and heap profiles and the time of
// each step, for bench/analyze.sh's figures.
//
//	go run ./bench/analyzeprof -cpuprofile cpu.pb.gz -format md DIR
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/pgabtest/abtest/analysis"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "analyzeprof:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("analyzeprof", flag.ContinueOnError)
	cpu := fs.String("cpuprofile", "", "write a CPU profile to `FILE`")
	mem := fs.String("memprofile", "", "write a heap profile (allocations) to `FILE`")
	format := fs.String("format", "md", "report `FORMAT`")
	count := fs.Int("count", 1, "run `N` times; the figures are each step's fastest")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("usage: analyzeprof [-cpuprofile FILE] [-memprofile FILE] [-format md|json|text] DIR…")
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	out, err := os.MkdirTemp("", "analyzeprof-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	var best [3]time.Duration
	for i := range *count {
		steps, err := once(fs.Args(), *format, out)
		if err != nil {
			return err
		}
		for j, d := range steps {
			if i == 0 || d < best[j] {
				best[j] = d
			}
		}
	}
	fmt.Fprintf(stderr, "load %.3f s, analyze %.3f s, output %.3f s\n", best[0].Seconds(), best[1].Seconds(), best[2].Seconds())
	if *mem != "" {
		f, err := os.Create(*mem)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}
	return nil
}

// once loads, analyses and writes the report, and returns each step's
// time.
func once(dirs []string, format, out string) ([3]time.Duration, error) {
	var steps [3]time.Duration
	t0 := time.Now()
	in, err := analysis.Load(dirs...)
	if err != nil {
		return steps, err
	}
	t1 := time.Now()
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		return steps, err
	}
	t2 := time.Now()
	if err := rep.Output(io.Discard, format, filepath.Join(out, "report."+format), io.Discard); err != nil {
		return steps, err
	}
	t3 := time.Now()
	return [3]time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)}, nil
}
