#!/bin/bash
# A matrix run as a Slurm job array, one shard per task on its own node:
#   sbatch docs/shards/slurm.sh
# then, when the array is done (sbatch --dependency=afterok:JOBID):
#   abtest analyze /shared/results/$SEED/shard-* --fail-on-regression
# --shard auto reads SLURM_ARRAY_TASK_ID, _MIN and _COUNT. Every task must
# use the same --seed so that the shards make one run.
#SBATCH --job-name=abtest
#SBATCH --array=0-3
#SBATCH --nodes=1
#SBATCH --exclusive
#SBATCH --time=02:00:00
set -euo pipefail
SEED=${SEED:-20261130}
PATCH=${PATCH:-$HOME/mine.patch}
abtest matrix -k "master,mine=master+$PATCH" -w select1,churn -c 1,16 -r 6 --seed "$SEED" --shard auto -o "/shared/results/$SEED/shard-$SLURM_ARRAY_TASK_ID" --quiet
