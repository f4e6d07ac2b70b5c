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
# 2. Real cells: `abtest bench --json` on each workload; each result's
#    "observer" has the parts: the backend serving abtest's connection
#    (/proc/PID/schedstat), abtest's own process (getrusage), pgbench's
#    log (lines × the figure of 1), against the window and against the
#    server's and pgbench's CPU in it. Each cell follows a 1 s warm-up
#    whose TPS sizes its latency log (--expected-tps), as the matrix's
#    cells do; the warm-up is not counted.
#
# Usage: bench/observer_cost.sh [CELLS] [SECONDS] [CLIENTS] [WORKLOADS] [LOG_TX]
set -euo pipefail
cd "$(dirname "$0")/.."
cells=${1:-3} secs=${2:-30} clients=${3:-8} workloads=${4:-select1,churn} logtx=${5:-10000}
# shellcheck disable=SC1091
. bench/lib.sh
bench_cluster obscost "$clients"

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

echo "== cells: abtest bench -c $clients -j $threads -d $secs, $cells of each of $workloads"
printf '%-10s %8s %8s %8s %8s %8s %8s %8s %8s\n' workload window_s queries backend% abtest% log% lines cost% of_total%
pcts=()
for i in $(seq 1 "$cells"); do
  for w in ${workloads//,/ }; do
    tps=$(/tmp/abtest-bench bench -w "$w" -c "$clients" -j "$threads" -d 1 --json 2>/dev/null | jq '.[0].metrics.tps')
    out=$(/tmp/abtest-bench bench -w "$w" -c "$clients" -j "$threads" -d "$secs" --expected-tps "$tps" --json 2>/dev/null)
    row=$(jq -r '.[0].observer | [.window_s, .queries, 100*.backend_s/.window_s, 100*.abtest_s/.window_s, 100*.pgbench_log_s/.window_s, .logged_tx,
      100*(.backend_s+.abtest_s+.pgbench_log_s)/.window_s, 100*(.backend_s+.abtest_s+.pgbench_log_s)/(.server_s+.pgbench_s)] | @tsv' <<<"$out")
    # shellcheck disable=SC2086
    printf '%-10s %8.2f %8d %8.3f %8.3f %8.3f %8d %8.3f %8.3f\n' "$w" $row
    pcts+=("$(cut -f7 <<<"$row")")
  done
done
printf 'median cost: %.3f %% of one core over %d cells (target <= 1 %%)\n' "$(median "${pcts[@]}")" "${#pcts[@]}"
