package partset

import (
	"reflect"
	"testing"
)

func TestSorted(t *testing.T) {
	got := Sorted(map[string]map[int32]int32{
		"a": {3: 1, 0: 1, 2: 5},
		"b": {},
		"c": {7: 0},
	})
	want := map[string][]int32{"a": {0, 2, 3}, "c": {7}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sorted = %v, want %v (ascending, b left out)", got, want)
	}
	if got := Sorted(map[string]map[int32]struct{}(nil)); len(got) != 0 || got == nil {
		t.Errorf("Sorted(nil) = %#v, want an empty map", got)
	}
}
