package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/matrix"
	"github.com/pgabtest/abtest/worktree"
)

// Status is what `abtest status --json` prints.
type Status struct {
	Source    string                 `json:"source"`
	Worktrees []*worktree.Provenance `json:"worktrees"`
	Builds    []*build.Info          `json:"builds"`
	Clusters  []cluster.Info         `json:"clusters"`
}

// builds lists the build records under the install root.
func builds(root string) []*build.Info {
	out := []*build.Info{}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if i, err := build.ReadInfo(filepath.Join(root, e.Name())); err == nil {
			out = append(out, i)
		}
	}
	return out
}

func statusCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:         "status",
		Usage:        "show worktrees (commit, patches, changes) and clusters (running, port, CPUs)",
		OnUsageError: usageError,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			sourceFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			cfg, err := loadConfig(cmd, env)
			if err != nil {
				return err
			}
			wt := worktrees(cfg, runner(cmd, env))
			list, err := wt.List(ctx)
			if err != nil {
				return err
			}
			cm := &cluster.Manager{Root: cfg.DataDir, Run: runner(cmd, env)}
			cls, err := cm.List()
			if err != nil {
				return err
			}
			st := Status{Source: cfg.SourceDir, Worktrees: list, Builds: builds(cfg.InstallDir), Clusters: cls}
			if st.Worktrees == nil {
				st.Worktrees = []*worktree.Provenance{}
			}
			if st.Clusters == nil {
				st.Clusters = []cluster.Info{}
			}
			if cmd.Bool("json") {
				enc := json.NewEncoder(env.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(env.Stdout, "source:    %s\nworktrees: %s\ndata:      %s\n\n", cfg.SourceDir, cfg.WorktreesDir, cfg.DataDir)
			if len(list) == 0 {
				fmt.Fprintln(env.Stdout, "no worktrees; create one with: abtest switch -c COMMIT -w NAME")
			} else {
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "WORKTREE\tCOMMIT\tREF\tPATCHES\tDIRTY\tSUBJECT")
				for _, p := range list {
					var names []string
					for _, pa := range p.Patches {
						names = append(names, filepath.Base(pa.File))
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, matrix.Short(p.SHA), p.Ref, orDash(strings.Join(names, ",")), yesNo(p.Dirty), p.Subject)
				}
				tw.Flush()
			}
			fmt.Fprintln(env.Stdout)
			if len(st.Builds) > 0 {
				tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "BUILD	TYPE	FINGERPRINT	VERSION	BUILT AT	TIME	CCACHE")
				for _, b := range st.Builds {
					cc := "off"
					if b.CCache != nil {
						cc = fmt.Sprintf("%.1f%% hits", 100*b.CCache.HitRate)
					}
					typ := string(b.Type)
					if b.Profiling {
						typ += "+profiling"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1fs\t%s\n", b.Name, typ, matrix.Short(b.Fingerprint), strings.TrimPrefix(b.Version, "postgres (PostgreSQL) "), b.BuiltAt.Format("2006-01-02 15:04"), b.Seconds.Total, cc)
				}
				tw.Flush()
				fmt.Fprintln(env.Stdout)
			}
			if len(cls) == 0 {
				fmt.Fprintln(env.Stdout, "no clusters; start one with: abtest switch -w NAME")
				return nil
			}
			tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CLUSTER\tSTATE\tPID\tPORT\tSOCKET\tCPUS\tPGSS.MAX\tSIZE\tVERSION")
			for _, c := range cls {
				state, pid := "stopped", "-"
				if c.Running {
					state, pid = "running", strconv.Itoa(c.PID)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Name, state, pid, c.Port, c.SocketDir,
					orDash(proc.CPUList(c.CPUs)), c.Settings["pg_stat_statements.max"], humanBytes(c.Bytes), c.Version)
			}
			return tw.Flush()
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
