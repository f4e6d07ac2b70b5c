#!/usr/bin/env bash
# Cost of profiling (issue 8): interleaved pairs of select1 runs on a
# Debian PostgreSQL 15 cluster, one plain and one with `abtest perf record`
# (default frequency) over the whole run. Target: ≤ 5 % TPS drop while
# recording (and none outside the window: perf is not attached then).
#
# Usage: bench/perf_overhead.sh [PAIRS] [SECONDS] [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-6} secs=${2:-10} clients=${3:-8}
# shellcheck disable=SC1091
. bench/lib.sh
bench_cluster po "$clients"
ratios=()
for i in $(seq 1 "$pairs"); do
  plain=$(pgbench -n -c "$clients" -j "$threads" -T "$secs" -f "$base/s1.sql" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  pgbench -n -c "$clients" -j "$threads" -T "$secs" -f "$base/s1.sql" > "$base/out" 2>/dev/null &
  sleep 0.5
  "$abtest" perf record -w po -d $((secs - 1)) -o "$base/p.pb.gz" >/dev/null
  wait
  prof=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$base/out")
  r=$(echo "$prof / $plain" | bc -l); ratios+=("$r")
  printf 'pair %d: plain %10.0f  while recording %10.0f  ratio %.4f\n' "$i" "$plain" "$prof" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio while recording: %.4f over %d pairs (target >= 0.95)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), NR}'
