#!/usr/bin/env bash
# Analysis at scale (issue 7, issue 27): `abtest analyze` of 100 000
# cells, the markdown report with plots. Target: ≤ 1 s and ≤ 200 MB peak
# RSS (issue 27). Where the time goes: go run ./bench/analyzeprof
# -cpuprofile cpu.pb.gz -count 3 DIR (the fastest of each step: load,
# analyse, write; wall and CPU seconds); -memprofile for what is
# allocated, -liveprofile for what is live after the analysis.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/abtest" ./cmd/abtest
go run ./bench/gen100k "$dir/run"
ls -la "$dir/run"
for fmt in md json; do
  # CPU seconds beside wall: on a shared machine wall time is the load's.
  /usr/bin/time -f "analyze --format $fmt: %e s wall, %U s user + %S s sys CPU, %M KB peak RSS" "$dir/abtest" analyze "$dir/run" --format $fmt -o "$dir/report.$fmt" 2>&1 | grep -v '^report:'
  echo "  load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
