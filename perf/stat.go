package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pgabtest/abtest/internal/proc"
)

// InstructionsEvent is the hardware event abtest counts with perf stat:
// instructions retired in user mode only, as rustc-perf gates on, so
// that the kernel's share (interrupts, scheduling, the network stack)
// stays out.
const InstructionsEvent = "instructions:u"

// ErrNoCounter: perf stat could not count the event on this host (no
// PMU, as in most VMs; or perf_event_paranoid forbids it).
var ErrNoCounter = errors.New("perf: hardware counter not available")

// StatArgs returns the arguments of `perf stat` that count event over
// the command that follows them (and everything it forks), writing the
// CSV report to out.
func StatArgs(event, out string) []string {
	return []string{"stat", "-x,", "-e", event, "-o", out, "--"}
}

// ParseStat reads the CSV report of `perf stat -x,` and returns the count
// of event. A line reads
//
//	COUNT,UNIT,EVENT,RUNTIME,PERCENT,METRIC,METRIC_UNIT
//
// where COUNT is "<not supported>" or "<not counted>" when the event
// could not be counted (ErrNoCounter). A count from a multiplexed
// counter (PERCENT below 100) is an estimate, not a count: it is
// refused too.
func ParseStat(r io.Reader, event string) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 || f[2] != event {
			continue
		}
		if strings.HasPrefix(f[0], "<") {
			return 0, fmt.Errorf("%w: %s: %s", ErrNoCounter, event, f[0])
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("perf stat: %s: bad count %q", event, f[0])
		}
		if len(f) >= 5 && f[4] != "" {
			if pct, err := strconv.ParseFloat(f[4], 64); err == nil && pct < 100 {
				return 0, fmt.Errorf("%w: %s was multiplexed (counted %.2f%% of the time): the count is an estimate", ErrNoCounter, event, pct)
			}
		}
		return n, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("perf stat: no %s line in its report", event)
}

// CheckInstructions tells whether perf can count user-mode instructions
// here, by counting those of `true`: nil when it can, ErrNoCounter (or
// the reason perf could not run) otherwise.
func CheckInstructions(ctx context.Context, run *proc.Runner) error {
	var stderr strings.Builder
	// perf stat writes its report to stderr without -o.
	err := run.Run(ctx, proc.Cmd{Path: "perf", Args: []string{"stat", "-x,", "-e", InstructionsEvent, "true"}, Stderr: &stderr, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("%w: perf stat: %v", ErrNoCounter, err)
	}
	_, err = ParseStat(strings.NewReader(stderr.String()), InstructionsEvent)
	return err
}
