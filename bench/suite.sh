#!/usr/bin/env bash
# The suite's time (issue 27): make test's go test, as JSON, into OUT
# (default suite.json), then its wall and CPU time, each package's
# seconds and the 15 slowest tests (go run ./bench/suitetimes; give it
# two files to compare runs). Run it alone: a suite timed beside other
# work times the other work.
#
# FRESH=1 runs it as on a fresh machine right after make demo: an empty
# test cache (builds, worktrees, initdb templates; ccache is seeded from
# make demo's, as the tests do) and a Go build cache that holds only
# what make demo compiled (abtest, built before the clock starts). Go
# modules, Debian packages and the PostgreSQL source stay. FRESH=cold
# empties the Go build cache as well (abtest's dependencies compile
# inside the timed run: 73 s of wall and 133 CPU-s on one of these
# machines, alone).
#
# The CPU time is the whole suite's when the kernel offers a cgroup
# (v1 cpuacct or v2): time(1) counts only its children that were
# reaped, and pg_ctl daemonizes every server.
#
# Usage: bench/suite.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-suite.json}
src=${ABTEST_PG15_SOURCE:-$HOME/.cache/abtest-test/pg15-src}
scripts/deps.sh
scripts/pg-source.sh "$src"
cleanup=()
trap 'for c in "${cleanup[@]}"; do eval "$c"; done' EXIT
case "${FRESH:-}" in
1 | cold)
  fresh=$(mktemp -d /var/tmp/abtest-fresh-XXXXXXXXXX)
  chmod 755 "$fresh"
  cleanup+=("rm -rf '$fresh'")
  export ABTEST_TEST_CACHE=$fresh/test GOCACHE=$fresh/go
  echo "fresh: test cache and Go build cache under $fresh"
  if [ "$FRESH" = 1 ]; then
    echo "fresh: compiling abtest first, as make demo does (not timed)"
    go build -o /dev/null ./cmd/abtest
  fi
  ;;
"") ;;
*) echo "suite.sh: FRESH is 1 (as right after make demo) or cold, not $FRESH" >&2; exit 2 ;;
esac
# A cgroup of the suite's own counts the servers' CPU too.
cg=
for root in /sys/fs/cgroup/cpuacct /sys/fs/cgroup; do
  if [ -w "$root" ] && { [ -e "$root/cpuacct.usage" ] || [ -e "$root/cgroup.controllers" ]; }; then
    cg=$root/abtest-suite-$$
    mkdir "$cg" && cleanup+=("rmdir '$cg' 2>/dev/null || echo 'suite: $cg still has processes' >&2") || cg=
    break
  fi
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
TIMEFORMAT='suite: %1R s wall, %1U s user + %1S s sys CPU'
status=0
# make test's go test flags (TESTFLAGS), as JSON.
flags=$(make -s -f - <<<'include Makefile
print: ; @echo $(TESTFLAGS)' print)
# (time of a bare subshell in an and-or list prints nothing: braces.)
time { (
  [ -z "$cg" ] || echo $BASHPID >"$cg/cgroup.procs"
  exec env ABTEST_PG15_SOURCE="$src" go test $flags -json ./... >"$out"
); } || status=$?
if [ -n "$cg" ]; then
  if [ -e "$cg/cpuacct.usage" ]; then
    usec=$(($(cat "$cg/cpuacct.usage") / 1000))
  else
    usec=$(awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat")
  fi
  awk -v u="$usec" 'BEGIN { printf "suite: %.1f CPU-s in all, servers included (cgroup)\n", u / 1e6 }'
fi
go run ./bench/suitetimes "$out"
exit "$status"
