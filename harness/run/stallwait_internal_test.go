package run

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
)

// scriptedWait runs a stallWait on a scripted clock: it begins at 100 s
// and is planned to last 44 s, under timers where a stall of 5 s or more
// is long enough for a session to expire (session 6 s, heartbeat 1 s).
// Each poll of the condition moves the clock one waitTick, except at the
// scripted points: the first poll at or after a stall's time moves it by
// the stall's length instead (the harness did not run), and the pulse,
// asked by the wait, records it. The condition never holds; no real time
// is measured. It returns the wait, when it ended, and the stalls the
// pulse recorded.
func scriptedWait(t *testing.T, stallsAt map[time.Duration]time.Duration) (*stallWait, time.Duration, []history.Stall) {
	t.Helper()
	return scriptedWaitUntil(t, stallsAt, -1)
}

// scriptedWaitUntil is scriptedWait whose condition holds from holds on
// (never when holds < 0).
func scriptedWaitUntil(t *testing.T, stallsAt map[time.Duration]time.Duration, holds time.Duration) (*stallWait, time.Duration, []history.Stall) {
	t.Helper()
	const begin = 100 * time.Second
	now := begin
	clock := func() time.Duration { return now }
	rec, err := history.NewRecorder(&bytes.Buffer{}, clock, history.Retain())
	if err != nil {
		t.Fatal(err)
	}
	p := newPulse(rec, clock, func(string, ...any) {})
	p.last = begin // the harness ran until the wait began
	plan := history.Plan{SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 15 * time.Second}
	w := &stallWait{plan: plan, clock: clock, pulse: p, bound: 44 * time.Second}
	tick := make(chan time.Time)
	close(tick) // every poll finds its tick
	done := map[time.Duration]bool{}
	polls := 0
	w.run(context.Background(), nil, tick, func() bool {
		if holds >= 0 && now >= holds {
			return true
		}
		if polls++; polls > 100000 {
			t.Fatalf("the wait did not end: at %v, deadline %v", now, w.deadline)
		}
		for at, d := range stallsAt {
			if now >= at && !done[at] {
				done[at] = true
				now += d
				return false
			}
		}
		now += waitTick
		return false
	})
	return w, now, p.stalls()
}

// TestStallWaitMoves: the wait's end moves as EventuallyConverges counts
// the harness's stalls: not at all without one; to a whole bound after the
// end of a long one late in the wait; by its length for a short one; never
// past the cap.
func TestStallWaitMoves(t *testing.T) {
	const s = time.Second
	ms := time.Millisecond
	cases := []struct {
		name     string
		stallsAt map[time.Duration]time.Duration
		deadline time.Duration
		capped   bool
		note     string
	}{
		{"no stall: unchanged", nil, 144 * s, false, ""},
		// The pulse was due 100 ms after the last poll, at 140.1 s; the
		// harness ran again at 148 s: 7.9 s, long.
		{"a long stall late in the wait restarts it at its end", map[time.Duration]time.Duration{140 * s: 8 * s}, 148*s + 44*s, false, "past its planned deadline (2m24s into the run) to 3m12s, its deadline moved to 3m12s"},
		// Due at 120.1 s, ran at 123 s: 2.9 s, short.
		{"a short stall extends it by its length", map[time.Duration]time.Duration{120 * s: 3 * s}, 144*s + 2900*ms, false, "past its planned deadline (2m24s into the run) to 2m27s, its deadline moved to 2m26.9s"},
		// The second restarts it at 198 s, to end at 242 s: past the cap.
		{"the cap holds", map[time.Duration]time.Duration{140 * s: 8 * s, 190 * s: 8 * s}, 100*s + check.StallCap*44*s, true, "cut at its cap of 3× its planned 44s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, ended, stalls := scriptedWait(t, c.stallsAt)
			if len(stalls) != len(c.stallsAt) {
				t.Fatalf("the pulse recorded %+v, want %d stall(s)", stalls, len(c.stallsAt))
			}
			if w.deadline != c.deadline || w.capped != c.capped {
				t.Fatalf("deadline %v (capped %v), want %v (capped %v); stalls %+v", w.deadline, w.capped, c.deadline, c.capped, stalls)
			}
			if ended < c.deadline || ended >= c.deadline+waitTick {
				t.Fatalf("the wait ended at %v, want at its first poll from %v", ended, c.deadline)
			}
			said := w.said("quiesce")
			if (c.note == "") != (said == "") || !strings.Contains(said, c.note) {
				t.Fatalf("note %q, want one containing %q", said, c.note)
			}
		})
	}
}

// TestStallWaitRecordsTheStallItWokeFrom: the wait asks the pulse before
// judging its deadline, so a stall that runs past the planned deadline is
// recorded, and counted, by the wait itself: it does not end on the
// stale deadline while the pulse's goroutine has not run yet.
func TestStallWaitRecordsTheStallItWokeFrom(t *testing.T) {
	w, ended, stalls := scriptedWait(t, map[time.Duration]time.Duration{143 * time.Second: 8 * time.Second})
	if len(stalls) != 1 || stalls[0].To != 151*time.Second {
		t.Fatalf("stalls %+v, want one ending at 2m31s", stalls)
	}
	if want := 151*time.Second + 44*time.Second; w.deadline != want || ended < want {
		t.Fatalf("the wait ended at %v (deadline %v), want not before %v", ended, w.deadline, want)
	}
}

// TestStallWaitSaysNothingWhenItEndsInTime: a long stall moved the
// deadline, but the condition held before the planned one: the run's notes
// say nothing of it (the stall itself is in the history).
func TestStallWaitSaysNothingWhenItEndsInTime(t *testing.T) {
	w, ended, stalls := scriptedWaitUntil(t, map[time.Duration]time.Duration{110 * time.Second: 8 * time.Second}, 125*time.Second)
	if len(stalls) != 1 || w.deadline != 118*time.Second+44*time.Second {
		t.Fatalf("stalls %+v, deadline %v: want one, moving it to 2m42s", stalls, w.deadline)
	}
	if ended != 125*time.Second {
		t.Fatalf("the wait ended at %v, want when its condition held, 2m5s", ended)
	}
	if s := w.said("quiesce"); s != "" {
		t.Fatalf("note %q for a wait that ended before its planned deadline", s)
	}
}
