#!/usr/bin/env bash
# Observer cost, counted exactly (issue 27): what measuring a cell adds,
# in CPU seconds per second of its window, against a target of 1 % of
# one core. bench/observer.sh compares TPS ratios, whose noise here
# (±15 % between runs) hides an effect this small; this one counts CPU
# time instead.
#
# 1. pgbench's latency log: pgbench -t on select1 with --log
#    --sampling-rate 1 and without, interleaved; its user CPU time
#    (getrusage of the child, bash's `time`) per logged line is the
#    difference over the lines. User time only: formatting a line is
#    user work and its writes are buffered (a write per ~4 kB), while
#    pgbench's system time (sockets) varies by more than the whole log
#    costs. workload's pgbenchLogLine holds this figure.
# 2. Real cells, run as the matrix runs them: a demo-like matrix of two
#    commits of the same installation (A/A: -d SECONDS --warmup 1
#    -m 1000, REPEATS repeats), each cell's warm-up and window on one
#    kept connection, each window's latency log sized by its warm-up and
#    its earlier repeats. Every cell's "observer" in cells.jsonl has the
#    parts: the backend serving abtest's connection (/proc/PID/schedstat),
#    abtest's own process (getrusage, the latency log's reading
#    included), pgbench's log (lines × the figure of 1); printed per
#    workload and part as % of one core over the window: median and
#    range over the cells. The warm-up is not counted.
#
# Usage: bench/observer_cost.sh [REPEATS] [SECONDS] [CLIENTS] [WORKLOADS] [LOG_TX]
# (LOG_TX 0 leaves out part 1)
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-3} secs=${2:-3} clients=${3:-8} workloads=${4:-select1,churn} logtx=${5:-10000}
# shellcheck disable=SC1091
. bench/lib.sh
bench_cluster obscost "$clients"

if [ "$logtx" -gt 0 ]; then
echo "== pgbench's latency log: -c $clients -j $threads -t $logtx, select1, 4 pairs"
TIMEFORMAT='%3R %3U %3S'
cpu() { { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{printf "%.3f", $2}'; }
lines=$(( clients * logtx ))
diffs=()
for i in 1 2 3 4; do
  plain=$(cpu pgbench -n -c "$clients" -j "$threads" -t "$logtx" -f "$base/s1.sql")
  logged=$(cpu pgbench -n -c "$clients" -j "$threads" -t "$logtx" -f "$base/s1.sql" --log --log-prefix="$base/tx" --sampling-rate=1)
  n=$(cat "$base"/tx.* | wc -l); rm -f "$base"/tx.*
  d=$(echo "($logged - $plain) / $n * 1000000000" | bc -l)
  diffs+=("$d")
  printf 'pair %d: pgbench user CPU %6.3f s plain, %6.3f s with %d lines logged: %6.0f ns a line\n' "$i" "$plain" "$logged" "$n" "$d"
done
printf 'median: %.0f ns a logged line (%d tx a pair)\n' "$(median "${diffs[@]}")" "$lines"
fi

# The matrix starts its own clusters: stop this one so it does not share
# the CPUs.
"$abtest" switch -w obscost --stop >/dev/null
echo "== cells: abtest matrix -k a=install:$install,b=install:$install -w $workloads -c $clients -d $secs --warmup 1 -m 1000 -r $repeats"
"$abtest" matrix -k "a=install:$install,b=install:$install" -w "$workloads" -c "$clients" -d "$secs" --warmup 1 -m 1000 \
  -r "$repeats" -o "$base/res" --quiet > "$base/matrix.log" 2>&1 || { tail -20 "$base/matrix.log"; exit 1; }
printf 'load average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-10s %-22s %6s %8s %8s %8s\n' workload 'part (% of one core)' cells median min max
jq -rs '
  def pct(x): 100 * x / .observer.window_s;
  def med: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  map(select(.observer != null)) | group_by(.cell | split("/")[0])[] as $g
  | ($g[0].cell | split("/")[0]) as $w
  | [ ["server (its backend)", ($g | map(pct(.observer.backend_s)))],
      ["abtest", ($g | map(pct(.observer.abtest_s)))],
      ["pgbench log", ($g | map(pct(.observer.pgbench_log_s)))],
      ["total", ($g | map(pct(.observer.backend_s + .observer.abtest_s + .observer.pgbench_log_s)))],
      ["total, % of all CPU", ($g | map(100 * (.observer.backend_s + .observer.abtest_s + .observer.pgbench_log_s) / (.observer.server_s + .observer.pgbench_s)))],
      ["log lines / budget",  # workload.LoggedTxPerSecond a second
       ($g | map(.observer.logged_tx / (2000 * .observer.window_s)))] ][]
  | [$w, .[0], (.[1] | length), (.[1] | med), (.[1] | min), (.[1] | max)] | @tsv' "$base/res/cells.jsonl" |
  awk -F'\t' '{printf "%-10s %-22s %6d %8.3f %8.3f %8.3f\n", $1, $2, $3, $4, $5, $6}'
jq -s 'map(select(.observer != null) | 100 * (.observer.backend_s + .observer.abtest_s + .observer.pgbench_log_s) / .observer.window_s) | sort |
  "median cost: \(if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end * 1000 | round / 1000) % of one core over \(length) cells (target <= 1 %)"' -r "$base/res/cells.jsonl"
