package check

import (
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// stallPlan has the timers of the scorecard's runs: the bound is
// 6 + 15 + 3×1 + 20 = 44 s, and a stall of 6 − 1 = 5 s or more is long
// enough for a session to expire.
func stallPlan() history.Plan {
	return history.Plan{Topics: []history.TopicPlan{{Name: "t", Partitions: 2}}, SessionTimeout: 6 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 15 * time.Second, ConvergenceSlack: 20 * time.Second}
}

// stall: the harness does not run for d from now; its pulse records the
// stall when it runs again, at the stall's end.
func (h *hist) stall(d time.Duration) int64 {
	h.t.Helper()
	from := h.now
	h.wait(d - time.Second) // add moves the clock the last second
	return h.info("harness", history.FStall, history.Stall{From: from, To: from + d, Every: 100 * time.Millisecond})
}

// starved is a run's end in the shape of seed 2382809174284244688: a and b
// own t-0 and t-1, a fault heals, and after the heal the harness does not
// run for stallLen from after; when recorded is false the time passes all
// the same but the history has no stall event (the group itself was slow).
// After it, b's session is found expired, and a takes t-1 late after that;
// the observer sees the group Reconciling, then Stable.
type starved struct {
	after, stallLen, late time.Duration
	recorded              bool
	// stallBefore, when set, is a stall recorded before the heal;
	// stallAfter one recorded once the group is Stable again, before the
	// final marker.
	stallBefore, stallAfter time.Duration
}

type starvedRun struct {
	h                      *hist
	heal, stall, converged int64
	obs                    *history.Observations
	healT, stallT, convT   time.Duration
}

func (s starved) build(t *testing.T) starvedRun {
	t.Helper()
	h := newHist(t)
	r := starvedRun{h: h, stall: -1}
	h.assigned("a", 1, 0)
	h.assigned("b", 1, 1)
	h.call("nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{"broker-1"}}, history.OK, history.Fault{What: "pause"})
	h.describe(stable(1))
	if s.stallBefore > 0 {
		h.stall(s.stallBefore)
	}
	h.call("nemesis", history.FFaultStop, history.Fault{What: "pause", Target: []string{"broker-1"}}, history.OK, history.Fault{What: "pause"})
	r.heal = h.phase(history.PhaseHeal)
	r.healT = h.now
	h.wait(s.after)
	if s.recorded {
		r.stall = h.stall(s.stallLen)
	} else {
		h.wait(s.stallLen)
	}
	h.info("b", history.FSessionExpired, history.Membership{Member: "b", Protocol: history.ProtocolConsumer, Epoch: 1})
	h.describe(inState(2, "Reconciling"))
	h.wait(s.late)
	r.converged = h.assigned("a", 2, 1)
	r.convT = h.now
	h.describe(stable(2))
	if s.stallAfter > 0 {
		h.stall(s.stallAfter)
	}
	h.phase(history.PhaseFinal)
	r.obs = &history.Observations{Final: history.Snapshot{Group: stable(2), Time: h.now}}
	return r
}

// TestStarvedHarness: a stall of the harness after the heal is a fault the
// harness caused. One long enough for a session to expire starts the
// convergence window at its end; a shorter one adds its length to the
// bound; one before the heal, or after the group converged, changes
// nothing; and without a recorded stall nothing is excused.
func TestStarvedHarness(t *testing.T) {
	t.Parallel()
	// The seed: 12.5 s of stall from 30.2 s after the heal; the group
	// converges 46.7 s after the heal (2.7 s over 44 s), 4 s after the
	// stall's end.
	seed := starved{after: 30200 * time.Millisecond, stallLen: 12500 * time.Millisecond, recorded: true}
	t.Run("the seed: a 12.5 s stall after the heal, a session expired in it, converged 4 s after it holds", func(t *testing.T) {
		r := seed.build(t)
		if took := r.convT - r.healT; took <= 44*time.Second {
			t.Fatalf("the script converges %s after the heal: not over the plain bound, it proves nothing", took)
		}
		v := EventuallyConverges(r.h.events(), r.obs, stallPlan())
		mustHold(t, v)
		mustNote(t, v, "the harness did not run for 12.5s (39.2s–51.7s, event 9, the members in its process with it): long enough for a session to expire (session 6s − heartbeat 1s = 5s), so a convergence measured across it counts from its end: the bound counts from 51.7s")
		mustNote(t, v, "every partition owned by exactly one member 46.7s after the heal, over the bound (session 6s + rebalance 15s + 3×heartbeat 1s + slack 20s = 44s), but the harness did not run for part of it: counted from the end of the harness's stall at event 9, 4s")
		mustNote(t, v, "group Stable 47.7s after the heal")
	})
	t.Run("the same group slow with no stall recorded fails", func(t *testing.T) {
		s := seed
		s.recorded = false
		r := s.build(t)
		x := mustCite(t, EventuallyConverges(r.h.events(), r.obs, stallPlan()), r.heal, r.converged)
		mustSay(t, x, "ownership bound exceeded", "46.7s after the heal", "2.7s over the bound (session 6s + rebalance 15s + 3×heartbeat 1s + slack 20s = 44s)")
		if strings.Contains(x.Message, "harness") {
			t.Fatalf("message %q speaks of a stall the history does not record", x.Message)
		}
	})
	t.Run("a long stall early after the heal, then a group still unconverged 50 s after its end, fails", func(t *testing.T) {
		r := starved{after: 2 * time.Second, stallLen: 12500 * time.Millisecond, recorded: true, late: 46 * time.Second}.build(t)
		v := EventuallyConverges(r.h.events(), r.obs, stallPlan())
		x := mustCite(t, v, r.heal, r.converged, r.stall)
		mustSay(t, x, "ownership bound exceeded: every partition had exactly one owner only 1m4.5s after the heal",
			"and 50s after the end of the harness's stall at event 9 (it did not run from 11s to 23.5s, 12.5s: long enough for a session to expire), from which the bound counts, 6s over the bound (session 6s + rebalance 15s + 3×heartbeat 1s + slack 20s = 44s)")
		mustSay(t, v.Violations[1], "stability bound exceeded", "51s after the end of the harness's stall at event 9", "7s over the bound")
	})
	t.Run("a short stall adds its length to the bound, and no more", func(t *testing.T) {
		// 3 s of stall (under the 5 s a session needs), converged 49.3 s
		// after the heal: 44 + 3 = 47 s, 2.3 s over.
		s := seed
		s.stallLen = 3 * time.Second
		s.late = 12100 * time.Millisecond
		r := s.build(t)
		if took := r.convT - r.healT; took != 49300*time.Millisecond {
			t.Fatalf("the script converges %s after the heal, want 49.3s", took)
		}
		x := mustCite(t, EventuallyConverges(r.h.events(), r.obs, stallPlan()), r.heal, r.converged, r.stall)
		mustSay(t, x, "ownership bound exceeded: every partition had exactly one owner only 49.3s after the heal (event 8 → event 13), 2.3s over the bound (session 6s + rebalance 15s + 3×heartbeat 1s + slack 20s = 44s + the harness's stalls 3s (1) = 47s)")
		if strings.Contains(x.Message, "from which the bound counts") {
			t.Fatalf("a short stall moved the window: %q", x.Message)
		}
	})
	t.Run("a short stall excuses an overrun no longer than itself", func(t *testing.T) {
		s := seed
		s.stallLen = 3 * time.Second
		s.late = 8600 * time.Millisecond // converged 45.8 s after the heal, Stable 46.8 s: 44 + 3 = 47 s
		r := s.build(t)
		v := EventuallyConverges(r.h.events(), r.obs, stallPlan())
		mustHold(t, v)
		mustNote(t, v, "too short for a session to expire, so a convergence measured across it gets its length added to the bound")
	})
	t.Run("a stall before the heal does not move the window", func(t *testing.T) {
		s := seed
		s.recorded = false
		s.stallBefore = 30 * time.Second
		r := s.build(t)
		v := EventuallyConverges(r.h.events(), r.obs, stallPlan())
		x := mustCite(t, v, r.heal, r.converged)
		mustSay(t, x, "46.7s after the heal", "2.7s over the bound (session 6s + rebalance 15s + 3×heartbeat 1s + slack 20s = 44s)")
		if strings.Contains(x.Message, "harness") {
			t.Fatalf("a stall before the heal was counted: %q", x.Message)
		}
		mustNote(t, v, "1 harness stall(s) ended before the heal: they do not move the bound")
	})
	t.Run("a stall after the group converged excuses nothing", func(t *testing.T) {
		s := seed
		s.recorded = false
		s.stallAfter = 20 * time.Second
		r := s.build(t)
		x := mustCite(t, EventuallyConverges(r.h.events(), r.obs, stallPlan()), r.heal, r.converged)
		mustSay(t, x, "2.7s over the bound (session 6s + rebalance 15s + 3×heartbeat 1s + slack 20s = 44s)")
	})
}

// TestStarvedHarnessMembership: a member out of the group is measured
// from the end of a long stall after its last membership event.
func TestStarvedHarnessMembership(t *testing.T) {
	t.Parallel()
	// b gives up before the heal (membershipHist); after the heal
	// the harness does not run for 25 s (recorded or not), and the final
	// observation comes 20 s after that: 48 s after the heal, over the
	// bound of 35 s, 21 s after the stall's end.
	build := func(t *testing.T, recorded bool) (*hist, *history.Observations) {
		h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 20*time.Second, func(h *hist) {
			if recorded {
				h.stall(25 * time.Second)
			} else {
				h.wait(25 * time.Second)
			}
		})
		return h, obs
	}
	t.Run("out 48 s after the heal, 21 s after a long stall: under the bound", func(t *testing.T) {
		h, obs := build(t, true)
		v := EventuallyConverges(h.events(), obs, convergePlan())
		mustHold(t, v)
		mustNote(t, v, "member b not in the group at the final observation, only 21s after the end of the harness's stall at event 13")
	})
	t.Run("the same without the stall recorded fails", func(t *testing.T) {
		h, obs := build(t, false)
		mustFailSaying(t, EventuallyConverges(h.events(), obs, convergePlan()), "member b runs but is not in the group at the final observation")
	})
}

// TestStallMalformed: a stall that ends before it begins is a malformed
// history, and moves nothing.
func TestStallMalformed(t *testing.T) {
	t.Parallel()
	h := newHist(t)
	bad := h.info("harness", history.FStall, history.Stall{From: 9 * time.Second, To: 8 * time.Second})
	mustCite(t, HistoryWellFormed(h.events()), bad)
}

// TestStallDeadline: a wait of the run moves its end by the rule
// EventuallyConverges counts by. Under stallPlan a stall of 5 s or more is
// long; the wait begins at 100 s and is planned to last 44 s.
func TestStallDeadline(t *testing.T) {
	const s = time.Second
	from, bound := 100*s, 44*s
	span := func(a, b time.Duration) history.Stall {
		return history.Stall{From: a, To: b, Every: 100 * time.Millisecond}
	}
	cases := []struct {
		name   string
		spans  []history.Stall
		want   time.Duration
		capped bool
	}{
		{"no stall: unchanged", nil, 144 * s, false},
		{"a stall before the wait: unchanged", []history.Stall{span(50*s, 60*s)}, 144 * s, false},
		{"a long stall late in the wait restarts it at its end", []history.Stall{span(140*s, 148*s)}, 148*s + 44*s, false},
		{"a long stall that began before the wait restarts it at its end", []history.Stall{span(95*s, 103*s)}, 147 * s, false},
		{"a short stall extends it by its length", []history.Stall{span(120*s, 123*s)}, 147 * s, false},
		{"a short stall across the wait's start counts its part after it", []history.Stall{span(98*s, 102*s)}, 146 * s, false},
		{"short stalls after the last long one add up", []history.Stall{span(110*s, 112*s), span(130*s, 140*s), span(150*s, 153*s), span(160*s, 161*s)}, 140*s + 44*s + 4*s, false},
		{"the cap holds", []history.Stall{span(140*s, 148*s), span(186*s, 194*s), span(232*s, 240*s)}, 100*s + 3*44*s, true},
	}
	for _, c := range cases {
		got, capped := StallDeadline(stallPlan(), c.spans, from, bound)
		if got != c.want || capped != c.capped {
			t.Errorf("%s: deadline %v (capped %v), want %v (capped %v)", c.name, got, capped, c.want, c.capped)
		}
	}
	// Without a session timeout no stall is long: each only extends.
	p := stallPlan()
	p.SessionTimeout = 0
	if got, _ := StallDeadline(p, []history.Stall{span(140*s, 148*s)}, from, bound); got != 152*s {
		t.Errorf("no session timeout: deadline %v, want 152s (extended by the stall's 8s)", got)
	}
}

// TestStallDeadlineMatchesTheChecker: a convergence at the deadline a
// wait was moved to is within the bound as EventuallyConverges' measure
// counts it, and one a second later is not; the two share one rule.
func TestStallDeadlineMatchesTheChecker(t *testing.T) {
	const s = time.Second
	p := stallPlan()
	b, err := ConvergenceBound(p)
	if err != nil {
		t.Fatal(err)
	}
	spans := []history.Stall{{From: 110 * s, To: 112 * s}, {From: 140 * s, To: 148 * s}, {From: 170 * s, To: 173 * s}}
	f := &facts{}
	for i, sp := range spans {
		f.stalls = append(f.stalls, stallAt{pos: i, from: sp.From, to: sp.To})
	}
	f.ev = make([]history.Event, len(spans))
	r := newStallRule(f, p)
	d, _ := StallDeadline(p, spans, 100*s, b.Limit)
	for _, c := range []struct {
		at     time.Duration
		within bool
	}{{d, true}, {d + s, false}} {
		m := r.measure(f, 100*s, c.at, b)
		if over := c.at - m.start - m.bound.Limit; (over <= 0) != c.within {
			t.Errorf("a convergence at %v (deadline %v): over the bound by %v, want within %v", c.at, d, over, c.within)
		}
	}
}
