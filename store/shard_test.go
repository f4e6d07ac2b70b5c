package store

import (
	"slices"
	"testing"
)

// Shards of a run are merged in number order, as Load reads directories.
func TestShardIndexOrder(t *testing.T) {
	names := []string{"10/12", "2/12", "1/12", "", "12/12"}
	slices.SortStableFunc(names, func(a, b string) int { return shardIndex(a) - shardIndex(b) })
	if want := []string{"", "1/12", "2/12", "10/12", "12/12"}; !slices.Equal(names, want) {
		t.Errorf("order %q, want %q", names, want)
	}
}
