#!/usr/bin/env bash
# Adaptive repeats (issue 13): mean cells for --until-decided to decide a
# 3 % TPS change at this host's noise (CV ~6 %, bimodal), against the
# fixed number of repeats of the same power; wall time at 35.3 s a cell
# (the matrix's default cell, measured overhead). Pure simulation through
# analysis.Analyze: no server runs. The defaults are the CLI's design: a
# look after every block from -r 8. -step N shows a design with fewer
# looks (the CLI has none such).
#
# 200 runs, 2026-11-30: step 1 (the CLI): 258 cells (2.5 h) at 81.5 %
# power, where 96 fixed repeats (192 cells, 1.9 h) reach the same power;
# step 8: 214 cells (2.1 h) at 91 %, fixed 240 cells (2.4 h). With a
# look after every block the Pocock-type spending leaves each look so
# little α that adaptive repeats cost more than a fixed design.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/untildecided "$@"
