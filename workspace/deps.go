package workspace

import (
	"time"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/doctor"
	"github.com/pgabtest/abtest/internal/host"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/results"
	"github.com/pgabtest/abtest/workload"
)

// MatrixDeps is what a matrix run (and nightly, bisect and the demo,
// which build on it) uses: the workspace's worktrees, builder and
// clusters (silent: the run prints its own lines on Out), the
// configuration's build options, the host's facts and doctor's
// findings. now is the run's clock, version abtest's.
func (w *Workspace) MatrixDeps(now func() time.Time, version string) (*matrix.Deps, error) {
	cm, err := w.Clusters()
	if err != nil {
		return nil, err
	}
	cm.Log = nil
	runAs := w.Config.RunAs
	return &matrix.Deps{
		Proc:         w.Run,
		Worktrees:    w.Worktrees(),
		Builder:      w.Builder(cm),
		Clusters:     cm,
		Workload:     &workload.Runner{Proc: w.Run, Getenv: func(string) string { return "" }, User: cm.User},
		BuildOptions: build.Options{NoCCache: !w.Config.CCache, Contrib: w.Config.Contrib},
		Out:          w.Out,
		Now:          now,
		Host: func() (host.Host, []results.Finding) {
			return host.Read("/"), doctor.Check(doctor.Live(runAs, ""))
		},
		Version: version,
	}, nil
}
