package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/worktree"
)

func buildFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "build", Aliases: []string{"b", "build-type"}, Usage: "build and install: `TYPE` release, debug or debug_noassert"},
		&cli.StringSliceFlag{Name: "meson-opt", Usage: "extra meson `OPTION` such as -Dfoo=bar (repeatable)"},
		&cli.StringSliceFlag{Name: "configure-opt", Usage: "extra configure `OPTION` for trees without meson.build (repeatable)"},
		&cli.BoolFlag{Name: "profiling", Usage: "keep frame pointers and symbols, so perf records call graphs"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		&cli.BoolFlag{Name: "force", Usage: "rebuild even when nothing changed"},
	}
}

func buildOptions(cmd *cli.Command, cfg *config.Loaded) (build.Options, error) {
	t, err := build.ParseType(cmd.String("build"))
	if err != nil {
		return build.Options{}, err
	}
	return build.Options{
		Type:          t,
		MesonOpts:     cmd.StringSlice("meson-opt"),
		ConfigureOpts: cmd.StringSlice("configure-opt"),
		Profiling:     cmd.Bool("profiling"),
		NoCCache:      cmd.Bool("no-ccache") || !cfg.CCache,
		Contrib:       cfg.Contrib,
		Force:         cmd.Bool("force"),
	}, nil
}

// runBuild builds worktree name. The builder stops every cluster running
// the install's binaries before it installs over them (the cluster
// manager owns that rule); they are started again afterwards with their
// settings, on the new build: cluster.Start keeps the data directory
// when the build's catalog version matches it and makes it anew (with a
// message) when it does not.
func runBuild(ctx context.Context, env *Env, cfg *config.Loaded, run *proc.Runner, wt *worktree.Manager, name string, o build.Options) (*build.Result, error) {
	prov, err := wt.Info(ctx, name)
	if err != nil {
		return nil, err
	}
	dir, _ := wt.Dir(name)
	cm, err := clusters(cfg, run, env)
	if err != nil {
		return nil, err
	}
	cm.Log = env.Stdout
	b := &build.Builder{
		WorktreesRoot: cfg.WorktreesDir,
		InstallRoot:   cfg.InstallDir,
		Run:           run,
		Progress:      newProgress(env.Stdout, name),
		Servers:       cm,
		User:          cm.User, // as root, the server's account builds
	}
	res, err := b.Build(ctx, prov, dir, o)
	if err != nil {
		return nil, err
	}
	if run.DryRun {
		return res, nil
	}
	i := res.Info
	if res.Skipped {
		fmt.Fprintf(env.Stdout, "build %s: unchanged (fingerprint %s, %s %s); skipped, --force rebuilds\n", name, matrix.Short(i.Fingerprint), i.Type, i.Version)
	} else {
		cc := "ccache off"
		if i.CCache != nil {
			cc = fmt.Sprintf("ccache %.1f%% hits (%d/%d)", 100*i.CCache.HitRate, i.CCache.Hits, i.CCache.Hits+i.CCache.Misses)
		}
		fmt.Fprintf(env.Stdout, "build %s: %s %s in %.1f s (configure %.1f, compile %.1f, install %.1f), %s; %s (log: %s)\n",
			name, i.Type, i.System, i.Seconds.Total, i.Seconds.Configure, i.Seconds.Compile, i.Seconds.Install, cc, i.Version, i.Log)
	}
	for _, c := range res.Stopped {
		st, err := cm.ReadState(c)
		if err != nil {
			return res, err
		}
		if _, err := cm.Start(ctx, c, cluster.OptionsOf(st)); err != nil {
			return res, err
		}
	}
	return res, nil
}

// progress shows a build's phases: a bar with an ETA from ninja's [n/N]
// on a terminal, one line per phase otherwise.
type progress struct {
	w       io.Writer
	name    string
	tty     bool
	phase   string
	started time.Time
	last    time.Time
}

func newProgress(w io.Writer, name string) build.Progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		tty = err == nil
	}
	return &progress{w: w, name: name, tty: tty}
}

func (p *progress) Phase(name string) {
	if name == p.phase {
		return
	}
	if p.tty && p.phase != "" {
		fmt.Fprintln(p.w)
	}
	p.phase, p.started = name, time.Now()
	if p.tty {
		fmt.Fprintf(p.w, "\rbuild %s: %s", p.name, name)
	} else {
		fmt.Fprintf(p.w, "build %s: %s\n", p.name, name)
	}
}

func (p *progress) Step(done, total int) {
	if !p.tty || total == 0 || time.Since(p.last) < 200*time.Millisecond && done != total {
		return
	}
	p.last = time.Now()
	const width = 30
	filled := width * done / total
	eta := ""
	if done > 0 {
		left := time.Duration(float64(time.Since(p.started)) * float64(total-done) / float64(done))
		eta = " ETA " + left.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\rbuild %s: %s [%s%s] %d/%d%s   ", p.name, p.phase, strings.Repeat("=", filled), strings.Repeat(" ", width-filled), done, total, eta)
	if done == total {
		fmt.Fprintln(p.w)
		p.phase = ""
	}
}
