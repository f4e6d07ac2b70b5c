# Sourced by bench scripts: build abtest and start a throwaway cluster of a
# prebuilt installation (Debian's PostgreSQL 15 unless ABTEST_PG_INSTALL),
# stopped and removed on exit. After it: $base (scratch dir, with s1.sql),
# $abtest (the binary, built inside $base: scripts run side by side on one
# machine never share it), the cluster's env.sh sourced, $threads for
# pgbench.
# Usage: bench_cluster NAME CLIENTS
bench_cluster() {
  local name=$1 clients=$2
  install=${ABTEST_PG_INSTALL:-/usr/lib/postgresql/15}
  base=$(mktemp -d "/tmp/abtest-$name-XXXX"); chmod 755 "$base"
  abtest=$base/abtest
  export PG_DATA_DIR=$base/data PG_INSTALL_DIR=$base/install PG_WORKTREES_DIR=$base/wt PG_RESULTS_DIR=$base/results
  trap bench_cleanup EXIT
  go build -o "$abtest" ./cmd/abtest
  "$abtest" switch -w "$name" --install "$install" -p auto >/dev/null
  # shellcheck disable=SC1090
  . "$PG_DATA_DIR/$name.env.sh"
  echo 'SELECT 1;' > "$base/s1.sql"
  threads=$(( clients < $(nproc) ? clients : $(nproc) ))
}

# bench_cleanup stops every cluster under $base (bench_cluster's and any a
# script's matrix started) and removes $base.
bench_cleanup() {
  local d
  for d in "$base"/data/*/; do
    [ -d "$d" ] && { "$abtest" switch -w "$(basename "$d")" --stop >/dev/null 2>&1 || true; }
  done
  rm -rf "$base"
}

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
