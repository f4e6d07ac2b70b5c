#!/usr/bin/env bash
# Worktree creation: `abtest switch -c REF -w NAME` versus the bare
# `git worktree add --detach` it wraps, on the same PostgreSQL source tree,
# interleaved. Target (issue 2): abtest ≤ 2× git.
#
# Usage: bench/worktree.sh [SOURCE_REPO] [ROUNDS]
# SOURCE_REPO defaults to the Debian PostgreSQL 15 tree made by
# scripts/pg-source.sh under ~/.cache/abtest-test/pg15-src.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-$HOME/.cache/abtest-test/pg15-src}
rounds=${2:-7}
[ -d "$src/.git" ] || scripts/pg-source.sh "$src"
go build -o /tmp/abtest-bench ./cmd/abtest
work=$(mktemp -d)
trap 'git -C "$src" worktree prune; rm -rf "$work"' EXIT
export PG_SOURCE_DIR=$src PG_WORKTREES_DIR=$work/abtest
files=$(git -C "$src" ls-files | wc -l)

now() { date +%s.%N; }
git_t=() abt_t=()
for i in $(seq 1 "$rounds"); do
  # sync before each timing: the checkout writes ~100 MB, and write-back
  # of the previous one would otherwise land in the next measurement.
  sync; t0=$(now)
  git -C "$src" worktree add --quiet --detach "$work/git$i" HEAD
  sync; t1=$(now)
  sync; t2=$(now)
  /tmp/abtest-bench switch -c HEAD -w "a$i" >/dev/null
  sync; t3=$(now)
  git_t+=("$(echo "$t1 - $t0" | bc)") abt_t+=("$(echo "$t3 - $t2" | bc)")
  rm -rf "$work/git$i" "$work/abtest/a$i"; git -C "$src" worktree prune
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mg=$(median "${git_t[@]}") ma=$(median "${abt_t[@]}")
printf 'tree: %s (%s files), %s rounds\n' "$src" "$files" "$rounds"
printf 'git worktree add:  median %.3f s  (%s)\n' "$mg" "${git_t[*]}"
printf 'abtest switch -c:  median %.3f s  (%s)\n' "$ma" "${abt_t[*]}"
printf 'ratio abtest/git:  %.2f (target <= 2)\n' "$(echo "$ma / $mg" | bc -l)"
