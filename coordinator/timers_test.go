package coordinator

import (
	"fmt"
	"slices"
	"testing"
)

// TestTimersOrder: due gives the timers due at now earliest first, ties in
// the order they were set; a cancelled timer and the old arming of a timer
// set again never fire; a timer set while a Tick fires (seq above the Tick's
// maxSeq) waits for the next Tick even when it is already due; and many
// re-armings (each member's heartbeat re-arms its session timer) leave the
// queue bounded.
func TestTimersOrder(t *testing.T) {
	tm := timers{byKey: map[string]*timer{}}
	var fired []string
	set := func(key string, deadline int64) {
		tm.schedule(key, deadline, func() { fired = append(fired, fmt.Sprintf("%s@%d", key, deadline)) })
	}
	tick := func(now int64) {
		maxSeq := tm.seq
		for {
			x := tm.due(now, maxSeq)
			if x == nil {
				return
			}
			x.fire()
		}
	}
	set("a", 30)
	set("b", 10)
	set("c", 10)
	set("gone", 5)
	tm.cancel("gone")
	set("moved", 1)
	set("moved", 40)
	tick(30)
	if want := []string{"b@10", "c@10", "a@30"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	fired = nil
	tm.schedule("chain", 40, func() {
		fired = append(fired, "chain@40")
		set("next", 0) // due at once, but set during this Tick
	})
	tick(40)
	if want := []string{"moved@40", "chain@40"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v (a timer set by a firing one waits for the next Tick)", fired, want)
	}
	fired = nil
	tick(40)
	if want := []string{"next@0"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v on the next Tick, want %v", fired, want)
	}
	for i := range 100_000 {
		set(fmt.Sprintf("m%d", i%100), int64(1000+i))
	}
	if len(tm.byKey) != 100 || len(tm.queue) > 4*1024 {
		t.Fatalf("100 timers re-armed 1,000 times each: %d armed, %d queued", len(tm.byKey), len(tm.queue))
	}
	fired = nil
	tick(1 << 40)
	if len(fired) != 100 || fired[0] != "m0@100900" || fired[99] != "m99@100999" {
		t.Fatalf("fired %d timers (first %v), want each of the 100 once at its last deadline", len(fired), fired[:min(len(fired), 3)])
	}
}
