package matrix

import (
	"context"

	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/results"
)

// Run and Resume are what pipeline.Run does around RunLocked, without
// the report: the tests' way to run a plan.

// Run locks dir (results.LockRun) and runs plan into it.
func Run(ctx context.Context, deps *Deps, plan *results.Plan, dir string) error {
	held, err := results.LockRun(dir)
	if err != nil {
		deps.sink().Emit(progress.Event{Kind: progress.Abort})
		return err
	}
	defer held.Release()
	return RunLocked(ctx, deps, plan, held)
}

// Resume runs the rest of the plan stored in dir.
func Resume(ctx context.Context, deps *Deps, dir string) error {
	plan, err := results.ReadPlan(dir)
	if err != nil {
		return err
	}
	return Run(ctx, deps, plan, dir)
}
