package perf

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/testenv"
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

// TestCheckInstructions runs perf stat for real: it must either count or
// say ErrNoCounter (this project's VM has no PMU).
func TestCheckInstructions(t *testing.T) {
	testenv.RequireTools(t, "perf")
	err := CheckInstructions(context.Background(), &proc.Runner{})
	if err != nil && !errors.Is(err, ErrNoCounter) {
		t.Errorf("CheckInstructions: %v, want nil or ErrNoCounter", err)
	}
	t.Logf("perf stat -e %s: %v", InstructionsEvent, err)
}
