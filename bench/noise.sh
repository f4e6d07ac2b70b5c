#!/bin/bash
# Where the noise of a timed A/B is on this host, one factor at a time
# (issue 43): an A/A of Debian's PostgreSQL 15 (or ABTEST_PG_INSTALL),
# select1 and churn at 8 clients, r 10 blocks of 3 s cells, per factor:
#   base       unpinned, 1 s warm-up, the server kept up between cells
#   pinned     -C 1: the server on one CPU, pgbench on the others
#   restart    --restart-cells: a fresh server before every cell
#   no-aslr    the whole run under setarch -R (the server's layout fixed)
#   hugepages  --set huge_pages=on (vm.nr_hugepages raised for it)
#   warmup-tx  --warmup-tx 2000 in place of 1 s
#   kept       two 60 s cells per arm: 3 s windows of one pgbench run, its
#              connections and backends kept, against new cells
# then bench/noise's table of each factor's within-second, between-cell
# and block log-ratio components with their 95 % intervals.
# Run it alone on the machine: anything else running is noise it measures.
#   bash bench/noise.sh [factor …]      (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
install=${ABTEST_PG_INSTALL:-/usr/lib/postgresql/15}
repeats=${NOISE_REPEATS:-10}
base=$(mktemp -d /var/tmp/abtest-noise-XXXX); chmod 755 "$base"
abtest=$base/abtest
go build -o "$abtest" ./cmd/abtest
export PG_DATA_DIR=$base/data PG_INSTALL_DIR=$base/install PG_WORKTREES_DIR=$base/wt
hp_before=$(cat /proc/sys/vm/nr_hugepages)
cleanup() {
  for d in "$base"/data/*/; do
    [ -d "$d" ] && { "$abtest" switch "$(basename "$d")" --stop >/dev/null 2>&1 || true; }
  done
  [ "$(id -u)" = 0 ] && echo "$hp_before" > /proc/sys/vm/nr_hugepages
  echo "results kept under $base/results" >&2
}
trap cleanup EXIT

factors=("$@")
[ ${#factors[@]} -gt 0 ] || factors=(base pinned restart no-aslr hugepages warmup-tx kept)
rows=()
for f in "${factors[@]}"; do
  pre=() warm=(--warmup 1) secs=3 r=$repeats args=()
  case $f in
    base) ;;
    pinned) args+=(-C 1) ;;
    restart) args+=(--restart-cells) ;;
    no-aslr) pre=(setarch "$(uname -m)" -R) ;;
    hugepages)
      [ "$(id -u)" = 0 ] || { echo "hugepages needs root (vm.nr_hugepages)" >&2; exit 2; }
      # shared_buffers is a quarter of memory (cluster's default): that
      # many 2 MB pages and some for the rest of shared memory.
      echo $(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 4 / 2048 + 256 )) > /proc/sys/vm/nr_hugepages
      args+=(--set huge_pages=on) ;;
    warmup-tx) warm=(--warmup-tx 2000) ;;
    kept) secs=60 r=2 ;;
    *) echo "unknown factor $f" >&2; exit 2 ;;
  esac
  args+=(-k "a=install:$install,b=install:$install" -w select1,churn -c 8 -m 1000 -r "$r" -d "$secs" "${warm[@]}" -o "$base/results/$f")
  start=$(date +%s)
  ${pre[@]+"${pre[@]}"} "$abtest" matrix "${args[@]}" > "$base/$f.log" 2>&1 || true
  echo "$f: $(( $(date +%s) - start )) s, load $(cut -d' ' -f1 /proc/loadavg)" >&2
  rows+=("$f=$base/results/$f")
done
go run ./bench/noise "${rows[@]}"
