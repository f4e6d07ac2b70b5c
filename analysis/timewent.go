package analysis

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pgabtest/abtest/perf/profiles"
	"github.com/pgabtest/abtest/results"

	"github.com/google/pprof/profile"
)

// TimeWent is, for one configuration and commit, where CPU time per
// transaction moved against the baseline, from the cells' profiles.
type TimeWent struct {
	Config string           `json:"config"`
	Commit string           `json:"commit"`
	Deltas []profiles.Delta `json:"deltas"`
	// Diff is the diff profile's path once written (WritePlots).
	Diff       string `json:"diff,omitempty"`
	CallGraphs bool   `json:"call_graphs"`
	Profiles   int    `json:"profiles"`

	diff *profile.Profile
}

// profiles reads and merges the cells' profiles per configuration and
// commit and computes the per-transaction deltas (top 10 by size).
func (r *Report) profiles(base string) {
	type key struct{ config, commit string }
	merged := map[key]*profile.Profile{}
	tx := map[key]float64{}
	graphs := map[key]bool{}
	count := map[key]int{}
	var keys []key
	for _, rec := range r.records {
		if rec.Status != results.StatusOK || rec.Perf == nil || rec.Perf.Profile == "" {
			continue
		}
		p, err := readProfile(r.Dirs, rec.Perf.Profile)
		if err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("profile of %s: %v", rec.Cell, err))
			continue
		}
		k := key{rec.Config().ID(), rec.Commit}
		if merged[k] == nil {
			merged[k] = p
			keys = append(keys, k)
		} else if m, err := profile.Merge([]*profile.Profile{merged[k], p}); err == nil {
			merged[k] = m
		}
		tx[k] += rec.Perf.Tx
		graphs[k] = graphs[k] || rec.Perf.CallGraphs
		count[k]++
	}
	for _, k := range keys {
		if k.commit == base {
			continue
		}
		bk := key{k.config, base}
		b := merged[bk]
		if b == nil {
			continue
		}
		ds := profiles.Compare(b, merged[k], tx[bk], tx[k])
		profiles.SortBySignificance(ds)
		if len(ds) > 10 {
			ds = ds[:10]
		}
		tw := TimeWent{Config: k.config, Commit: k.commit, Deltas: ds, CallGraphs: graphs[k] && graphs[bk], Profiles: count[k] + count[bk]}
		if d, err := profiles.Diff(b, merged[k], tx[bk], tx[k]); err == nil {
			tw.diff = d
		}
		r.TimeWent = append(r.TimeWent, tw)
	}
}

// readProfile finds rel in one of the result directories.
func readProfile(dirs []string, rel string) (*profile.Profile, error) {
	var last error
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, rel))
		if err != nil {
			last = err
			continue
		}
		p, err := profile.Parse(f)
		f.Close()
		return p, err
	}
	return nil, last
}

// writeDiffs writes each diff profile into dir.
func (r *Report) writeDiffs(dir, relTo string) error {
	for i := range r.TimeWent {
		tw := &r.TimeWent[i]
		if tw.diff == nil {
			continue
		}
		path := filepath.Join(dir, "diff-"+fileSafe.ReplaceAllString(tw.Config, "_")+"-"+tw.Commit+".pb.gz")
		if err := profiles.Write(tw.diff, path); err != nil {
			return err
		}
		if rel, err := filepath.Rel(relTo, path); err == nil {
			tw.Diff = rel
		}
	}
	return nil
}

func (r *Report) writeTimeWent(w io.Writer) {
	if !r.Plan.Options.Perf {
		return
	}
	fmt.Fprintf(w, "\n## Where the time went\n\n")
	if len(r.TimeWent) == 0 {
		fmt.Fprintf(w, "No profiles to compare (perf was unavailable, or no cell of the baseline has one).\n")
		return
	}
	fmt.Fprintf(w, "CPU time per transaction by function (flat), from profiles of the middle of each cell, baseline %s; the changes sampling noise explains least first (z: the change in standard errors of the sample counts). Open a diff profile with `abtest perf view FILE` (flame graph).\n", r.Baseline)
	for _, tw := range r.TimeWent {
		graphs := "call graphs"
		if !tw.CallGraphs {
			graphs = "flat profiles only: the binaries have no frame pointers (build with --profiling for call graphs)"
		}
		fmt.Fprintf(w, "\n### %s: %s (%d profiles, %s)\n\n", tw.Config, tw.Commit, tw.Profiles, graphs)
		if tw.Diff != "" {
			fmt.Fprintf(w, "diff profile: [%s](%s)\n\n", tw.Diff, tw.Diff)
		}
		unit := "ns/tx"
		if len(tw.Deltas) > 0 {
			unit = tw.Deltas[0].Unit
		}
		fmt.Fprintf(w, "| function | %s (%s) | %s | Δ | z |\n|---|---|---|---|---|\n", r.Baseline, unit, tw.Commit)
		for _, d := range tw.Deltas {
			fmt.Fprintf(w, "| `%s` | %.1f | %.1f | %+.1f | %+.1f |\n", d.Name, d.Base, d.New, d.Diff, d.Z)
		}
	}
}
