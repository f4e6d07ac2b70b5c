#!/usr/bin/env bash
# Adaptive repeats (issue 13): mean cells for --until-decided to decide a
# 3 % TPS change at this host's noise (CV ~6 %, bimodal), against the
# fixed number of repeats of the same power; wall time at 40 s a cell.
# Pure simulation through analysis.Analyze: no server runs.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/untildecided "$@"
