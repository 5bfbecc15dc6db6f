package check

import (
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// supervisedHist: member a owns both partitions of a consumer group; after
// the heal, static member b is refused UNRELEASED_INSTANCE_ID at its join
// and stops for good; its supervisor restarts it (attempt 1 after 1 s), it
// is refused and stops again, and so on for tries attempts (backoffs 1 s,
// 2 s, 4 s...); with rejoin, the last restart is taken in (member id b9,
// epoch 2). wait later the final marker names a and b. It returns the
// position of b's first stop.
func supervisedHist(t *testing.T, tries int, rejoin bool, wait time.Duration) (*hist, int64, *history.Observations) {
	h := newHist(t)
	h.joinHb("a", 1)
	h.assigned("a", 1, 0, 1)
	h.phase(history.PhaseHeal)
	ga := stable(1)
	ga.Members = ga.Members[:1]
	h.describe(ga) // Stable with a alone
	first := int64(-1)
	backoff := time.Second
	for n := 1; n <= tries; n++ {
		id := "b" + itoa(int64(n))
		h.call("b/hb", history.FHeartbeat, history.Heartbeat{Member: "b", MemberID: id, InstanceID: "ib", Protocol: history.ProtocolConsumer}, history.Fail, history.Heartbeat{Member: "b", MemberID: id, InstanceID: "ib", Protocol: history.ProtocolConsumer, Error: "UNRELEASED_INSTANCE_ID"})
		stop := h.info("b", history.FStopped, history.Membership{Member: "b", Epoch: -1, Error: "the member stopped for good: UNRELEASED_INSTANCE_ID"})
		if first < 0 {
			first = stop
		}
		h.info("b", history.FRestart, history.Restart{Member: "b", Action: history.RestartScheduled, Attempt: n, Backoff: backoff, Reason: "UNRELEASED_INSTANCE_ID"})
		h.wait(backoff)
		h.info("b", history.FRestart, history.Restart{Member: "b", Action: history.RestartStarted, Attempt: n, Backoff: backoff})
		backoff *= 2
	}
	g := stable(2)
	g.Members = g.Members[:1] // a
	if rejoin {
		h.call("b/hb", history.FHeartbeat, history.Heartbeat{Member: "b", MemberID: "b9", InstanceID: "ib", Protocol: history.ProtocolConsumer}, history.OK, history.Heartbeat{Member: "b", MemberID: "b9", InstanceID: "ib", Protocol: history.ProtocolConsumer, ResultEpoch: 2})
		g.Members = append(g.Members, history.MemberDescription{MemberID: "b9", InstanceID: "ib", MemberEpoch: 2})
	}
	h.wait(wait)
	h.describe(g)
	h.info("harness", history.FPhase, history.Phase{Name: history.PhaseFinal, Members: []string{"a", "b"}})
	return h, first, &history.Observations{Final: history.Snapshot{Group: g, Time: h.now}}
}

// TestEventuallyConvergesSupervised: a member that stopped for good and
// whose supervisor brought it back into the group holds; one its
// supervisor keeps restarting is judged from its first stop, with the
// longest backoff of its restarts added to the bound (35 s here), and fails
// past it however recent its last restart.
func TestEventuallyConvergesSupervised(t *testing.T) {
	t.Parallel()
	t.Run("brought back into the group by its supervisor holds", func(t *testing.T) {
		h, _, obs := supervisedHist(t, 3, true, 10*time.Second)
		v := EventuallyConverges(h.events(), obs, convergePlan())
		mustHoldNote(t, v, "member b is in the group at the final observation after its supervisor restarted it 3 time(s)")
	})
	t.Run("without its supervisor's restarts the same stop fails", func(t *testing.T) {
		h, first, obs := supervisedHist(t, 1, false, 10*time.Second)
		var ev []history.Event
		for _, e := range h.events() {
			if e.F != history.FRestart {
				ev = append(ev, e)
			}
		}
		mustSay(t, mustCite(t, EventuallyConverges(ev, obs, convergePlan()), first), "member b stopped for good")
	})
	// Two tries: from the first stop, 11 s of events and backoffs, then
	// wait, then the describe and the marker: out for 13 s + wait at the
	// final observation; the bound with the longest backoff (2 s) is 37 s.
	t.Run("still restarting within the bound and its backoff is noted, not judged", func(t *testing.T) {
		h, _, obs := supervisedHist(t, 2, false, 23*time.Second) // out 36 s: over 35 s, under 37 s
		v := EventuallyConverges(h.events(), obs, convergePlan())
		mustHoldNote(t, v, "not judged, under the bound")
		mustNote(t, v, "the longest backoff of its supervisor's restarts 2s")
	})
	t.Run("still out past the bound and its backoff fails, citing its first stop", func(t *testing.T) {
		h, first, obs := supervisedHist(t, 2, false, 30*time.Second) // out 43 s
		x := mustCite(t, EventuallyConverges(h.events(), obs, convergePlan()), first)
		for _, want := range []string{"member b runs but is not in the group", "since which its supervisor restarts it", "over the bound"} {
			if !strings.Contains(x.Message, want) {
				t.Fatalf("message %q lacks %q", x.Message, want)
			}
		}
	})
	t.Run("restarted again and again, it is judged from its first stop, not its last restart", func(t *testing.T) {
		// Backoffs 1, 2, 4, 8, 16 s: its last restart is 4 s before the
		// final observation, its first stop over a minute.
		h, first, obs := supervisedHist(t, 5, false, 0)
		mustCite(t, EventuallyConverges(h.events(), obs, convergePlan()), first)
	})
}
