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
	"runtime/trace"
	"syscall"
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
	live := fs.String("liveprofile", "", "write a heap profile of what is live after the analysis (before the output) to `FILE`")
	format := fs.String("format", "md", "report `FORMAT`")
	count := fs.Int("count", 1, "run `N` times; the figures are each step's fastest")
	tr := fs.String("trace", "", "write an execution trace (go tool trace) to `FILE`")
	overlap := fs.Bool("overlap", false, "analyse and write as abtest analyze does (analysis.AnalyzeOutput: md's tps-time plots drawn while analysing); the output step is then both")
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
	if *tr != "" {
		f, err := os.Create(*tr)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	out, err := os.MkdirTemp("", "analyzeprof-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	var best, bestCPU [3]time.Duration
	for i := range *count {
		steps, cpus, err := once(fs.Args(), *format, out, *live, *overlap)
		if err != nil {
			return err
		}
		for j := range steps {
			if i == 0 || steps[j] < best[j] {
				best[j] = steps[j]
			}
			if i == 0 || cpus[j] < bestCPU[j] {
				bestCPU[j] = cpus[j]
			}
		}
	}
	// CPU seconds beside wall: on a shared machine wall time is the
	// load's.
	fmt.Fprintf(stderr, "load %.3f s (%.3f CPU-s), analyze %.3f s (%.3f CPU-s), output %.3f s (%.3f CPU-s)\n",
		best[0].Seconds(), bestCPU[0].Seconds(), best[1].Seconds(), bestCPU[1].Seconds(), best[2].Seconds(), bestCPU[2].Seconds())
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
// wall time and the process's CPU time (user and system) in it.
func once(dirs []string, format, out, live string, overlap bool) (steps, cpus [3]time.Duration, err error) {
	t0, c0 := time.Now(), cpuTime()
	// What abtest analyze -o loads for format: all but md to a file
	// leave the progress reports out.
	in, err := analysis.LoadFor(format, filepath.Join(out, "report."+format), dirs...)
	if err != nil {
		return steps, cpus, err
	}
	t1, c1 := time.Now(), cpuTime()
	if overlap {
		if _, err := analysis.AnalyzeOutput(in, analysis.Options{}, io.Discard, format, filepath.Join(out, "report."+format), io.Discard); err != nil {
			return steps, cpus, err
		}
		t3, c3 := time.Now(), cpuTime()
		return [3]time.Duration{t1.Sub(t0), 0, t3.Sub(t1)}, [3]time.Duration{c1 - c0, 0, c3 - c1}, nil
	}
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		return steps, cpus, err
	}
	if live != "" {
		if err := liveProfile(live); err != nil {
			return steps, cpus, err
		}
	}
	t2, c2 := time.Now(), cpuTime()
	if err := rep.Output(io.Discard, format, filepath.Join(out, "report."+format), io.Discard); err != nil {
		return steps, cpus, err
	}
	t3, c3 := time.Now(), cpuTime()
	return [3]time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)}, [3]time.Duration{c1 - c0, c2 - c1, c3 - c2}, nil
}

// liveProfile writes a heap profile of what is live now.
func liveProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
