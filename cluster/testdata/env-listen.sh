# Written by abtest for cluster lru. Use it with:
#   source /pg/data/lru.env.sh
export PATH=/pg/install/lru/bin"${PATH:+:$PATH}"
export LD_LIBRARY_PATH=/pg/install/lru/lib"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PGDATA=/pg/data/lru
export PGHOST=/tmp/abtest-0123456789
export PGPORT=5433
export PGUSER=postgres
export PGDATABASE=benchmark
export PGPASSFILE=/pg/data/lru/abtest.pgpass
