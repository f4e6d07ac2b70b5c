# Sourced by bench scripts: build abtest and start a throwaway cluster of a
# prebuilt installation (Debian's PostgreSQL 15 unless ABTEST_PG_INSTALL),
# stopped and removed on exit. After it: $base (scratch dir, with s1.sql),
# the cluster's env.sh sourced, $threads for pgbench.
# Usage: bench_cluster NAME CLIENTS
bench_cluster() {
  local name=$1 clients=$2
  local install=${ABTEST_PG_INSTALL:-/usr/lib/postgresql/15}
  go build -o /tmp/abtest-bench ./cmd/abtest
  base=$(mktemp -d "/tmp/abtest-$name-XXXX"); chmod 755 "$base"
  export PG_DATA_DIR=$base/data PG_INSTALL_DIR=$base/install PG_WORKTREES_DIR=$base/wt
  # shellcheck disable=SC2064
  trap "/tmp/abtest-bench switch -w $name --stop >/dev/null 2>&1 || true; rm -rf '$base'" EXIT
  /tmp/abtest-bench switch -w "$name" --install "$install" -p auto >/dev/null
  # shellcheck disable=SC1090
  . "$PG_DATA_DIR/$name.env.sh"
  echo 'SELECT 1;' > "$base/s1.sql"
  threads=$(( clients < $(nproc) ? clients : $(nproc) ))
}

# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
