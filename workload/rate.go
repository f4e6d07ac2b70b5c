package workload

import "fmt"

// MaxRate is the highest offered rate (pgbench -R) abtest accepts, in
// transactions per second: beyond any server, and far below where
// pgbench's schedule arithmetic loses precision.
const MaxRate = 1e9

// CheckRate refuses an offered rate that is not a number from 0 (a
// closed loop) to MaxRate: NaN and infinities included.
func CheckRate(r float64) error {
	if !(r >= 0 && r <= MaxRate) {
		return fmt.Errorf("rate %g: want 0 (a closed loop) to %g transactions per second", r, float64(MaxRate))
	}
	return nil
}
