package check

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// membershipHist: members a and b (member ids "a" and "b") in a consumer
// group of two partitions; b stops after err at its heartbeat, a takes
// both partitions; the heal comes, then (after what quiet writes, if any)
// the final marker naming both members after wait.
func membershipHist(t *testing.T, err string, wait time.Duration, quiet ...func(h *hist)) (*hist, int64, *history.Observations) {
	h := newHist(t)
	h.joinHb("a", 1)
	h.assigned("a", 1, 0)
	h.joinHb("b", 2)
	h.assigned("b", 2, 1)
	_, gaveUp := h.call("b/hb", history.FHeartbeat, history.Heartbeat{Member: "b", MemberID: "b", Protocol: history.ProtocolConsumer, Epoch: 2}, history.Fail, history.Heartbeat{Member: "b", MemberID: "b", Protocol: history.ProtocolConsumer, Epoch: 2, Error: err})
	h.lost("b", 2, 1)
	h.assigned("a", 3, 0, 1)
	h.phase(history.PhaseHeal)
	g := stable(3)
	g.Members = g.Members[:1] // only a
	h.describe(g)             // the quiesce's: Stable, b missing
	for _, q := range quiet {
		q(h)
	}
	h.wait(wait)
	h.info("harness", history.FPhase, history.Phase{Name: history.PhaseFinal, Members: []string{"a", "b"}})
	g = stable(3)
	g.Members = g.Members[:1]
	return h, gaveUp, &history.Observations{Final: history.Snapshot{Group: g, Time: h.now}}
}

func TestEventuallyConvergesMembership(t *testing.T) {
	t.Parallel()
	t.Run("a member that gave up and stayed out past the bound fails", func(t *testing.T) {
		h, gaveUp, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 40*time.Second)
		x := mustCite(t, EventuallyConverges(h.events(), obs, convergePlan()), gaveUp)
		for _, want := range []string{"member b runs but is not in the group at the final observation", "UNSUPPORTED_ASSIGNOR", "over the bound"} {
			if !strings.Contains(x.Message, want) {
				t.Fatalf("message %q lacks %q", x.Message, want)
			}
		}
	})
	t.Run("the final observation is cited by the final phase marker, not by the last event", func(t *testing.T) {
		// a leaves after the final marker (the teardown): the violation is b's, and must not
		// cite a's leave as where the final observation was.
		h, gaveUp, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 40*time.Second)
		fin := h.r.Events()[len(h.r.Events())-1].Index
		left := h.info("a", history.FLeft, history.Membership{Member: "a", MemberID: "a", Protocol: history.ProtocolConsumer, Epoch: 3})
		x := mustCite(t, EventuallyConverges(h.events(), obs, convergePlan()), gaveUp, fin)
		if slices.Contains(x.EventIndexes, left) {
			t.Fatalf("cites %v, among them a's leave (event %d) after the final observation", x.EventIndexes, left)
		}
	})
	t.Run("every running member in the group holds", func(t *testing.T) {
		h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 40*time.Second)
		obs.Final.Group = stable(3) // a and b
		v := EventuallyConverges(h.events(), obs, convergePlan())
		mustHoldNote(t, v, "membership: 2 of the 2 running member(s)")
	})
	t.Run("a member the harness no longer runs is not judged", func(t *testing.T) {
		h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 40*time.Second)
		ev := h.events()
		ev[len(ev)-1].Value = history.Phase{Name: history.PhaseFinal, Members: []string{"a"}}
		mustHold(t, EventuallyConverges(ev, obs, convergePlan()))
	})
	t.Run("out for less than the bound after the heal is noted, not judged", func(t *testing.T) {
		h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 5*time.Second)
		v := EventuallyConverges(h.events(), obs, convergePlan())
		mustHoldNote(t, v, "member b not in the group at the final observation")
		mustNote(t, v, "not judged, under the bound")
	})
	t.Run("GROUP_ID_NOT_FOUND from a coordinator that lost its log is a known, noted finding", func(t *testing.T) {
		h, _, obs := membershipHist(t, "GROUP_ID_NOT_FOUND", 40*time.Second)
		v := EventuallyConverges(h.events(), obs, convergePlan())
		mustHold(t, v)
		if !hasNote(v, FindingDeposedGroupIDNotFound) || !hasKnown(v, FindingDeposedGroupIDNotFound, false) {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	t.Run("UNKNOWN_SERVER_ERROR to a join at epoch 0 is a known, noted finding, at a later epoch it is not", func(t *testing.T) {
		h, _, obs := membershipHist(t, "UNKNOWN_SERVER_ERROR", 40*time.Second)
		ev := h.events()
		for i, e := range ev {
			if hb, ok := e.Value.(history.Heartbeat); ok && hb.Error != "" {
				x := mustCite(t, EventuallyConverges(ev, obs, convergePlan()), e.Index)
				mustSay(t, x, "UNKNOWN_SERVER_ERROR")
				hb.Epoch = 0
				ev[i].Value = hb
			}
		}
		v := EventuallyConverges(ev, obs, convergePlan())
		mustHold(t, v)
		if !hasKnown(v, FindingOnlineUpgradeUnknownError, false) || !hasNote(v, "of the run's member-seconds") {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	t.Run("a member that says it stopped for good is judged without waiting for the bound", func(t *testing.T) {
		for _, tc := range []struct {
			err   string
			holds bool
		}{{"UNSUPPORTED_ASSIGNOR", false}, {"GROUP_ID_NOT_FOUND", true}} {
			h := newHist(t)
			h.joinHb("a", 1)
			h.assigned("a", 1, 0, 1)
			h.call("b/hb", history.FHeartbeat, history.Heartbeat{Member: "b", MemberID: "b", Protocol: history.ProtocolConsumer}, history.Fail, history.Heartbeat{Member: "b", MemberID: "b", Protocol: history.ProtocolConsumer, Error: tc.err})
			stopped := h.info("b", history.FStopped, history.Membership{Member: "b", Epoch: -1, Error: "the member stopped for good: " + tc.err})
			h.phase(history.PhaseHeal)
			g := stable(1)
			g.Members = g.Members[:1]
			h.describe(g)
			h.info("harness", history.FPhase, history.Phase{Name: history.PhaseFinal, Members: []string{"a", "b"}})
			obs := &history.Observations{Final: history.Snapshot{Group: g, Time: h.now}}
			v := EventuallyConverges(h.events(), obs, convergePlan())
			if tc.holds {
				mustHold(t, v)
				if !hasNote(v, "stopped for good") || !hasKnown(v, FindingDeposedGroupIDNotFound, false) {
					t.Fatalf("%s: notes %v", tc.err, v.Notes)
				}
				continue
			}
			x := mustCite(t, v, stopped)
			mustSay(t, x, "member b stopped for good", tc.err)
		}
	})
	t.Run("a static classic member fenced after a coordinator move is a known, noted finding, without the move it is not", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			moved bool
			call  func(h *hist) int64
		}{
			{"FENCED_INSTANCE_ID to JoinGroup", true, func(h *hist) int64 {
				_, p := h.call("b/join", history.FJoin, history.Join{Member: "b", MemberID: "b2", InstanceID: "ib", Generation: 1}, history.Fail, history.Join{Member: "b", MemberID: "b2", InstanceID: "ib", Generation: 1, Error: "FENCED_INSTANCE_ID"})
				h.info("b", history.FFenced, history.Membership{Member: "b", MemberID: "b2", Epoch: 1, Error: "FENCED_INSTANCE_ID"})
				return p
			}},
			{"FENCED_INSTANCE_ID to JoinGroup", false, nil},
		} {
			call := tc.call
			if call == nil { // the same call as the case before, without the move
				call = func(h *hist) int64 {
					_, p := h.call("b/join", history.FJoin, history.Join{Member: "b", MemberID: "b2", InstanceID: "ib", Generation: 1}, history.Fail, history.Join{Member: "b", MemberID: "b2", InstanceID: "ib", Generation: 1, Error: "FENCED_INSTANCE_ID"})
					return p
				}
			}
			h := newHist(t)
			h.joinHb("a", 1)
			h.assigned("a", 1, 0, 1)
			h.joinHb("b", 2)
			h.wait(time.Minute)
			if tc.moved {
				h.call("b/hb", history.FHeartbeat, history.Heartbeat{Member: "b", MemberID: "b", Protocol: history.ProtocolConsumer}, history.Fail, history.Heartbeat{Member: "b", MemberID: "b", Protocol: history.ProtocolConsumer, Error: "NOT_COORDINATOR"})
			}
			fatal := call(h)
			h.info("b", history.FStopped, history.Membership{Member: "b", Epoch: -1, Error: "stopped"})
			h.phase(history.PhaseHeal)
			g := stable(1)
			g.Members = g.Members[:1]
			h.describe(g)
			h.info("harness", history.FPhase, history.Phase{Name: history.PhaseFinal, Members: []string{"a", "b"}})
			v := EventuallyConverges(h.events(), &history.Observations{Final: history.Snapshot{Group: g, Time: h.now}}, convergePlan())
			if !tc.moved {
				mustCite(t, v, fatal)
				continue
			}
			mustHold(t, v)
			if !hasKnown(v, FindingDeposedStaticFenced, false) {
				t.Fatalf("%s: notes %v", tc.name, v.Notes)
			}
		}
	})
	t.Run("a history whose final marker names no members says membership was not judged", func(t *testing.T) {
		h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 40*time.Second)
		ev := h.events()
		ev[len(ev)-1].Value = history.Phase{Name: history.PhaseFinal}
		v := EventuallyConverges(ev, obs, convergePlan())
		mustHoldNote(t, v, "membership not judged")
	})
	t.Run("a member listed under its client id holds", func(t *testing.T) {
		h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 40*time.Second)
		obs.Final.Group.Members = append(obs.Final.Group.Members, history.MemberDescription{MemberID: "b2", ClientID: "groupquake-b", MemberEpoch: 3})
		mustHold(t, EventuallyConverges(h.events(), obs, convergePlan()))
	})
}

func hasNote(v Verdict, s string) bool {
	for _, n := range v.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// hasKnown reports whether v matched finding id, failed or noted as said.
func hasKnown(v Verdict, id string, failed bool) bool {
	for _, k := range v.Known {
		if k.Finding == id && k.Failed == failed {
			return true
		}
	}
	return false
}

// refusedHist is membershipHist's group where b, out of the group since the
// heal, has its JoinGroup refused every 5 s for 40 s, the last refusal 2 s
// before the final marker: errs gives each refusal's error in turn.
func refusedHist(t *testing.T, errs ...string) (*hist, int64, *history.Observations) {
	h, _, obs := membershipHist(t, "UNSUPPORTED_ASSIGNOR", 0)
	ev := h.events()
	fin := ev[len(ev)-1]
	h = newHist(t)
	for _, e := range ev[:len(ev)-1] {
		e.Index = 0
		h.add(e)
	}
	var first int64 = -1
	for i := 0; i < 8; i++ {
		h.wait(4 * time.Second) // add() moves the clock 1 s more
		j := history.Join{Member: "b", Generation: -1}
		done := j
		done.Error = errs[i%len(errs)]
		_, x := h.call("b/join", history.FJoin, j, history.Fail, done)
		if first < 0 {
			first = x
		}
	}
	h.wait(time.Second)
	fin.Index = 0
	h.add(fin)
	obs.Final.Time = h.now
	return h, first, obs
}

// A member refused the same way again and again since the heal is out of
// the group since the first refusal, not the latest: each refused join
// must not restart the clock (seen: kgo-classic among eager Sarama members,
// INCONSISTENT_GROUP_PROTOCOL for a whole run, never judged).
func TestRefusedAgainAndAgain(t *testing.T) {
	t.Parallel()
	t.Run("the same refusal for 40 s fails", func(t *testing.T) {
		h, _, obs := refusedHist(t, "INCONSISTENT_GROUP_PROTOCOL")
		v := EventuallyConverges(h.events(), obs, convergePlan())
		if v.Holds || !strings.Contains(v.Violations[0].Message, "member b runs but is not in the group") || !strings.Contains(v.Violations[0].Message, "INCONSISTENT_GROUP_PROTOCOL") {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("refusals that change are measured from the latest", func(t *testing.T) {
		h, _, obs := refusedHist(t, "INCONSISTENT_GROUP_PROTOCOL", "UNKNOWN_MEMBER_ID")
		mustHold(t, EventuallyConverges(h.events(), obs, convergePlan()))
	})
	t.Run("a coordinator move among them restarts the clock", func(t *testing.T) {
		h, _, obs := refusedHist(t, "INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL", "INCONSISTENT_GROUP_PROTOCOL", "COORDINATOR_NOT_AVAILABLE")
		mustHold(t, EventuallyConverges(h.events(), obs, convergePlan()))
	})
}
