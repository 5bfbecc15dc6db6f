// Package same compares slices that are most often one and the same: the
// members' interned subscriptions, the assignors' shared topic lists.
package same

import "slices"

// Slice is slices.Equal, answered at once when a and b start at the same
// element (one slice, or one a prefix of the other's array with the same
// length).
func Slice[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}
