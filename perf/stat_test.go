package perf

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testing/testenv"
)

func TestParseStat(t *testing.T) {
	// perf 6.1 on a host with a PMU, and on this VM (no PMU).
	ok := "# started on Mon Nov 30 13:49:24 2026\n\n1234567890,,instructions:u,452069,100.00,1.23,insn per cycle\n"
	if n, err := ParseStat(strings.NewReader(ok), InstructionsEvent); err != nil || n != 1234567890 {
		t.Errorf("counted: %d, %v", n, err)
	}
	for name, in := range map[string]string{
		"not supported": "<not supported>,,instructions:u,0,100.00,,\n",
		"not counted":   "<not counted>,,instructions:u,0,0.00,,\n",
		"multiplexed":   "1234,,instructions:u,452069,48.50,,\n",
	} {
		if _, err := ParseStat(strings.NewReader(in), InstructionsEvent); !errors.Is(err, ErrNoCounter) {
			t.Errorf("%s: err = %v, want ErrNoCounter", name, err)
		}
	}
	if _, err := ParseStat(strings.NewReader("0.45,msec,task-clock:u,452069,100.00,0.493,CPUs utilized\n"), InstructionsEvent); err == nil || errors.Is(err, ErrNoCounter) {
		t.Errorf("report without the event: %v", err)
	}
	if _, err := ParseStat(strings.NewReader("12x,,instructions:u,1,100.00,,\n"), InstructionsEvent); err == nil {
		t.Error("bad count accepted")
	}
}

// TestCheckInstructions runs perf stat for real and expects what this
// host can do. perf itself must work: a software event (page faults of
// `true`) counts. Where the kernel exposes a CPU PMU, user-mode
// instructions count too; where it exposes none (a VM without one, like
// this project's: software, tracepoint and probe events only) the answer
// is ErrNoCounter because perf reports the event "<not supported>", not
// because perf failed to run.
func TestCheckInstructions(t *testing.T) {
	testenv.RequireTools(t, "perf")
	ctx := context.Background()
	run := &proc.Runner{}
	var stderr strings.Builder
	err := run.Run(ctx, proc.Cmd{Path: "perf", Args: []string{"stat", "-x,", "-e", "page-faults:u", "true"}, Stderr: &stderr, ReadOnly: true})
	testenv.Require(t, err == nil, "perf stat of a software event: %v", err)
	if n, err := ParseStat(strings.NewReader(stderr.String()), "page-faults:u"); err != nil || n <= 0 {
		t.Fatalf("page faults of true: %d, %v\n%s", n, err, stderr.String())
	}

	err = CheckInstructions(ctx, run)
	pmu := cpuPMU(t)
	t.Logf("CPU PMU %q; perf stat -e %s: %v", pmu, InstructionsEvent, err)
	switch {
	case pmu != "" && err != nil:
		t.Errorf("CheckInstructions on a host with the PMU %s: %v, want a count", pmu, err)
	case pmu == "" && (!errors.Is(err, ErrNoCounter) || !strings.Contains(err.Error(), "<not supported>")):
		t.Errorf("CheckInstructions on a host without a CPU PMU: %v, want ErrNoCounter for <not supported>", err)
	}
}

// cpuPMU returns the kernel's event source for the CPU's hardware
// counters ("cpu" on x86, "cpu_core" on hybrid Intel, "armv8_pmuv3_0"…
// on arm64), or "" when it has none.
func cpuPMU(t *testing.T) string {
	t.Helper()
	entries, err := os.ReadDir("/sys/bus/event_source/devices")
	if err != nil {
		t.Fatalf("perf event sources: %v", err)
	}
	for _, e := range entries {
		if n := e.Name(); n == "cpu" || n == "cpu_core" || n == "cpu_atom" || strings.HasPrefix(n, "armv8_pmu") || strings.HasPrefix(n, "armv7_") {
			return n
		}
	}
	return ""
}
