package build

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pgabtest/abtest/internal/progress"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/worktree"
)

// Describe names what a build builds: the ref, its short sha and the
// patches on top, "master 01234567 + fix.patch".
func Describe(prov *worktree.Provenance) string {
	sha := text.Short(prov.SHA)
	s := sha
	if !strings.HasPrefix(prov.SHA, prov.Ref) { // a ref typed as a sha is said once
		s = prov.Ref + " " + sha
	}
	for _, p := range prov.Patches {
		s += " + " + filepath.Base(p.File)
	}
	return s
}

// Outcome is a build's result in one phrase: type, build system, ccache
// and version.
func (i *Info) Outcome() string {
	cc := "ccache off"
	if i.CCache != nil {
		cc = fmt.Sprintf("ccache %.1f%% hits (%d/%d)", 100*i.CCache.HitRate, i.CCache.Hits, i.CCache.Hits+i.CCache.Misses)
	}
	return fmt.Sprintf("%s %s, %s; %s", i.Type, i.System, cc, i.Version)
}

// BuildShown is Build telling sink what it does: the build's start (what
// it builds, the estimate and where it comes from, the log), its phases
// and steps, and its outcome, or that it is up to date.
func (b *Builder) BuildShown(ctx context.Context, sink progress.Sink, prov *worktree.Provenance, wtDir string, o Options) (*Result, error) {
	j, err := b.plan(ctx, prov, wtDir, o)
	if err != nil {
		return nil, err
	}
	shown := !b.Run.DryRun
	est := b.Estimate(j.name, prov.SHA, j.info.Fingerprint, o, false, Configured(wtDir))
	if other := b.sameSource(j); other != nil && est.Kind != Cached {
		est = Estimate{Kind: Cached, From: reusing(other)}
	}
	if est.Kind != Cached && shown {
		sink.Emit(progress.Event{Kind: progress.BuildStart, Task: j.name, Detail: Describe(prov), Log: j.log,
			Estimate: est.Duration, From: est.Kind + ": " + est.From})
	}
	bb := *b
	bb.Progress = progress.Build{Sink: sink, Task: j.name}
	bb.learn = est.Reference
	res, err := bb.Build(ctx, prov, wtDir, o)
	if err != nil && shown {
		sink.Emit(progress.Event{Kind: progress.Abort})
	}
	if err != nil || !shown {
		return res, err
	}
	if res.Reused {
		sink.Emit(progress.Event{Kind: progress.BuildCached, Task: j.name, Detail: Describe(prov), From: reusing(res.Info)})
	} else if res.Skipped {
		sink.Emit(progress.Event{Kind: progress.BuildCached, Task: j.name, Detail: Describe(prov), From: "fingerprint " + text.Short(res.Info.Fingerprint)})
	} else {
		sink.Emit(progress.Event{Kind: progress.BuildDone, Task: j.name, Detail: res.Info.Outcome()})
	}
	return res, nil
}

// reusing says which install a build uses in its place (Options.ReuseFrom).
func reusing(other *Info) string {
	return "the same source installed as " + other.Name + " (fingerprint " + text.Short(other.Fingerprint) + ")"
}
