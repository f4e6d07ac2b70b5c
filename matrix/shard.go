package matrix

import (
	"strconv"

	"github.com/pgabtest/abtest/internal/exitcode"
)

// ShardAuto is the --shard value that takes the shard from the job
// engine's environment.
const ShardAuto = "auto"

// ParseShardEnv is ParseShard, with auto read from the engine that
// started this process through getenv:
//
//   - a Kubernetes Indexed Job: JOB_COMPLETION_INDEX (0-based); Kubernetes
//     gives no count, so the manifest sets ABTEST_SHARD_COUNT to its
//     completions;
//   - a Slurm job array: SLURM_ARRAY_TASK_ID counted from
//     SLURM_ARRAY_TASK_MIN (0 when unset: --array=0-3 and --array=1-4 both
//     work), of SLURM_ARRAY_TASK_COUNT.
//
// Shards of one run must share the plan, seed included (the store's run id
// is a hash of it): give every shard the same --seed.
func ParseShardEnv(s string, getenv func(string) string) (Shard, error) {
	if s != ShardAuto {
		return ParseShard(s)
	}
	if idx := getenv("JOB_COMPLETION_INDEX"); idx != "" {
		i, err1 := strconv.Atoi(idx)
		n, err2 := strconv.Atoi(getenv("ABTEST_SHARD_COUNT"))
		if err1 != nil || err2 != nil || i < 0 || i >= n {
			return Shard{}, exitcode.BadInputf("--shard auto: JOB_COMPLETION_INDEX=%q, ABTEST_SHARD_COUNT=%q: want 0 ≤ index < count (set ABTEST_SHARD_COUNT to the Job's completions)", idx, getenv("ABTEST_SHARD_COUNT"))
		}
		return Shard{i + 1, n}, nil
	}
	if id := getenv("SLURM_ARRAY_TASK_ID"); id != "" {
		lo := 0
		if m := getenv("SLURM_ARRAY_TASK_MIN"); m != "" {
			lo, _ = strconv.Atoi(m)
		}
		i, err1 := strconv.Atoi(id)
		n, err2 := strconv.Atoi(getenv("SLURM_ARRAY_TASK_COUNT"))
		if err1 != nil || err2 != nil || i < lo || i-lo >= n {
			return Shard{}, exitcode.BadInputf("--shard auto: SLURM_ARRAY_TASK_ID=%q, SLURM_ARRAY_TASK_MIN=%q, SLURM_ARRAY_TASK_COUNT=%q: want a contiguous array (--array=0-N or 1-N, no step)", id, getenv("SLURM_ARRAY_TASK_MIN"), getenv("SLURM_ARRAY_TASK_COUNT"))
		}
		return Shard{i - lo + 1, n}, nil
	}
	return Shard{}, exitcode.BadInputf("--shard auto: no job engine found: set JOB_COMPLETION_INDEX and ABTEST_SHARD_COUNT (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT (Slurm array), or give --shard I/N")
}
