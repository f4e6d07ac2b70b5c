package workspace

import (
	"context"
	"fmt"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/progress"
)

// readExtensions checks the --extension trees before anything changes
// (no Makefile, two of one name: bad input).
func (w *Workspace) readExtensions(ctx context.Context, dirs []string) ([]*build.Extension, error) {
	var out []*build.Extension
	seen := map[string]bool{}
	for _, d := range dirs {
		e, err := build.ReadExtension(ctx, w.Run, d)
		if err != nil {
			return nil, err
		}
		if seen[e.Name] {
			return nil, exitcode.BadInputf("--extension %s: two trees named %s; give one", d, e.Name)
		}
		seen[e.Name] = true
		out = append(out, e)
	}
	return out, nil
}

// buildExtensions builds exts with PGXS into name's build res (cached by
// fingerprint), then starts again the clusters an install stopped, as
// Build does.
func (w *Workspace) buildExtensions(ctx context.Context, name string, res *build.Result, exts []*build.Extension, o build.Options) error {
	cm, err := w.Clusters()
	if err != nil {
		return err
	}
	b := w.Builder(cm)
	sink := progress.Console(w.out(), false, w.now)
	for _, e := range exts {
		r, err := b.BuildExtension(ctx, sink, e, name, res.Info.Install, res.Info.Fingerprint, o)
		if err != nil {
			return fmt.Errorf("building extension %s into %s: %w", e.Name, name, err)
		}
		for _, c := range r.Stopped {
			st, err := cm.ReadState(c)
			if err == nil {
				_, err = cm.Start(ctx, c, cluster.OptionsOf(st))
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
