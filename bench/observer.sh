#!/usr/bin/env bash
# Observer effect (issue 5): interleaved pairs of plain pgbench and
# `abtest bench` on select1, same clients, threads and duration, same
# server (a Debian PostgreSQL 15 cluster started by abtest). Target: the
# median of abtest/pgbench TPS ratios ≥ 0.99 (the bash harness: 0.96-0.985).
#
# Usage: bench/observer.sh [PAIRS] [SECONDS] [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-10} secs=${2:-10} clients=${3:-8}
# shellcheck disable=SC1091
. bench/lib.sh
bench_cluster obs "$clients"
ratios=()
for i in $(seq 1 "$pairs"); do
  plain=$(pgbench -n -c "$clients" -j "$threads" -T "$secs" -f "$base/s1.sql" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  ab=$("$abtest" bench -w select1 -c "$clients" -j "$threads" -d "$secs" --json 2>/dev/null | sed -n 's/^ *"tps": \([0-9.e+]*\),*$/\1/p' | head -1)
  r=$(echo "$ab / $plain" | bc -l)
  ratios+=("$r")
  printf 'pair %2d: pgbench %10.0f  abtest bench %10.0f  ratio %.4f\n' "$i" "$plain" "$ab" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median ratio: %.4f over %d pairs (target >= 0.99)\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), NR}'
