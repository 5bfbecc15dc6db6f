// Package partset turns the partition sets the coordinator keeps as maps
// into the sorted lists it writes and answers with.
package partset

import (
	"maps"
	"slices"
)

// Sorted is each key's partitions in ascending order, leaving out the keys
// with none.
func Sorted[K comparable, V any](sets map[K]map[int32]V) map[K][]int32 {
	out := make(map[K][]int32, len(sets))
	for k, ps := range sets {
		if len(ps) == 0 {
			continue
		}
		out[k] = slices.Sorted(maps.Keys(ps))
	}
	return out
}
