package perf

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchKeepsEveryPidSeen: pids listed only in the middle of the
// window (a workload's backends that start after the window opens and
// end before it closes) are kept with those of its ends.
func TestWatchKeepsEveryPidSeen(t *testing.T) {
	var calls atomic.Int32
	procs := func() []int {
		switch n := calls.Add(1); {
		case n <= 2:
			return []int{1, 10 + int(n)} // 11, 12: a backend that comes and goes
		default:
			return []int{1}
		}
	}
	seen := watch(procs, []int{1, 2})
	time.Sleep(350 * time.Millisecond)
	got := seen()
	for _, p := range []int{1, 2, 11, 12} {
		if !got[p] {
			t.Errorf("pid %d not kept: %v (%d looks)", p, got, calls.Load())
		}
	}
}
