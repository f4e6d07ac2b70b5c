package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/pgabtest/abtest/build"
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/proc"
	"github.com/pgabtest/abtest/internal/text"
	"github.com/pgabtest/abtest/worktree"
)

// Status is every worktree, build and cluster of a configuration (what
// `abtest status --json` prints). The lists are empty, never null.
type Status struct {
	Source    string                 `json:"source"`
	Worktrees []*worktree.Provenance `json:"worktrees"`
	Builds    []*build.Info          `json:"builds"`
	Clusters  []cluster.Info         `json:"clusters"`
	// OrphanSocketDirs are socket directories whose cluster is gone, of
	// any data root (`abtest switch --prune` removes them).
	OrphanSocketDirs []cluster.Orphan `json:"orphan_socket_dirs"`

	worktreesDir, dataDir string
}

// Status reads the worktrees, the build records under the install root
// and the clusters.
func (w *Workspace) Status(ctx context.Context) (*Status, error) {
	list, err := w.Worktrees().List(ctx)
	if err != nil {
		return nil, err
	}
	// Starts again what a killed abtest stopped, when there is a server
	// account to start it as.
	_, _ = w.Clusters()
	// The server's account, when there is one, owns the states List reads.
	u, _ := ServerUser(w.Config, w.Euid)
	cm := &cluster.Manager{Root: w.Config.DataDir, Run: w.Run, User: u}
	cls, err := cm.List()
	if err != nil {
		return nil, err
	}
	orphans, err := cm.Orphans()
	if err != nil {
		return nil, err
	}
	st := &Status{Source: w.Config.SourceDir, Worktrees: list, Builds: builds(w.Config.InstallDir), Clusters: cls,
		OrphanSocketDirs: orphans, worktreesDir: w.Config.WorktreesDir, dataDir: w.Config.DataDir}
	if st.Worktrees == nil {
		st.Worktrees = []*worktree.Provenance{}
	}
	if st.Clusters == nil {
		st.Clusters = []cluster.Info{}
	}
	return st, nil
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

// WriteText prints s as three tables (worktrees, builds, clusters), each
// with a hint when it is empty.
func (s *Status) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "source:    %s\nworktrees: %s\ndata:      %s\n\n", s.Source, s.worktreesDir, s.dataDir)
	if len(s.Worktrees) == 0 {
		fmt.Fprintln(w, "no worktrees; create one with: abtest switch NAME -k COMMIT")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "WORKTREE\tCOMMIT\tREF\tPATCHES\tDIRTY\tSUBJECT")
		for _, p := range s.Worktrees {
			var names []string
			for _, pa := range p.Patches {
				names = append(names, filepath.Base(pa.File))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, text.Short(p.SHA), p.Ref, text.OrDash(strings.Join(names, ",")), yesNo(p.Dirty), p.Subject)
		}
		tw.Flush()
	}
	fmt.Fprintln(w)
	if len(s.Builds) > 0 {
		s.writeBuilds(w)
	}
	if len(s.Clusters) == 0 {
		fmt.Fprintln(w, "no clusters; start one with: abtest switch NAME")
	} else {
		s.writeClusters(w)
	}
	if len(s.OrphanSocketDirs) > 0 {
		fmt.Fprintln(w, "\nsocket directories whose cluster is gone (abtest switch --prune removes them):")
		for _, o := range s.OrphanSocketDirs {
			fmt.Fprintf(w, "  %s  %s\n", o.Dir, o.Reason)
		}
	}
	return nil
}

func (s *Status) writeClusters(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tPID\tPORT\tSOCKET\tCPUS\tPGSS.MAX\tSIZE\tVERSION")
	for _, c := range s.Clusters {
		state, pid := "stopped", "-"
		if c.Running {
			state, pid = "running", strconv.Itoa(c.PID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Name, state, pid, c.Port, c.SocketDir,
			text.OrDash(proc.CPUList(c.CPUs)), c.Settings["pg_stat_statements.max"], humanBytes(c.Bytes), c.Version)
	}
	tw.Flush()
}

func (s *Status) writeBuilds(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BUILD	TYPE	FINGERPRINT	VERSION	BUILT AT	TIME	CCACHE")
	for _, b := range s.Builds {
		cc := "off"
		if b.CCache != nil {
			cc = fmt.Sprintf("%.1f%% hits", 100*b.CCache.HitRate)
		}
		typ := string(b.Type)
		if b.Profiling {
			typ += "+profiling"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1fs\t%s\n", b.Name, typ, text.Short(b.Fingerprint), strings.TrimPrefix(b.Version, "postgres (PostgreSQL) "), b.BuiltAt.Format("2006-01-02 15:04"), b.Seconds.Total, cc)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// humanBytes is n in binary units (1.5 MiB).
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
