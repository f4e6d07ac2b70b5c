package workspace

import (
	"github.com/pgabtest/abtest/cluster"
	"github.com/pgabtest/abtest/internal/exitcode"
)

// matrixLabel refuses to make a user's cluster NAME beside a matrix's
// cluster of build NAME (m-NAME) unless asked (--recreate-cluster):
// after the demo, `switch demo-base` meant the demo's cluster and
// silently got a new one with other settings. It names the cluster
// meant and how to reach it.
func (w *Workspace) matrixLabel(r Request) error {
	if r.Cluster == nil || r.Cluster.Recreate {
		return nil
	}
	cm := &cluster.Manager{Root: w.Config.DataDir}
	own := cluster.ForBuild(r.Name)
	if cm.Exists(r.Name) || !cm.Exists(own) {
		return nil
	}
	return exitcode.BadInputf("switch %s: %s is a matrix's build, measured on cluster %s (abtest env %s prints its environment; "+
		"a matrix run with it starts it): give --recreate-cluster to make a cluster of your own named %s", r.Name, r.Name, own, own, r.Name)
}
