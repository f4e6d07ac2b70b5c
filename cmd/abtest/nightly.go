package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/analysis"
	"github.com/pgabtest/abtest/config"
	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/internal/flock"
	"github.com/pgabtest/abtest/internal/safepath"
)

// ErrNightlyRunning: another nightly holds the lock.
var ErrNightlyRunning = errors.New("nightly: already running")

func nightlyCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "nightly",
		Usage: "the unattended regression job: fetch, build the branch head, compare with the baseline, keep history",
		UsageText: `abtest nightly --config nightly.toml [--no-fetch] [--force] [-n]

Exit: 0 ok (or nothing new), 1 a regression in a gated metric, 3 an
infrastructure failure. The last line is a one-line summary for mail or
chat. See nightly.example.toml and docs/nightly/.`,
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-fetch", Usage: "use the remote-tracking branch as it is"},
			&cli.BoolFlag{Name: "force", Usage: "run even when the head has not changed since the last night"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error { return runNightly(ctx, cmd, env) },
	}
}

func runNightly(ctx context.Context, cmd *cli.Command, env *Env) error {
	path := cmd.String("config")
	if path == "" {
		return exitcode.BadInputf("nightly: --config nightly.toml is required (see nightly.example.toml)")
	}
	nc, err := config.LoadNightly(path, env.Home)
	if err != nil {
		return exitcode.BadInput(err)
	}
	dry := cmd.Bool("dry-run")
	if !dry {
		if err := os.MkdirAll(filepath.Join(nc.Root, "runs"), 0o755); err != nil {
			return exitcode.Failure(err)
		}
		unlock, err := lockNightly(nc.Root)
		if err != nil {
			return err
		}
		defer unlock()
	}

	repo, err := git.PlainOpenWithOptions(nc.SourceDir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return exitcode.BadInputf("nightly: source_dir %s is not a git repository: %v", nc.SourceDir, err)
	}
	if !cmd.Bool("no-fetch") {
		if dry {
			fmt.Fprintf(env.Stdout, "# fetch %s in %s\n", nc.Remote, nc.SourceDir)
		} else if err := repo.FetchContext(ctx, &git.FetchOptions{RemoteName: nc.Remote}); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return exitcode.Failure(fmt.Errorf("nightly: fetching %s: %w", nc.Remote, err))
		}
	}
	ref, err := repo.Reference(plumbing.NewRemoteReferenceName(nc.Remote, nc.Branch), true)
	if err != nil {
		return exitcode.BadInputf("nightly: %s/%s not found in %s: %v", nc.Remote, nc.Branch, nc.SourceDir, err)
	}
	head := ref.Hash().String()
	subject := ""
	if c, err := repo.CommitObject(ref.Hash()); err == nil {
		subject, _, _ = strings.Cut(c.Message, "\n")
	}
	histPath := filepath.Join(nc.Root, "history.jsonl")
	history, err := analysis.ReadHistory(histPath)
	if err != nil {
		return exitcode.Failure(err)
	}
	var last *analysis.Night
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Status != "failed" {
			last = &history[i]
			break
		}
	}
	if last != nil && last.SHA == head && !cmd.Bool("force") {
		fmt.Fprintf(env.Stdout, "abtest nightly %s: %s/%s %s unchanged since %s; nothing to do (--force runs anyway)\n", today(), nc.Remote, nc.Branch, head[:12], last.Date)
		return nil
	}
	baseline := ""
	switch {
	case nc.Baseline == "last" && last != nil:
		baseline = last.SHA
	case nc.Baseline != "last":
		h, err := repo.ResolveRevision(plumbing.Revision(nc.Baseline))
		if err != nil {
			return exitcode.BadInputf("nightly: baseline %q: %v", nc.Baseline, err)
		}
		baseline = h.String()
	}
	if baseline == head {
		baseline = ""
	}

	run := filepath.Join(nc.Root, "runs", time.Now().UTC().Format("20060102T150405Z")+"-"+head[:8])
	spec := "head=" + head
	if baseline != "" {
		spec = "base=" + baseline + "," + spec
	}
	m := nc.Matrix
	args := []string{"abtest", "matrix", "--source", nc.SourceDir, "-k", spec, "-W", "n-%s",
		"-w", strings.Join(m.Workloads, ","), "-c", joinInts(m.Clients), "-m", joinInts(m.PgssMax),
		"-r", strconv.Itoa(m.Repeats), "-d", strconv.Itoa(m.Duration), "--warmup", strconv.Itoa(m.Warmup),
		"-b", m.Build, "-o", run, "--quiet"}
	if len(m.CPUs) > 0 {
		args = append(args, "-C", joinInts(m.CPUs))
	}
	if nc.RunAs != "" {
		args = append(args, "--run-as", nc.RunAs)
	}
	if dry {
		args = append([]string{"abtest", "-n"}, args[1:]...)
	}
	vars := map[string]string{"PG_WORKTREES_DIR": nc.WorktreesDir, "PG_INSTALL_DIR": nc.InstallDir, "PG_DATA_DIR": nc.DataDir}
	menv := *env
	menv.Getenv = func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return env.Getenv(k)
	}
	what := "first night: " + head[:12] + " alone (noise run)"
	if baseline != "" {
		what = fmt.Sprintf("%s vs %s", head[:12], baseline[:12])
	}
	fmt.Fprintf(env.Stdout, "abtest nightly: %s/%s %s (%s)\n", nc.Remote, nc.Branch, what, subject)
	if err := newApp(&menv).Run(ctx, args); err != nil {
		if !dry {
			_ = analysis.AppendHistory(histPath, analysis.Night{Date: today(), SHA: head, Subject: subject, Baseline: baseline, Run: run, Status: "failed"})
			fmt.Fprintf(env.Stdout, "abtest nightly %s: %s FAILED: %s\n", today(), head[:12], oneLine(err.Error()))
		}
		if exitcode.Code(err) == exitcode.Usage {
			return err
		}
		return exitcode.Failure(err)
	}
	if dry {
		return nil
	}

	// The gate, the history line, the trend, the retention.
	rep, err := writeReport(run, analysis.Options{Alpha: nc.Gate.Alpha, Thresholds: nc.Gate.Thresholds})
	if err != nil {
		return exitcode.Failure(err)
	}
	night := analysis.Night{Date: today(), SHA: head, Subject: subject, Baseline: baseline, Run: run, Status: "ok", Medians: rep.NightFrom("head")}
	for _, c := range rep.Regressions {
		night.Regressions = append(night.Regressions, fmt.Sprintf("%s %s %+.2f%%", c.Config, c.Metric, c.DeltaPct))
	}
	if len(night.Regressions) > 0 {
		night.Status = "regression"
	}
	if err := analysis.AppendHistory(histPath, night); err != nil {
		return exitcode.Failure(err)
	}
	history = append(history, night)
	f, err := os.OpenFile(filepath.Join(run, "report.md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return exitcode.Failure(err)
	}
	terr := analysis.WriteTrend(f, history, nc.TrendNights, filepath.Join(run, "plots"), run)
	f.Close()
	if terr != nil {
		return exitcode.Failure(terr)
	}
	if err := retain(filepath.Join(nc.Root, "runs"), nc.Keep); err != nil {
		return exitcode.Failure(err)
	}
	if err := dropOldBuilds(ctx, nc, env, []string{baseline, head}); err != nil {
		fmt.Fprintf(env.Stderr, "abtest nightly: cleaning old builds: %v\n", err)
	}

	summary := fmt.Sprintf("abtest nightly %s: %s/%s %s %q", today(), nc.Remote, nc.Branch, head[:12], subject)
	if baseline != "" {
		summary += " vs " + baseline[:12]
	}
	if len(night.Regressions) > 0 {
		summary += fmt.Sprintf(": %d REGRESSION(S): %s", len(night.Regressions), strings.Join(night.Regressions, "; "))
	} else {
		summary += ": ok"
	}
	summary += " | report: " + filepath.Join(run, "report.md")
	fmt.Fprintln(env.Stdout, summary)
	if len(night.Regressions) > 0 {
		return &exitcode.Error{Code: exitcode.Regression, Err: fmt.Errorf("%d regression(s) in gated metrics (report: %s)", len(night.Regressions), filepath.Join(run, "report.md"))}
	}
	return nil
}

// lockNightly takes root/.nightly.lock, so that nights never overlap.
func lockNightly(root string) (func(), error) {
	path := filepath.Join(root, ".nightly.lock")
	release, holder, err := flock.Try(path)
	if errors.Is(err, flock.ErrHeld) {
		return nil, exitcode.Failure(fmt.Errorf("%w (pid %s holds %s)", ErrNightlyRunning, holder, path))
	}
	if err != nil {
		return nil, exitcode.Failure(err)
	}
	return release, nil
}

// retain keeps the newest keep result directories (names sort by time).
func retain(runs string, keep int) error {
	ents, err := os.ReadDir(runs)
	if err != nil {
		return err
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	for len(dirs) > keep {
		p := filepath.Join(runs, dirs[0])
		if err := safepath.CheckRemovable(runs, p); err == nil {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
		dirs = dirs[1:]
	}
	return nil
}

// dropOldBuilds removes the n-<sha> worktrees, installs and clusters of
// shas other than keep: every night adds one, and only the last is the
// next baseline.
func dropOldBuilds(ctx context.Context, nc *config.Nightly, env *Env, keep []string) error {
	want := map[string]bool{}
	for _, s := range keep {
		if len(s) >= 8 {
			want["n-"+s[:8]] = true
		}
	}
	cfg := &config.Loaded{Config: config.Config{SourceDir: nc.SourceDir, WorktreesDir: nc.WorktreesDir, InstallDir: nc.InstallDir, DataDir: nc.DataDir, RunAs: nc.RunAs}}
	run := &procRunner
	wt := worktrees(cfg, run)
	cm, err := clusters(cfg, run, env)
	if err != nil {
		return err
	}
	cm.Log = nil
	ents, _ := os.ReadDir(nc.WorktreesDir)
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "n-") || want[name] {
			continue
		}
		if err := cm.Remove(ctx, name); err != nil {
			return err
		}
		if err := removeInstall(cfg, run, name); err != nil {
			return err
		}
		if err := wt.Remove(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func today() string { return time.Now().UTC().Format("2006-01-02") }
