package chaos

import "testing"

// TestFreshRunCovers: over sixteen fresh runs, every family runs at the
// high intensity and once with the Java mix (the Java mix once ran only
// the combined scenario, and the high intensity only churn and
// broker-faults in a hunt of eight).
func TestFreshRunCovers(t *testing.T) {
	high, java := map[string]int{}, map[string]int{}
	runs := 0
	for i := range 16 {
		f, h, j := freshRun(i)
		if h {
			high[f]++
		}
		if j {
			java[f]++
			runs++
		}
	}
	for _, f := range families {
		if high[f] == 0 || java[f] != 1 {
			t.Errorf("family %s: %d runs at the high intensity and %d with the Java mix in 16, want some and 1", f, high[f], java[f])
		}
	}
	if runs != 4 {
		t.Errorf("%d of 16 runs with the Java mix, want 4 (every fourth)", runs)
	}
}
