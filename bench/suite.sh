#!/usr/bin/env bash
# The suite's time (issue 27): make test's go test, as JSON, into OUT
# (default suite.json), then its wall and CPU time, each package's
# seconds and the 15 slowest tests (go run ./bench/suitetimes; give it
# two files to compare runs). Run it alone: a suite timed beside other
# work times the other work.
#
# FRESH=1 runs it as on a fresh machine right after make demo: an empty
# test cache (builds, worktrees, initdb templates; ccache is seeded from
# make demo's, as the tests do) and an empty Go build cache. Go modules,
# Debian packages and the PostgreSQL source stay.
#
# Usage: bench/suite.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-suite.json}
src=${ABTEST_PG15_SOURCE:-$HOME/.cache/abtest-test/pg15-src}
scripts/deps.sh
scripts/pg-source.sh "$src"
if [ "${FRESH:-}" = 1 ]; then
  fresh=$(mktemp -d /var/tmp/abtest-fresh-XXXXXXXXXX)
  chmod 755 "$fresh"
  trap 'rm -rf "$fresh"' EXIT
  export ABTEST_TEST_CACHE=$fresh/test GOCACHE=$fresh/go
  echo "fresh: test cache and Go build cache under $fresh"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
TIMEFORMAT='suite: %1R s wall, %1U s user + %1S s sys CPU'
status=0
# make test's go test flags (TESTFLAGS), as JSON.
flags=$(make -s -f - <<<'include Makefile
print: ; @echo $(TESTFLAGS)' print)
time ABTEST_PG15_SOURCE="$src" go test $flags -json ./... >"$out" || status=$?
go run ./bench/suitetimes "$out"
exit "$status"
