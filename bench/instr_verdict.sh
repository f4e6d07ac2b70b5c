#!/usr/bin/env bash
# The CPU-cost verdict's time (issue 27): `matrix --instructions-only`
# on two PostgreSQL installs built from source (default: make demo's,
# PostgreSQL 15 without and with the demo patch), select1, one
# instruction cell per commit plus a confirmation where they differ
# beyond the band; then the same against itself (A/A). Prints each run's
# wall time, its cells' and the instructions_per_tx verdict. Target:
# ≤ 2 minutes from built installs. Run it alone: valgrind's cells are
# CPU-bound.
#
# Usage: bench/instr_verdict.sh [BASE_INSTALL PATCH_INSTALL]
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:-/var/tmp/abtest-demo/install/demo-base}
b=${2:-/var/tmp/abtest-demo/install/demo-patch}
for i in "$a" "$b"; do
  [ -x "$i/bin/postgres" ] || { echo "$i: no bin/postgres; run make demo first, or give two installs" >&2; exit 2; }
done
# shellcheck disable=SC1091
. bench/lib.sh
dir=$(mktemp -d /var/tmp/abtest-instr-XXXXXXXXXX)
chmod 755 "$dir"
base=$dir abtest=$dir/abtest
trap bench_cleanup EXIT
go build -o "$dir/abtest" ./cmd/abtest
export PG_DATA_DIR=$dir/data PG_INSTALL_DIR=$dir/install PG_WORKTREES_DIR=$dir/wt BENCH_RESULTS_DIR=$dir/results
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
run() {
  local name=$1 spec=$2 start end
  start=$(date +%s.%N)
  "$dir/abtest" matrix -k "$spec" -w select1 --instructions-only -W "iv-%c" -o "$dir/results/$name" --quiet >"$dir/$name.out" 2>&1 || true
  end=$(date +%s.%N)
  printf '%s: %.1f s wall, %s cells\n' "$name" "$(echo "$end - $start" | bc)" "$(wc -l <"$dir/results/$name/cells.jsonl")"
  sed 's/^/  /' "$dir/$name.out"
}
run ab "base=install:$a,patch=install:$b"
run aa "base=install:$a,aa=install:$a"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
