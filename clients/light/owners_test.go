package light

import (
	"testing"
	"time"
)

// TestOwnersPauses: a pause is measured from the last holder giving a
// partition up to the next taking it; a first assignment is no pause; a
// partition taken while held is an overlap, not a pause.
func TestOwnersPauses(t *testing.T) {
	o := NewOwners(3)
	t0 := time.Unix(100, 0)
	o.Acquire(1, []int32{0, 1}, t0)
	o.Acquire(2, []int32{2}, t0)
	if !o.Exact() {
		t.Fatal("every partition has one owner, Exact says no")
	}
	if p := o.TakePauses(); len(p) != 0 {
		t.Fatalf("first assignments measured as pauses: %v", p)
	}
	o.Release(1, []int32{1}, t0.Add(time.Second))
	if o.Exact() {
		t.Fatal("partition 1 has no owner, Exact says every partition has one")
	}
	o.Acquire(2, []int32{1}, t0.Add(3*time.Second))
	o.Acquire(1, []int32{2}, t0.Add(4*time.Second)) // 2 still holds it
	p := o.TakePauses()
	if len(p) != 1 || p[0] != 2*time.Second {
		t.Fatalf("pauses %v, want [2s]", p)
	}
	if o.Overlaps() != 1 {
		t.Fatalf("overlaps %d, want 1", o.Overlaps())
	}
	if p := o.TakePauses(); len(p) != 0 {
		t.Fatalf("TakePauses kept %v", p)
	}
}

// TestLatencyQuantile: quantiles are upper bounds within a quarter octave.
func TestLatencyQuantile(t *testing.T) {
	var s Stats
	for range 99 {
		s.answered(12, 10*time.Millisecond)
	}
	s.answered(12, time.Second)
	l := s.Latencies(12)
	if q := l.Quantile(0.5); q < 10*time.Millisecond || q > 12*time.Millisecond {
		t.Errorf("p50 %s, want 10ms to 12ms", q)
	}
	if q := l.Quantile(1); q < time.Second || q > 1200*time.Millisecond {
		t.Errorf("max %s, want 1s to 1.2s", q)
	}
	if q := l.Since(l).Quantile(0.5); q != 0 {
		t.Errorf("empty histogram p50 %s", q)
	}
}
