package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/internal/proc"
)

// ErrUnavailable: perf cannot profile here; the error says why.
var ErrUnavailable = errors.New("perf: unavailable")

// DefaultHz is the sampling frequency: odd, so that it does not beat with
// timer ticks.
const DefaultHz = 499

// Check reports whether perf can record other processes here, and why not.
func Check() error {
	if _, err := exec.LookPath("perf"); err != nil {
		return fmt.Errorf("%w: perf is not installed (Debian: apt-get install linux-perf)", ErrUnavailable)
	}
	if os.Geteuid() != 0 {
		if v := host.PerfParanoid("/"); v != "" {
			if n, _ := strconv.Atoi(v); n > 0 {
				return fmt.Errorf("%w: kernel.perf_event_paranoid is %d: system-wide profiling needs ≤ 0 (sysctl kernel.perf_event_paranoid=0) or root", ErrUnavailable, n)
			}
		}
	}
	return nil
}

// Options say what to record.
type Options struct {
	// Processes lists the processes to keep: the postmaster and its
	// children. It is called when the window opens, every 100 ms while
	// it is open and when it closes, and samples of any process listed
	// at any of those times are kept.
	Processes func() []int
	Duration  time.Duration
	Hz        int
	// Raw is where perf.data goes; removed after conversion unless
	// KeepRaw.
	Raw     string
	KeepRaw bool
	// Log receives perf's own output.
	Log string
}

// Result is a recorded profile.
type Result struct {
	Profile *profile.Profile
	// Samples is the number of samples, Event the event perf used
	// (cycles, or cpu-clock where the hardware event is missing).
	Samples int
	Event   string
	// Unparsed counts perf script lines that could not be read.
	Unparsed int
	// CallGraphs is false when no sample had more than one frame: the
	// binaries lack frame pointers (build with --profiling).
	CallGraphs bool
	// PIDs are the processes whose samples were kept.
	PIDs []int
	// Path is the profile file RecordFile wrote ("" from Record).
	Path string
}

// watch looks at the processes every 100 ms from now until the returned
// function is called, which returns every pid seen (first included): a
// client's backend that starts and ends inside the window is kept, and
// so are those of a workload that ends before perf does (on a busy host
// perf can take a second to start and stop, and a look only at the
// window's ends found none of a 3 s cell's backends: 0 samples).
func watch(processes func() []int, first []int) func() map[int]bool {
	seen := map[int]bool{}
	for _, p := range first {
		seen[p] = true
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				for _, p := range processes() {
					seen[p] = true
				}
			}
		}
	}()
	return func() map[int]bool {
		close(stop)
		<-done
		for _, p := range processes() {
			seen[p] = true
		}
		return seen
	}
}

// Record runs perf record -g on the processes for the duration, then perf
// script, and returns the pprof profile.
func Record(ctx context.Context, run *proc.Runner, o Options) (*Result, error) {
	if err := Check(); err != nil {
		return nil, exitcode.Failure(err)
	}
	first := o.Processes()
	if len(first) == 0 {
		return nil, exitcode.BadInputf("perf record: no process to profile")
	}
	if o.Hz <= 0 {
		o.Hz = DefaultHz
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	// System-wide (-a), filtered to the cluster afterwards: attached to
	// the processes (-p), perf adds work to every context switch of
	// every profiled task, and a backend serving SELECT 1 switches twice
	// per transaction: select1 lost 43 % of its TPS that way, 4 % with
	// -a (bench/perf_overhead.sh).
	args := []string{"record", "-a", "-g", "-F", strconv.Itoa(o.Hz), "-o", o.Raw, "--", "sleep", fmt.Sprintf("%.3f", o.Duration.Seconds())}
	seen := watch(o.Processes, first)
	err := run.Run(ctx, proc.Cmd{Path: "perf", Args: args, Log: o.Log})
	keep := seen()
	if err != nil {
		return nil, exitcode.Failure(fmt.Errorf("perf record: %w", err))
	}
	if run.DryRun {
		return nil, nil
	}
	if !o.KeepRaw {
		defer os.Remove(o.Raw)
	}
	var out bytes.Buffer
	c := proc.Cmd{Path: "perf", Args: []string{"script", "-i", o.Raw}, Stdout: &out, Log: o.Log, ReadOnly: true}
	if err := run.Run(ctx, c); err != nil {
		return nil, exitcode.Failure(fmt.Errorf("perf script: %w", err))
	}
	all, bad, err := ParseScript(&out)
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	// The cluster's pids, and its program: a backend that exits during
	// the recording frees its pid, and on a busy host another process
	// (a multi-threaded one, whose samples perf script keys by thread)
	// can take it before the window ends.
	var events []Event
	for _, e := range all {
		if keep[e.PID] && e.Comm == "postgres" {
			events = append(events, e)
		}
	}
	res := &Result{Samples: len(events), Unparsed: bad}
	for p := range keep {
		res.PIDs = append(res.PIDs, p)
	}
	sort.Ints(res.PIDs)
	for _, e := range events {
		if res.Event == "" {
			res.Event = e.Name
		}
		if len(e.Stack) > 3 {
			res.CallGraphs = true
		}
	}
	res.Profile = Profile(events, int64(time.Second)/int64(o.Hz))
	return res, nil
}
