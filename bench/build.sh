#!/usr/bin/env bash
# Build times (issue 3), for one source tree:
#   1. cold build + install typed by hand (no ccache)
#   2. cold `abtest switch -b release --no-ccache` of the same commit
#      (target: ≤ 5 % over 1)
#   3. a second worktree of the same commit with a one-line patch, with
#      ccache warmed by a first abtest build (target: ≤ 20 % of 2)
#   4. the same build again, unchanged (target: ≤ 2 s)
#
# Usage: bench/build.sh SOURCE_REPO [REF]
# e.g.   bench/build.sh ~/.cache/abtest-test/pg15-src base      (autotools)
#        bench/build.sh ~/pg/postgresql-18.3 HEAD                (meson)
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: bench/build.sh SOURCE_REPO [REF]}
ref=${2:-HEAD}
go build -o /tmp/abtest-bench ./cmd/abtest
work=$(mktemp -d /var/tmp/abtest-buildbench-XXXX)
chmod 755 "$work"  # as root, builds run as the server account: it must enter
trap 'git -C "$src" worktree prune; rm -rf "$work"' EXIT
export PG_SOURCE_DIR=$src PG_WORKTREES_DIR=$work/wt PG_INSTALL_DIR=$work/install PG_DATA_DIR=$work/data
ab=/tmp/abtest-bench
now() { date +%s.%N; }
jobs=$(nproc)

# 1. By hand.
git -C "$src" worktree add --quiet --detach "$work/hand" "$ref"
t0=$(now)
if [ -f "$work/hand/meson.build" ]; then
  # meson finds ccache by itself: disable it, as the abtest side does.
  (cd "$work/hand" && export CCACHE_DISABLE=1 && meson setup build --prefix="$work/hand-install" --buildtype=release -Dcassert=false -Db_ndebug=true >/dev/null \
    && ninja -C build >/dev/null && meson install -C build --quiet >/dev/null)
else
  (export CCACHE_DISABLE=1 && mkdir -p "$work/hand/build" && cd "$work/hand/build" && ../configure --quiet --prefix="$work/hand-install" --without-icu CFLAGS=-O2 CC=gcc \
    && make -s -j "$jobs" >/dev/null && make -s -j "$jobs" -C contrib/pg_stat_statements >/dev/null \
    && make -s install >/dev/null && make -s -C contrib/pg_stat_statements install >/dev/null)
fi
hand=$(echo "$(now) - $t0" | bc)

# 2. abtest, cold (no ccache).
$ab switch -c "$ref" -w cold >/dev/null
t0=$(now); $ab switch -w cold -b release --no-ccache >/dev/null; cold=$(echo "$(now) - $t0" | bc)

# 3. ccache warmed by a first worktree, then a second with a one-line patch.
$ab switch -c "$ref" -w warm >/dev/null
$ab switch -w warm -b release >/dev/null
$ab switch -c "$ref" -w second --patch demo/usage_dealloc_percent.patch >/dev/null
t0=$(now); out=$($ab switch -w second -b release); second=$(echo "$(now) - $t0" | bc)
hits=$(echo "$out" | sed -n 's/.*\(ccache [0-9.]*% hits ([0-9/]*)\).*/\1/p')

# 4. Unchanged.
t0=$(now); $ab switch -w second -b release >/dev/null; unchanged=$(echo "$(now) - $t0" | bc)

printf 'tree: %s at %s (%s)\n' "$src" "$ref" "$([ -f "$work/hand/meson.build" ] && echo meson || echo autotools)"
printf 'by hand, cold:               %7.1f s\n' "$hand"
printf 'abtest, cold:                %7.1f s  (%+.1f%% vs by hand; target <= +5%%)\n' "$cold" "$(echo "($cold / $hand - 1) * 100" | bc -l)"
printf 'second worktree, 1-line:     %7.1f s  (%.1f%% of cold; target <= 20%%; %s)\n' "$second" "$(echo "$second / $cold * 100" | bc -l)" "$hits"
printf 'unchanged rebuild:           %7.2f s  (target <= 2 s)\n' "$unchanged"
