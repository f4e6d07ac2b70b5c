package results_test

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"github.com/pgabtest/abtest/results"
)

// BenchmarkParseFloat: metric values as cells.jsonl spells them, by
// parseFloat and by strconv.ParseFloat.
func BenchmarkParseFloat(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var nums [][]byte
	for range 1000 {
		nums = append(nums, []byte(strconv.FormatFloat(1000*(1+0.02*rng.NormFloat64()), 'g', -1, 64)))
	}
	b.Run("parseFloat", func(b *testing.B) {
		for i := range b.N {
			results.ParseFloat(nums[i%len(nums)])
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := range b.N {
			n := nums[i%len(nums)]
			strconv.ParseFloat(unsafe.String(unsafe.SliceData(n), len(n)), 64)
		}
	})
}
