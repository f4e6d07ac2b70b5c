package usage

import (
	"slices"
	"strings"
)

// Width is the widest line of abtest's help.
const Width = 100

// Repeats is the one rule for repeats, stated here and printed in the
// help of every command that takes -r (matrix, bisect, demo, nightly's
// repeats key). The 3 is analysis' least repeats for its tests; -n
// prints what a plan can detect at its repeats.
const Repeats = "Repeats (-r): a noisy metric such as tps needs r ≥ 3 for any verdict, an exact one " +
	"(instructions_per_tx) needs 1; beyond that more repeats detect smaller changes: -n prints the " +
	"smallest change the plan detects, and a verdict of unknown says the r it needs."

// Help is a command's DESCRIPTION: what it does and two examples.
type Help struct {
	Description string
	Examples    [2]string
}

// Commands is the help of every command, by its full name. Commands
// whose DESCRIPTION ends with the repeats rule list it in WithRepeats.
var Commands = map[string]Help{
	"switch": {"Manages one named worktree, its build and its cluster, one step at a time: check out a commit, apply patches, build, start. " +
		"NAME is --worktree NAME or the first argument. Status goes to stderr; stdout is the started cluster's export lines, for eval. " +
		"A NAME that is a matrix's commit label (demo-base) means that matrix's cluster (m-demo-base).",
		[2]string{"abtest switch lru -k master && abtest switch lru --patch my.patch -b release", "eval \"$(abtest switch lru -m 5000 -p auto)\"; psql -c 'select 1'"}},
	"status": {"Lists worktrees (commit, patches, local changes), builds and clusters (running, port, CPUs).",
		[2]string{"abtest status", "abtest status --json | jq '.clusters[] | select(.running)'"}},
	"env": {"Prints a cluster's env.sh (PATH, PGDATA, PGPORT, PGHOST, …); NAME is --worktree NAME or the first argument.",
		[2]string{"eval \"$(abtest env lru)\"; psql -c 'select version()'", "abtest env m-demo-base"}},
	"bench": {"Runs workloads against any running server and measures them: TPS, latency, pg_stat_statements churn, waits. " +
		"Connection settings not given as flags come from PGHOST, PGPORT, PGUSER and PGDATABASE, as with psql: source a cluster's env.sh and run abtest bench. " +
		"Letters that differ from pgbench's: -d is the duration (pgbench's -T, also accepted), -S the think time in ms, --host the host (-h is help).",
		[2]string{"abtest bench -d 30 -c 64 -w churn -p 5433", "abtest bench -T 30 -c 64 -j 8 -w select1 --host /tmp --json"}},
	"matrix": {"The A/B run: commits × workloads × clients × server CPUs × settings, interleaved (ABBA) and resumable; " +
		"prints the answer and writes report.md beside the cells. The first -k SPEC is the baseline; a SPEC is REF, LABEL=REF, LABEL=REF+PATCH[+PATCH…] or LABEL=install:DIR. " +
		"-n prints the plan and what it can detect, and runs nothing.",
		[2]string{"abtest matrix -k master,mine=master+my.patch -w select1,churn -c 1,16 -r 8", "abtest -n matrix -k base=HEAD,patch=HEAD+fix.patch -c 16,64 -C 2,4 --fail-on-regression"}},
	"demo": {"The built-in A/B run: the source's HEAD against itself with pg_stat_statements' USAGE_DEALLOC_PERCENT raised from 5 to 20 " +
		"(select1 and churn, pg_stat_statements.max = 1000, 8 clients, 12 repeats of 3 s). Prints the answer and a matrix command that reuses its builds. " +
		"Its directories are under $ABTEST_DEMO_DIR (default /var/tmp/abtest-demo as root, else ~/.cache/abtest-demo).",
		[2]string{"abtest demo", "abtest demo -d 5 -r 5 --source ~/pg/source"}},
	"analyze": {"Statistics, verdicts and the report of one or more results directories (shards merge), or of a stored run (--run ID).",
		[2]string{"abtest analyze ~/pg/results/abtest_* --format text --fail-on-regression", "abtest analyze --run seed:42 --format json -o out.json"}},
	"perf": {"CPU profiles of a cluster: record (perf → pprof), report, compare, view.",
		[2]string{"abtest perf record -p 5433 -d 10 -o lfu.pb.gz && abtest perf report lfu.pb.gz", "abtest perf compare base.pb.gz lfu.pb.gz --per-tx 1200000,1180000"}},
	"perf record": {"perf record -g on a cluster's processes for -d seconds, written as a pprof profile. The cluster is NAME (--worktree NAME or the first argument) or a local server's --port.",
		[2]string{"abtest perf record lfu -d 10 -o lfu.pb.gz", "abtest perf record -p 5433 -F 199 --keep-raw"}},
	"perf report": {"The top functions of a profile, flat or cumulative.",
		[2]string{"abtest perf report lfu.pb.gz", "abtest perf report lfu.pb.gz --top 30 --cum"}},
	"perf compare": {"The per-function change from BASE to NEW, per transaction when the counts are given; writes a diff profile.",
		[2]string{"abtest perf compare base.pb.gz lfu.pb.gz", "abtest perf compare base.pb.gz lfu.pb.gz --per-tx 1200000,1180000 -o diff.pb.gz"}},
	"perf view": {"pprof's web UI (flame graph, top, source) on the loopback interface.",
		[2]string{"abtest perf view lfu.pb.gz", "abtest perf view lfu.pb.gz --diff-base base.pb.gz --http 127.0.0.1:8081"}},
	"doctor": {"Host checks that decide whether numbers can be trusted (governor, turbo, THP, load, …), each with its fix.",
		[2]string{"abtest doctor", "abtest doctor --fix && abtest doctor --json"}},
	"nightly": {"The unattended regression job: fetch, build the branch head, compare with the baseline, keep history. " +
		"Exit: 0 ok (or nothing new), 1 a regression in a gated metric, 3 an infrastructure failure or a night that could not answer " +
		"(its primary unknown: 0 under allow_unknown = true). The last line is a one-line summary for mail or chat. See nightly.example.toml and docs/nightly.md.",
		[2]string{"abtest nightly --config nightly.toml", "abtest -n nightly --config nightly.example.toml"}},
	"bisect": {"Finds the first commit that changed a metric, by binary search over first-parent history. Every step runs the step's commit interleaved with good and bad " +
		"(one configuration, -r repeats) and calls it like-good or like-bad; an inconclusive step is repeated with twice the repeats up to --max-repeats, " +
		"then the bisect stops and reports the range. State is kept in DIR/bisect.json: run the same command again to resume.",
		[2]string{"abtest bisect --good REL_16_0 --bad master -w churn -c 64 --metric tps", "abtest -n bisect --good HEAD~20 --bad HEAD --metric instructions_per_tx -r 1"}},
	"store": {"The results database: every run, its cells and verdicts, for history, annotate and the dashboard.",
		[2]string{"abtest store import ~/pg/results/abtest_*", "abtest store import --store postgres://bench@db/abtest /shared/results/*"}},
	"store import": {"Loads results directories into the store; importing again is harmless (a cell is stored once).",
		[2]string{"abtest store import ~/pg/results/abtest_*", "abtest store import --store postgres://bench@db/abtest /shared/results/*"}},
	"history": {"A metric's trend in one configuration over the stored runs, with its change points. " +
		"An unknown metric or configuration is an error that lists the stored ones.",
		[2]string{"abtest history --metric tps --configuration select1/c16 --since 30d", "abtest history --metric pgss_deallocs --configuration churn --json"}},
	"annotate": {"Notes a commit's expected effect on a metric: its change point is then shown as expected, not as a regression.",
		[2]string{`abtest annotate --commit 1a2b3c4 --metric tps --note "expected: new lock"`, `abtest annotate --commit 1a2b3c4 --metric tps --configuration churn/c64 --note "expected"`}},
	"dashboard": {"Writes the static dashboard (runs, compare pages, trends) from the store; it opens from disk.",
		[2]string{"abtest dashboard -o site && xdg-open site/index.html", "abtest dashboard -o site --store postgres://bench@db/abtest"}},
	"serve": {"Writes the dashboard and serves it on the loopback interface until interrupted.",
		[2]string{"abtest serve", "abtest serve --addr 127.0.0.1:8080 -o site"}},
}

// WithRepeats are the commands whose help states the repeats rule.
var WithRepeats = []string{"matrix", "bisect", "demo", "nightly"}

// PgbenchLetters says, in the help of the commands that run pgbench
// with a matrix's flags, where a letter means something else than
// pgbench's.
const PgbenchLetters = "Letters that differ from pgbench's: -d is the duration (pgbench's -T, also accepted), " +
	"-S the think time in ms (pgbench: select-only), -C the server's CPU count (pgbench: connect per transaction)."

// Describe is the DESCRIPTION of the command path: its text, the
// repeats rule where it applies, and its examples.
func Describe(path string) (string, bool) {
	h, ok := Commands[path]
	if !ok {
		return "", false
	}
	d := h.Description
	if slices.Contains(WithRepeats, path) {
		d += "\n\n" + Repeats
	}
	if path == "matrix" || path == "bisect" {
		d += "\n\n" + PgbenchLetters
	}
	return d + "\n\nExamples:\n  " + h.Examples[0] + "\n  " + h.Examples[1], true
}

// Category groups a flag in the help, by its name; the same name is in
// the same group in every command.
func Category(flag string) string {
	for cat, names := range categories {
		for _, n := range strings.Fields(names) {
			if n == flag {
				return cat
			}
		}
	}
	return ""
}

// CommandCategory groups abtest's commands in its help.
func CommandCategory(path string) string {
	for cat, names := range commandCategories {
		if slices.Contains(strings.Fields(names), path) {
			return cat
		}
	}
	return ""
}

var commandCategories = map[string]string{
	"1. Compare commits":   "matrix analyze demo bisect",
	"2. By hand":           "switch status env bench perf",
	"3. History over runs": "nightly store history annotate dashboard serve",
	"4. The host":          "doctor",
}

// categories are listed by urfave/cli in the order of their names.
var categories = map[string]string{
	"Commits":                 "commits commit patch worktree good bad reuse baseline install remove prune run",
	"Configuration: server":   "cpus restart-cells pgss-max set initdb-opt preload setup-sql port host user db listen data-checksums max-clients recreate-cluster stop run-as cluster",
	"Configuration: workload": "workloads clients jobs transactions protocol sleep rate var condition pgbench-cpus expected-tps must-not-saturate",
	"Extra measurements":      "perf perf-window instructions instructions-only instr-repeats instr-transactions sample-every wait-every keep-raw freq",
	"Repeats and time":        "duration repeats warmup warmup-tx order seed until-decided max-repeats budget shard preset resume since",
	"Toolchain":               "build profiling meson-opt configure-opt force extension no-ccache name-template pgbench source",
	"Verdict and output": "output json quiet format gate primary fail-on-regression allow-unknown threshold alpha bar store metric configuration " +
		"note top cum per-tx diff-base http addr no-fetch fix",
}

// Wrap folds every line of s longer than width at spaces; a continued
// line is indented to its line's second column (the text after a run
// of two spaces, as in a flag list), else to its own indent.
func Wrap(s string, width int) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		nl := strings.HasSuffix(line, "\n")
		r := []rune(strings.TrimSuffix(line, "\n"))
		for len(r) > width {
			hang := hangOf(r, width)
			cut := -1
			for i := width; i > hang; i-- {
				if r[i] == ' ' {
					cut = i
					break
				}
			}
			if cut < 0 {
				cut = width // a word wider than the line: cut it
			}
			b.WriteString(strings.TrimRight(string(r[:cut]), " ") + "\n")
			rest := []rune(strings.TrimLeft(string(r[cut:]), " "))
			r = append([]rune(strings.Repeat(" ", hang)), rest...)
		}
		b.WriteString(string(r))
		if nl {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// hangOf is the indent of a continued line of r.
func hangOf(r []rune, width int) int {
	lead := 0
	for lead < len(r) && r[lead] == ' ' {
		lead++
	}
	for i := lead; i+2 < len(r) && i < width*2/3; i++ {
		if r[i] == ' ' && r[i+1] == ' ' {
			j := i
			for j < len(r) && r[j] == ' ' {
				j++
			}
			return j
		}
	}
	return lead
}
