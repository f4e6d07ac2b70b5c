package analysis

// Reading result directories and merging them: the shards of one plan,
// or a run and its resumption, become one Input.

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pgabtest/abtest/internal/exitcode"
	"github.com/pgabtest/abtest/results"
)

// Input is one or more merged result directories.
type Input struct {
	Dirs     []string
	Plan     *results.Plan
	Records  []results.Record
	Warnings []string
	// Servers are what each commit's server ran with (servers.json),
	// when the run recorded it.
	Servers results.Servers
}

// ErrPlansDiffer: result directories of different plans cannot merge.
var ErrPlansDiffer = errors.New("analysis: plans differ")

// Load reads and merges result directories (shards of one plan, or a run
// and its resumption). Plans must agree on everything but the shard.
func Load(dirs ...string) (*Input, error) { return loadWith(results.ReadRecords, dirs) }

// LoadSummaries is Load without the cells' progress reports (Progress
// nil; results.ReadRecordsNoProgress), which only a markdown report's
// plots read: for every other report, and a decision (bisect, until-
// decided). 19 MB and 0.1 CPU-s less at 10⁵ cells.
func LoadSummaries(dirs ...string) (*Input, error) {
	return loadWith(results.ReadRecordsNoProgress, dirs)
}

// LoadFor is Load of what Output in format to out reads: LoadSummaries
// where it draws no plot (all but md to a file).
func LoadFor(format, out string, dirs ...string) (*Input, error) {
	if format == "md" && out != "" {
		return Load(dirs...)
	}
	return LoadSummaries(dirs...)
}

func loadWith(readRecords func(dir string) ([]results.Record, []string, error), dirs []string) (*Input, error) {
	if len(dirs) == 0 {
		return nil, exitcode.BadInputf("analyze: give at least one results directory")
	}
	if err := distinctDirs(dirs); err != nil {
		return nil, err
	}
	shards := make([]Shard, 0, len(dirs))
	for _, d := range dirs {
		// The plan decodes beside the records: alone first, it was
		// 0.1–0.13 CPU-s at 10⁵ cells (analyzeprof's profile) on one
		// core, the other idle, before the records' decoders started.
		// Its error comes first, as before.
		var p *results.Plan
		var planErr error
		planDone := make(chan struct{})
		go func() {
			defer close(planDone)
			p, planErr = results.ReadPlan(d)
		}()
		recs, warnings, err := readRecords(d)
		<-planDone
		if planErr != nil {
			return nil, planErr
		}
		if err != nil {
			return nil, exitcode.Failure(err)
		}
		shards = append(shards, Shard{Dir: d, Plan: p, Records: recs, Warnings: warnings})
	}
	in, err := Merge(shards)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		servers, err := results.ReadServers(d)
		if err != nil {
			in.Warnings = append(in.Warnings, fmt.Sprintf("%s: %v", results.ServersFile, err))
		}
		for commit, s := range servers {
			if _, ok := in.Servers[commit]; !ok {
				if in.Servers == nil {
					in.Servers = results.Servers{}
				}
				in.Servers[commit] = s
			}
		}
	}
	return in, nil
}

// distinctDirs refuses a results directory given twice (under one name
// or two): each of its cells would be recorded twice, and every
// configuration could not answer.
func distinctDirs(dirs []string) error {
	infos := make([]os.FileInfo, len(dirs))
	for i, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			continue // reading it says why
		}
		for j := range i {
			if infos[j] != nil && os.SameFile(infos[j], fi) {
				return exitcode.BadInputf("analyze: %s and %s are one results directory: give each once", dirs[j], d)
			}
		}
		infos[i] = fi
	}
	return nil
}

// Shard is one results directory's plan and records, read from its files
// (Load) or rebuilt from a results store.
type Shard struct {
	Dir      string
	Plan     *results.Plan
	Records  []results.Record
	Warnings []string
}

// Merge merges the shards of one plan (or a run and its resumption) into
// one input: plans must agree on everything but the shard. A cell
// recorded more than once (in one shard or in several) keeps every
// record, and a warning says where: Analyze leaves such a cell out and
// its configuration could not answer, never picks one (the first once
// won silently). Shards that ran on different kinds of host are said to
// have.
func Merge(shards []Shard) (*Input, error) {
	if len(shards) == 0 {
		return nil, exitcode.BadInputf("analyze: give at least one results directory")
	}
	in := &Input{}
	var names []string
	for _, sh := range shards {
		p := sh.Plan
		if in.Plan == nil {
			first := *p
			in.Plan = &first
		} else {
			a, b := *in.Plan, *p
			a.Shard, b.Shard = "", ""
			if diff := results.Diff(&a, &b); len(diff) > 0 {
				return nil, exitcode.BadInputf("%w: %s and %s are not shards of one plan (%s)", ErrPlansDiffer, shards[0].Dir, sh.Dir, strings.Join(diff, "; "))
			}
			in.Plan.Configs = mergeConfigs(in.Plan.Configs, p.Configs)
			in.Plan.Cells = append(in.Plan.Cells[:len(in.Plan.Cells):len(in.Plan.Cells)], p.Cells...)
		}
		in.Dirs = append(in.Dirs, sh.Dir)
		names = append(names, p.Shard)
		in.Warnings = append(in.Warnings, sh.Warnings...)
	}
	if len(shards) > 1 {
		in.Plan.Shard = strings.Join(names, "+")
	}
	in.mergeRecords(shards)
	if w := mixedHosts(shards); w != "" {
		in.Warnings = append(in.Warnings, w)
	}
	if missing := len(in.Plan.Cells) - len(in.Records); missing > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%d of %d planned cells have no result (interrupted run or missing shard?)", missing, len(in.Plan.Cells)))
	}
	return in, nil
}

// mergeRecords keeps the shards' records, and ignores, with a warning,
// records of cells the plan does not have (a hand-edited or foreign
// cells.jsonl): counted, they made "7 of 6 cells recorded". A plan
// without its cell list keeps them all. A planned cell recorded more
// than once keeps every record, for Analyze to refuse, with a warning
// naming it and the directories it came from. One shard whose records
// are all kept is not copied (10⁵ records are 40 MB); the shards'
// slices are never written.
func (in *Input) mergeRecords(shards []Shard) {
	// A planned cell is seen where its index in the plan says so: one
	// lookup of its id per record, where a set of the planned and one
	// of the seen were three (and 10 MB at 10⁵ cells).
	cells := in.Plan.Cells
	planned := make(map[string]int, len(cells))
	for i := range cells {
		if _, dup := planned[cells[i].ID]; !dup {
			planned[cells[i].ID] = i
		}
	}
	seen := make([]int32, len(cells)) // 1 + the shard that first had it
	var seenElse map[string]bool      // the cells not planned
	var unknown, dups []string
	kept, total := 0, 0
	keep := func(s int, r *results.Record) bool {
		if i, ok := planned[r.Cell]; ok {
			if first := seen[i]; first > 0 {
				where := shards[first-1].Dir
				if int(first-1) != s {
					where += " and " + shards[s].Dir
				}
				dups = append(dups, fmt.Sprintf("%s (in %s)", r.Cell, where))
			} else {
				seen[i] = int32(s + 1)
			}
			return true
		}
		if len(cells) == 0 {
			return true
		}
		if !seenElse[r.Cell] {
			if seenElse == nil {
				seenElse = map[string]bool{}
			}
			seenElse[r.Cell] = true
			unknown = append(unknown, r.Cell)
		}
		return false
	}
	keeps := make([][]bool, len(shards))
	for s, sh := range shards {
		keeps[s] = make([]bool, len(sh.Records))
		for i := range sh.Records {
			keeps[s][i] = keep(s, &sh.Records[i])
			if keeps[s][i] {
				kept++
			}
		}
		total += len(sh.Records)
	}
	if len(shards) == 1 && kept == total {
		in.Records = shards[0].Records
	} else if kept > 0 {
		in.Records = make([]results.Record, 0, kept)
		for s, sh := range shards {
			for i := range sh.Records {
				if keeps[s][i] {
					in.Records = append(in.Records, sh.Records[i])
				}
			}
		}
	}
	if len(unknown) > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%d record(s) of cells not in the plan ignored (first: %s)", len(unknown), unknown[0]))
	}
	if len(dups) > 0 {
		in.Warnings = append(in.Warnings, fmt.Sprintf("%d extra record(s) of cells recorded more than once (first: %s): such a cell is left out, and its configuration could not answer", len(dups), dups[0]))
	}
}

func mergeConfigs(a, b []results.Config) []results.Config {
	have := map[string]bool{}
	for _, c := range a {
		have[c.ID()] = true
	}
	for _, c := range b {
		if !have[c.ID()] {
			a = append(a, c)
		}
	}
	return a
}
