#!/usr/bin/env bash
# Bisect by instruction count against bisect by TPS (issue 15): a chain of
# five commits on the PostgreSQL 15 tree whose third adds the busy loop of
# workload/testdata/slow_exec_simple_query.patch to exec_simple_query; the
# same chain is bisected on instructions_per_tx (one repeat per step) and
# on tps (select1, one client, -r 8, -d 5), builds shared between the two.
# Prints each bisect's verdict and wall time; the first run also pays the
# builds, so the instruction bisect runs twice and the second is the one
# to compare.
#
# 2026-11-30, 2-core VM at load 10–14 (five engineers compiling): the
# instruction bisect named the commit in 94 s (431 s with the chain's
# builds); the TPS bisect was inconclusive at its first step after 469 s
# (good 21.7 k, step 17.2 k, bad 16.3 k TPS: noise of the load, not the
# ~8 µs loop). Instruction counts were exact at that load.
#
# Usage: bench/bisect_metric.sh [PG15_SOURCE]  (default: the tests' clone)
set -euo pipefail
cd "$(dirname "$0")/.."
src0=${1:-${ABTEST_PG15_SOURCE:-$HOME/.cache/abtest-test/pg15-src}}
go build -o /tmp/abtest-bench ./cmd/abtest
base=$(mktemp -d /tmp/abtest-bisect-XXXX); chmod 755 "$base"
export PG_DATA_DIR=$base/data PG_INSTALL_DIR=$base/install PG_WORKTREES_DIR=$base/wt BENCH_RESULTS_DIR=$base/results
trap 'for e in "$PG_DATA_DIR"/*.env.sh; do [ -e "$e" ] && /tmp/abtest-bench switch -w "$(basename "$e" .env.sh)" --stop >/dev/null 2>&1; done; rm -rf "$base"' EXIT
mkdir -p "$PG_INSTALL_DIR"
# A warm compiler cache, as on a machine that has built this tree before.
if [ -d /var/tmp/abtest-test/install/.ccache ]; then cp -a /var/tmp/abtest-test/install/.ccache "$PG_INSTALL_DIR/"; fi
src=$base/src
git clone -q "$src0" "$src"
export PG_SOURCE_DIR=$src
good=$(git -C "$src" rev-parse HEAD)
for i in 1 2 3 4 5; do
  if [ "$i" = 3 ]; then
    git -C "$src" apply "$PWD/workload/testdata/slow_exec_simple_query.patch"
    git -C "$src" -c user.name=B -c user.email=b@e commit -q -am "slow exec_simple_query"
    want=$(git -C "$src" rev-parse HEAD)
  else
    printf '%*s\n' "$i" x > "$src/README.bench"; git -C "$src" add README.bench
    git -C "$src" -c user.name=B -c user.email=b@e commit -q -m "harmless change $i"
  fi
done
echo "slowing commit: $want"
run() { # label, bisect arguments...
  local label=$1; shift
  local t0=$SECONDS
  /tmp/abtest-bench bisect --good "$good" --bad HEAD -w select1 -c 1 --warmup 1 -o "$base/$label" "$@" > "$base/$label.out" 2>&1 || true
  printf '%-28s %5d s  %s\n' "$label" $((SECONDS - t0)) "$(grep -E 'first bad commit|inconclusive|range' "$base/$label.out" | head -1)"
}
run instructions-with-builds --metric instructions_per_tx -r 1 --max-repeats 1
run instructions --metric instructions_per_tx -r 1 --max-repeats 1
run tps --metric tps -r 8 --max-repeats 16 -d 5
uptime
