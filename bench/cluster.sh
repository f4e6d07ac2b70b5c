#!/usr/bin/env bash
# Cluster start times (issue 4), with a prebuilt installation:
#   fresh:    initdb + start + first connection + CREATE DATABASE/EXTENSION
#             (target ≤ 5 s)
#   existing: start of a stopped, existing data dir to first connection
#             (target ≤ 2 s)
# Usage: bench/cluster.sh [INSTALL] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
install=${1:-/usr/lib/postgresql/15}
rounds=${2:-5}
go build -o /tmp/abtest-bench ./cmd/abtest
base=$(mktemp -d /tmp/abtest-bench-XXXX); chmod 755 "$base"
export PG_DATA_DIR=$base/data PG_INSTALL_DIR=$base/install PG_WORKTREES_DIR=$base/wt
trap '/tmp/abtest-bench switch -w b --stop >/dev/null 2>&1 || true; rm -rf "$base"' EXIT
now() { date +%s.%N; }
fresh=() existing=()
for i in $(seq 1 "$rounds"); do
  t0=$(now); /tmp/abtest-bench switch -w b --install "$install" --recreate-cluster >/dev/null; t1=$(now)
  /tmp/abtest-bench switch -w b --stop >/dev/null
  t2=$(now); /tmp/abtest-bench switch -w b --install "$install" >/dev/null; t3=$(now)
  /tmp/abtest-bench switch -w b --stop >/dev/null
  fresh+=("$(echo "$t1 - $t0" | bc)") existing+=("$(echo "$t3 - $t2" | bc)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
printf 'install: %s, %s rounds\n' "$install" "$rounds"
printf 'fresh initdb + start:   median %.3f s  (%s)\n' "$(median "${fresh[@]}")" "${fresh[*]}"
printf 'start of existing data: median %.3f s  (%s)\n' "$(median "${existing[@]}")" "${existing[*]}"
