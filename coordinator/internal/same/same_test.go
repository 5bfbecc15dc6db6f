package same

import "testing"

func TestSlice(t *testing.T) {
	shared := []string{"a", "b"}
	for _, tc := range []struct {
		name string
		a, b []string
		want bool
	}{
		{"one slice", shared, shared, true},
		{"equal, two arrays", []string{"a", "b"}, []string{"a", "b"}, true},
		{"nil and empty", nil, []string{}, true},
		{"longer", shared, append([]string{"x"}, shared...), false},
		{"a prefix", shared[:1], shared, false},
		{"other content", []string{"a", "c"}, shared, false},
	} {
		if got := Slice(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Slice(%q, %q) = %v, want %v", tc.name, tc.a, tc.b, got, tc.want)
		}
	}
}
