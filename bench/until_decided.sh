#!/usr/bin/env bash
# Adaptive repeats (issue 13): mean cells for --until-decided to decide a
# 3 % TPS change at this host's noise (CV ~6 %, bimodal), against the
# fixed number of repeats of the same power; wall time at 35.3 s a cell
# (the matrix's default cell, measured overhead). Pure simulation through
# analysis.Analyze: no server runs. The defaults are the CLI's design: a
# look every -r blocks from -r 8; -step 1 is the earlier design, a look
# after every block.
#
# 2026-11-30: a look every 8 blocks (1 000 runs): 214 cells (2.1 h) at
# 92.1 % power, where a fixed design needs 139 repeats (278 cells, 2.7 h)
# for 92.2 %: 77 % of the cells. A look after every block (500 runs): 257
# cells (2.5 h) at 83 %, where 102 fixed repeats (204 cells, 2.0 h) reach
# 85 %: 126 %. The looks share α (Pocock-type spending, union bound):
# after every block each gets so little that adaptive repeats cost more
# than a fixed design.
set -euo pipefail
cd "$(dirname "$0")/.."
go run ./bench/untildecided "$@"
