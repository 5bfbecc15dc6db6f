package check

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

func TestNoDoubleOwnership(t *testing.T) {
	t.Parallel()
	t.Run("handover after revocation holds", func(t *testing.T) {
		h := newHist(t)
		h.handover("a", 1, "b", 2, 0)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
	})
	t.Run("overlap with a fenced member that learns it later holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.hb("a", 1, history.OK)
		h.assigned("b", 2, 0) // a's session expired unobserved
		h.commit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 5)
		h.hb("a", 1, history.Fail)
		h.lost("a", 1, 0)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
	})
	t.Run("two members with valid sessions fail", func(t *testing.T) {
		h := newHist(t)
		a, b := h.takeover()
		h.revoked("a", 2, 0)
		v := NoDoubleOwnership(h.events(), nil)
		mustSay(t, mustCite(t, v, a, b), "t-0")
	})
	t.Run("fenced side that still heartbeats fails", func(t *testing.T) {
		h := newHist(t)
		a, b := h.takeover()
		inv, ok := h.hb("a", 1, history.OK)
		h.lost("a", 1, 0)
		mustCite(t, NoDoubleOwnership(h.events(), nil), a, b, inv, ok)
	})
	t.Run("fenced side whose commit lands fails", func(t *testing.T) {
		h := newHist(t)
		a, b := h.takeover()
		inv, ok := h.commit("a", 1, history.OK, "", 0, 7)
		h.lost("a", 1, 0)
		mustCite(t, NoDoubleOwnership(h.events(), nil), a, b, inv, ok)
	})
	t.Run("fenced event closes ownership as lost", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.assigned("b", 2, 0, 1)
		h.info("a", history.FFenced, history.Membership{Member: "a", Epoch: 1, Error: "FENCED_MEMBER_EPOCH"})
		mustHold(t, NoDoubleOwnership(h.events(), nil))
	})
}

func TestValidPartitionEpoch(t *testing.T) {
	t.Parallel()
	t.Run("one owner per epoch holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.hb("a", 2, history.OK) // a keeps 0 and 1 at epoch 2
		h.revoked("a", 2, 1)
		h.hb("a", 3, history.OK)
		h.assigned("b", 3, 1)
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
	})
	t.Run("two owners of one epoch fail", func(t *testing.T) {
		mustCiteSecondOwner(t, newHist(t), "a", "b", 3, nil)
	})
	t.Run("an epoch reached while holding counts", func(t *testing.T) {
		h := newHist(t)
		h.assigned("b", 4, 0)
		h.assigned("a", 3, 1)
		_, ok := h.hb("a", 4, history.OK)
		h.info("b", history.FLost, history.Assignment{Member: "b", Epoch: 4, Partitions: history.TPs("t", 0)})
		b := h.assigned("b", 4, 1) // b at epoch 4 gets 1, which a holds at epoch 4
		mustCite(t, ValidPartitionEpoch(h.events(), nil), ok, b)
	})
}

func TestEpochMonotonic(t *testing.T) {
	t.Parallel()
	t.Run("rising epochs hold", func(t *testing.T) {
		h := newHist(t)
		h.hb("a", 1, history.OK)
		h.assigned("a", 2, 0)
		h.hb("a", 2, history.OK)
		h.hb("a", 0, history.Fail) // sentinel and failure: ignored
		h.hb("a", 5, history.OK)
		h.describe(&history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Stable", GroupEpoch: 5, AssignmentEpoch: 5})
		obs := &history.Observations{Final: history.Snapshot{Label: "final", Group: &history.GroupDescription{GroupEpoch: 6, AssignmentEpoch: 6}}}
		mustHold(t, EpochMonotonic(h.events(), obs))
	})
	t.Run("member epoch going back fails", func(t *testing.T) {
		h := newHist(t)
		_, three := h.hb("a", 3, history.OK)
		_, two := h.hb("a", 2, history.OK)
		mustCite(t, EpochMonotonic(h.events(), nil), three, two)
	})
	t.Run("classic generation going back fails", func(t *testing.T) {
		h := newClassicHist(t)
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 7})
		_, j := h.call("a", history.FSync, history.Sync{Member: "a", Generation: 7}, history.OK, history.Sync{Member: "a", Generation: 7})
		h.hb("a", 6, history.OK) // answered from memory: not judged until a SyncGroup confirms 6
		_, s := h.call("a", history.FSync, history.Sync{Member: "a", Generation: 6}, history.OK, history.Sync{Member: "a", Generation: 6})
		mustCite(t, EpochMonotonic(h.events(), nil), j, s)
	})
	t.Run("group epoch going back after a restart fails", func(t *testing.T) {
		h := newHist(t)
		d := h.describe(&history.GroupDescription{Protocol: history.ProtocolConsumer, GroupEpoch: 9, AssignmentEpoch: 9})
		h.info("nemesis", history.FFaultStop, history.Fault{What: "restart", Target: []string{"broker-1"}})
		obs := &history.Observations{Final: history.Snapshot{Label: "final", Group: &history.GroupDescription{GroupEpoch: 8, AssignmentEpoch: 9}}}
		mustSay(t, mustCite(t, EpochMonotonic(h.events(), obs), d), "group epoch went back from 9", "final")
	})
}

func TestFencedCommitsRejected(t *testing.T) {
	t.Parallel()
	t.Run("owner commits accepted, zombie commits rejected hold", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 3)
		h.assigned("b", 2, 0) // a fenced meanwhile
		h.commit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 4)
		h.commit("a", 1, history.Fail, "NOT_COORDINATOR", 0, 4)
		h.lost("a", 1, 0)
		h.commit("b", 2, history.OK, "", 0, 6)
		h.reset("admin", 0, 0) // admin commit at epoch -1: not judged
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("zombie commit that landed fails", func(t *testing.T) {
		h := newHist(t)
		_, b := h.takeover()
		inv, ok := h.commit("a", 1, history.OK, "", 0, 4)
		h.lost("a", 1, 0)
		mustSay(t, mustCite(t, FencedCommitsRejected(h.events(), nil), inv, ok, b), "zombie")
	})
	t.Run("commit for another member's partition epoch fails", func(t *testing.T) {
		h := newHist(t)
		b := h.assigned("b", 2, 0)
		h.assigned("a", 2, 1)
		inv, ok := h.commit("a", 2, history.OK, "", 0, 4)
		mustCite(t, FencedCommitsRejected(h.events(), nil), inv, ok, b)
	})
	t.Run("stale commit rejected with the wrong error fails", func(t *testing.T) {
		h := newClassicHist(t)
		_, b := h.takeover()
		inv, fail := h.commit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 4) // classic names ILLEGAL_GENERATION
		mustSay(t, mustCite(t, FencedCommitsRejected(h.events(), nil), inv, fail, b), "STALE_MEMBER_EPOCH")
	})
}

func TestCommittedOffsetMonotonic(t *testing.T) {
	t.Parallel()
	t.Run("rising commits and a reset hold", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.commit("a", 1, history.Fail, "COORDINATOR_NOT_AVAILABLE", 0, 2)
		h.commit("a", 1, history.OK, "", 0, 7)
		h.describe(nil, off(0, 7))
		h.reset("admin", 0, 1)
		h.describe(nil, off(0, 1))
		h.commit("a", 1, history.OK, "", 0, 2)
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
	})
	t.Run("a later commit going back fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		_, seven := h.commit("a", 1, history.OK, "", 0, 7)
		inv, five := h.commit("a", 1, history.OK, "", 0, 5)
		mustCite(t, CommittedOffsetMonotonic(h.events(), nil), seven, inv, five)
	})
	t.Run("observer reads going back fail", func(t *testing.T) {
		h := newHist(t)
		d1 := h.describe(nil, off(0, 7))
		d2 := h.describe(nil, off(0, 4))
		mustCite(t, CommittedOffsetMonotonic(h.events(), nil), d1, d2)
	})
	t.Run("offset commit records going back fail", func(t *testing.T) {
		rec := func(o int64) history.Record {
			return history.Record{Offset: o, KeyType: history.RecordOffsetCommit, Key: map[string]any{"group": "g", "topic": "t", "partition": 0}, Value: map[string]any{"offset": o * 10}}
		}
		obs := &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HasRecords: true, Records: []history.Record{rec(3), rec(1)}}}
		v := CommittedOffsetMonotonic(nil, obs)
		mustFailSaying(t, v, "go back from 30 to 10")
	})
}

func TestNoLostRecords(t *testing.T) {
	t.Parallel()
	h := newHist(t)
	h.produce(0, 0)
	lost := h.produce(0, 1)
	h.call("p0", history.FProduce, history.Produce{Topic: "t", Seq: 99, Offset: -1}, history.Info, history.Produce{Topic: "t", Seq: 99, Offset: -1})
	h.assigned("a", 1, 0)
	h.consume("a", 1, 0, 0)
	v := NoLostRecords(h.events(), nil)
	x := mustCite(t, v, lost)
	if len(v.Violations) != 1 || !strings.Contains(x.Message, "offset 1") {
		t.Fatalf("want exactly the record at offset 1, got %+v", v.Violations)
	}
	// Where the partition's consumption stopped: the other side of the loss.
	mustSay(t, x, "was never consumed: the highest offset of it consumed is 0, by a at event 7")
	h2 := newHist(t)
	h2.produce(0, 0)
	mustSay(t, mustCite(t, NoLostRecords(h2.events(), nil)), "was never consumed: no record of it was consumed at all")
	h.consume("a", 1, 0, 1)
	mustHold(t, NoLostRecords(h.events(), nil))
}

func TestBoundedDuplicates(t *testing.T) {
	t.Parallel()
	t.Run("duplicate after a rebalance with an uncommitted offset holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 0)
		h.consume("a", 1, 0, 1)
		h.commit("a", 1, history.OK, "", 0, 1) // record 1 not committed
		h.commit("a", 1, history.Fail, "REBALANCE_IN_PROGRESS", 0, 2)
		h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		h.consume("b", 2, 0, 1)
		mustHold(t, BoundedDuplicates(h.events(), nil))
	})
	t.Run("zombie reading after the new owner holds", func(t *testing.T) {
		h := newHist(t)
		h.takeover()
		h.consume("b", 2, 0, 0)
		h.consume("a", 1, 0, 0)
		h.lost("a", 1, 0)
		mustHold(t, BoundedDuplicates(h.events(), nil))
	})
	t.Run("duplicate within one ownership fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		c1 := h.consume("a", 1, 0, 0)
		c2 := h.consume("a", 1, 0, 0)
		mustCite(t, BoundedDuplicates(h.events(), nil), c1, c2)
	})
	t.Run("duplicate of a committed record fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		c1 := h.consume("a", 1, 0, 1)
		_, ok := h.commit("a", 1, history.OK, "", 0, 2)
		h.revoked("a", 1, 0)
		s := h.assigned("b", 2, 0)
		c2 := h.consume("b", 2, 0, 1)
		mustCite(t, BoundedDuplicates(h.events(), nil), c1, ok, s, c2)
	})
}

func convergePlan() history.Plan {
	return history.Plan{Topics: []history.TopicPlan{{Name: "t", Partitions: 2}}, SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second, RebalanceTimeout: 20 * time.Second, ConvergenceSlack: 2 * time.Second}
}

func stable(epoch int32) *history.GroupDescription {
	return &history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Stable", GroupEpoch: epoch, AssignmentEpoch: epoch,
		Members: []history.MemberDescription{{MemberID: "a", MemberEpoch: epoch}, {MemberID: "b", MemberEpoch: epoch}}}
}

// inState is stable(epoch) in another state.
func inState(epoch int32, state string) *history.GroupDescription {
	g := stable(epoch)
	g.State = state
	return g
}

func TestEventuallyConverges(t *testing.T) {
	t.Parallel()
	t.Run("converging within the bound holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.call("nemesis", history.FFaultStart, history.Fault{What: "pause", Target: []string{"a"}}, history.OK, history.Fault{What: "pause"})
		h.assigned("b", 2, 0, 1)
		h.phase(history.PhaseHeal)
		h.lost("a", 1, 0, 1)
		h.wait(20 * time.Second)
		h.revoked("b", 3, 1)
		h.assigned("a", 3, 1)
		h.describe(stable(3))
		h.phase(history.PhaseFinal)
		mustHold(t, EventuallyConverges(h.events(), &history.Observations{Final: history.Snapshot{Group: stable(3)}}, convergePlan()))
	})
	t.Run("a partition left without an owner fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		r := h.revoked("a", 1, 1)
		h.phase(history.PhaseFinal)
		mustSay(t, mustCite(t, EventuallyConverges(h.events(), nil, convergePlan()), r), "never converged", "t-1 has 0 owners")
	})
	t.Run("converging too late names the bound and the excess", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		heal := h.phase(history.PhaseHeal)
		h.wait(60 * time.Second)
		late := h.assigned("b", 2, 1) // 61s after the heal; bound 10+20+3+2 = 35s
		h.phase(history.PhaseFinal)
		x := mustCite(t, EventuallyConverges(h.events(), nil, convergePlan()), heal, late)
		for _, want := range []string{"ownership bound exceeded", "1m1s after the heal", "26s over the bound", "session 10s + rebalance 20s + 3×heartbeat 1s + slack 2s = 35s"} {
			if !strings.Contains(x.Message, want) {
				t.Fatalf("message %q lacks %q", x.Message, want)
			}
		}
	})
	t.Run("a group stable too late names the stability bound", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		heal := h.phase(history.PhaseHeal)
		h.describe(inState(4, "Assigning"))
		h.wait(40 * time.Second)
		first := h.describe(stable(5)) // invoked 43s after the heal; bound 35s
		h.describe(stable(5))
		h.phase(history.PhaseFinal)
		mustSay(t, mustCite(t, EventuallyConverges(h.events(), nil, convergePlan()), heal, first), "stability bound exceeded", "43s after the heal", "8s over the bound")
	})
	t.Run("a partition still without an owner past the bound names the bound and the excess", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		heal := h.phase(history.PhaseHeal)
		r := h.revoked("a", 1, 1)
		h.wait(40 * time.Second)
		fin := h.phase(history.PhaseFinal) // 42s after the heal; bound 35s
		x := mustCite(t, EventuallyConverges(h.events(), nil, convergePlan()), heal, r, fin)
		mustSay(t, x, "never converged: at event 3, t-1 has 0 owners; judged 42s after the heal (event 1), 7s over the bound (session 10s + rebalance 20s + 3×heartbeat 1s + slack 2s = 35s)")
	})
	t.Run("a group not stable past the bound names the bound and the excess", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		heal := h.phase(history.PhaseHeal)
		h.wait(50 * time.Second)
		h.phase(history.PhaseFinal)
		g := stable(4)
		g.State, g.Members[1].MemberEpoch = "Reconciling", 3
		x := mustCite(t, EventuallyConverges(h.events(), &history.Observations{Final: history.Snapshot{Group: g, Time: h.now}}, convergePlan()), heal)
		mustSay(t, x, "group not stable at the final observation: state Reconciling", "b at epoch 3", "judged 51s after the heal (event 1), 16s over the bound (session 10s + rebalance 20s + 3×heartbeat 1s + slack 2s = 35s)")
	})
	t.Run("a group not stable at the end fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		g := stable(4)
		g.State, g.Members[1].MemberEpoch = "Reconciling", 3
		d := h.describe(g)
		h.phase(history.PhaseFinal)
		mustSay(t, mustCite(t, EventuallyConverges(h.events(), nil, convergePlan()), d), "b at epoch 3")
	})
	t.Run("without markers or faults it is measured from the first assignment", func(t *testing.T) {
		h := newHist(t)
		h.wait(100 * time.Second) // cluster setup
		h.assigned("a", 1, 0)
		h.assigned("b", 2, 1)
		mustHoldNote(t, EventuallyConverges(h.events(), nil, convergePlan()), "1s after the heal")
	})
	t.Run("no timers is skipped, not passed", func(t *testing.T) {
		v := EventuallyConverges(nil, nil, history.Plan{})
		if v.Skipped == "" || !strings.Contains(v.Skipped, "timers") {
			t.Fatalf("got %+v", v)
		}
	})
}

func TestDurableCommits(t *testing.T) {
	t.Parallel()
	t.Run("latest or unknown commits visible holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.commit("a", 1, history.OK, "", 1, 3)
		h.describe(nil, off(0, 5), off(1, 3))
		h.commit("a", 1, history.Info, "", 1, 9) // timed out, then landed
		h.commit("a", 1, history.Fail, "COORDINATOR_NOT_AVAILABLE", 0, 6)
		after := h.info("nemesis", history.FFaultStop, history.Fault{What: "restart", Target: []string{"broker-1"}})
		obs := &history.Observations{
			Checkpoints: []history.Snapshot{{Label: "after restart", HistoryLen: after + 1, HasCommitted: true, Committed: []history.OffsetAt{off(0, 5), off(1, 9)}}},
			Final:       history.Snapshot{Label: "final", HasCommitted: true, Committed: []history.OffsetAt{off(0, 5), off(1, 3)}},
		}
		mustHold(t, DurableCommits(h.events(), obs))
	})
	t.Run("acknowledged commit missing after a restart fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 5)
		_, ok := h.commit("a", 1, history.OK, "", 0, 8)
		after := h.info("nemesis", history.FFaultStop, history.Fault{What: "restart", Target: []string{"broker-1"}})
		obs := &history.Observations{
			Checkpoints: []history.Snapshot{{Label: "after restart of broker-1", HistoryLen: after + 1, HasCommitted: true, Committed: []history.OffsetAt{off(0, 5)}}},
			Final:       history.Snapshot{Label: "final", HasCommitted: true},
		}
		v := DurableCommits(h.events(), obs)
		x := mustCite(t, v, ok)
		mustSay(t, x, "after restart of broker-1 shows t-0 at offset 5")
		if len(v.Violations) != 2 || !strings.Contains(v.Violations[1].Message, "no committed offset") {
			t.Fatalf("the final snapshot without the offset must fail too: %+v", v.Violations)
		}
	})
	t.Run("a describe that lost a commit fails", func(t *testing.T) {
		h := newHist(t)
		_, ok := h.commit("a", 1, history.OK, "", 0, 5)
		d := h.describe(nil, off(0, 2))
		mustCite(t, DurableCommits(h.events(), nil), ok, d)
	})
	// Kafka's coordinator appends a commit's record before it knows the record is replicated;
	// when that wait times out it answers COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR when the
	// leader moved), and the record may still be read back later. Seen on 4.4.0 with a paused
	// follower. Such a partition error is an unknown outcome; a definite rejection is not.
	partitionErr := func(name string, outcome history.Type) ([]history.Event, int64, int64) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		_, ok := h.commit("a", 1, history.OK, "", 0, 5)
		c := history.Commit{Member: "a", Protocol: h.proto, Epoch: 1, Offsets: []history.OffsetAt{off(0, 6)}}
		done := c
		done.PartitionErrors = []history.PartitionError{{Topic: "t", Partition: 0, Error: name}}
		h.call("a", history.FCommit, c, outcome, done)
		d := h.describe(nil, off(0, 6))
		return h.events(), ok, d
	}
	for _, name := range []string{"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "REQUEST_TIMED_OUT"} {
		t.Run("a commit answered "+name+" for a partition may have landed", func(t *testing.T) {
			evs, _, _ := partitionErr(name, history.OK)
			mustHold(t, DurableCommits(evs, nil))
			mustHold(t, CommittedOffsetMonotonic(evs, nil))
			mustHold(t, FencedCommitsRejected(evs, nil))
		})
	}
	t.Run("a commit rejected for a partition with ILLEGAL_GENERATION did not land", func(t *testing.T) {
		evs, ok, d := partitionErr("ILLEGAL_GENERATION", history.OK)
		mustCite(t, DurableCommits(evs, nil), ok, d)
	})
	// A commit whose whole outcome is unknown keeps a partition that may have been written, and
	// drops one that was certainly rejected.
	t.Run("an unknown commit answered COORDINATOR_NOT_AVAILABLE for a partition may have landed", func(t *testing.T) {
		evs, _, _ := partitionErr("COORDINATOR_NOT_AVAILABLE", history.Info)
		mustHold(t, DurableCommits(evs, nil))
	})
	// A commit sent to a coordinator that was then paused: the client resent it after its
	// timeout, the member was fenced meanwhile and the resent request was answered
	// UNKNOWN_MEMBER_ID, but the first attempt was applied when the node resumed (4.4.0,
	// TestMatrix combined/consumer seed 7). The error answers the last attempt only.
	resentCommit := func(withFault bool) ([]history.Event, int64, int64) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		_, ok := h.commit("a", 1, history.OK, "", 0, 5)
		c := history.Commit{Member: "a", Protocol: h.proto, Epoch: 1, Offsets: []history.OffsetAt{off(0, 6)}}
		h.invoke("a", history.FCommit, c)
		pause := history.Fault{What: "node-pause", Target: []string{"node-1"}}
		if withFault {
			h.call("nemesis/0", history.FFaultStart, pause, history.OK, pause)
		}
		d := h.describe(nil, off(0, 6))
		if withFault {
			h.call("nemesis/0", history.FFaultStop, pause, history.OK, pause)
		}
		done := c
		done.PartitionErrors = []history.PartitionError{{Topic: "t", Partition: 0, Error: "UNKNOWN_MEMBER_ID"}}
		h.complete("a", history.FCommit, history.OK, done)
		return h.events(), ok, d
	}
	t.Run("a commit a fault overlapped and answered UNKNOWN_MEMBER_ID may have landed", func(t *testing.T) {
		evs, _, _ := resentCommit(true)
		mustHold(t, DurableCommits(evs, nil))
		mustHold(t, CommittedOffsetMonotonic(evs, nil))
	})
	t.Run("the same commit with no fault during it did not land", func(t *testing.T) {
		evs, ok, d := resentCommit(false)
		mustCite(t, DurableCommits(evs, nil), ok, d)
	})
	t.Run("an unknown commit rejected for a partition with UNKNOWN_MEMBER_ID did not land there", func(t *testing.T) {
		evs, ok, d := partitionErr("UNKNOWN_MEMBER_ID", history.Info)
		mustCite(t, DurableCommits(evs, nil), ok, d)
	})
}

func TestRecoveredStateMatchesLog(t *testing.T) {
	t.Parallel()
	obs := func() *history.Observations {
		return &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HistoryLen: 13, HasRecords: true, HasCommitted: true,
			Group: &history.GroupDescription{Protocol: history.ProtocolConsumer, GroupEpoch: 4, AssignmentEpoch: 4,
				Members: []history.MemberDescription{{MemberID: "x", MemberEpoch: 4, Assignment: history.TPs("t", 1, 0)}}},
			Committed: []history.OffsetAt{off(0, 10)}}}
	}
	replay := func(st GroupState) ReplayFunc {
		return func([]history.Record) (GroupState, error) { return st, nil }
	}
	good := GroupState{Protocol: history.ProtocolConsumer, GroupEpoch: 4, AssignmentEpoch: 4,
		Members: map[string]MemberState{"x": {MemberEpoch: 4, Assignment: history.TPs("t", 0, 1)}}, Offsets: map[history.TP]int64{{Topic: "t", Partition: 0}: 10}}
	mustHold(t, RecoveredStateMatchesLog(obs(), replay(good)))

	bad := good
	bad.Members = map[string]MemberState{"x": {MemberEpoch: 3, Assignment: history.TPs("t", 0)}, "y": {MemberEpoch: 4}}
	bad.Offsets = map[history.TP]int64{{Topic: "t", Partition: 0}: 9}
	v := RecoveredStateMatchesLog(obs(), replay(bad))
	mustCite(t, v, 12)
	var all []string
	for _, x := range v.Violations {
		all = append(all, x.Message)
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"member x epoch: replay 3, described 4", "member x assignment: replay [t-0], described [t-0 t-1]", "member y is in the replayed state", "offset of t-0: replay 9, described 10"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("violations lack %q:\n%s", want, joined)
		}
	}
	v = RecoveredStateMatchesLog(obs(), func([]history.Record) (GroupState, error) { return GroupState{}, errTest })
	if v.Holds || !strings.Contains(v.Violations[0].Message, "replaying") {
		t.Fatalf("replay error: %+v", v)
	}
	if v := RecoveredStateMatchesLog(obs(), nil); v.Skipped == "" || !v.Holds {
		t.Fatalf("no replay must skip: %+v", v)
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("unknown record type 99")

func TestHistoryWellFormed(t *testing.T) {
	t.Parallel()
	es := []history.Event{
		{Index: 0, Type: history.OK, Process: "a", F: history.FCommit, Value: history.Commit{}},
		{Index: 1, Type: history.Info, Process: "a", F: history.FConsume, Value: history.Produce{}},
	}
	v := HistoryWellFormed(es)
	if v.Holds || len(v.Violations) != 2 {
		t.Fatalf("got %+v", v)
	}
	mustCite(t, v, 1)
}

func TestRebalanceCost(t *testing.T) {
	t.Parallel()
	h := newClassicHist(t)
	h.assigned("a", 1, 0, 1) // t=1s
	h.wait(8 * time.Second)
	h.revoked("a", 1, 0, 1) // t=10s
	h.wait(2 * time.Second)
	h.assigned("a", 2, 0) // t=13s
	h.assigned("b", 2, 1) // t=14s
	c := RebalanceCost(h.events())
	pc := c.Protocols[history.ProtocolClassic]
	if pc == nil {
		t.Fatalf("no classic cost: %+v", c)
	}
	if got := pc.Partitions["t-0"]; got.Count != 1 || got.Max != 3*time.Second {
		t.Fatalf("t-0 stop = %+v, want one of 3s", got)
	}
	if got := pc.Partitions["t-1"]; got.Max != 4*time.Second {
		t.Fatalf("t-1 stop = %+v, want 4s", got)
	}
	if got := pc.Members["a"]; got.Count != 1 || got.Max != 3*time.Second {
		t.Fatalf("member a stop = %+v, want one of 3s", got)
	}
	if pc.PartitionStops.Count != 2 || pc.PartitionStops.Total != 7*time.Second || pc.PartitionStops.P50 != 3*time.Second || pc.PartitionStops.P99 != 4*time.Second {
		t.Fatalf("summary = %+v", pc.PartitionStops)
	}
	if len(pc.Stops) != 3 {
		t.Fatalf("stops = %+v", pc.Stops)
	}
}

func TestVerdictsRoundTrip(t *testing.T) {
	t.Parallel()
	vs := []Verdict{{Name: "A", Holds: true}, {Name: "B", Violations: []Violation{{Message: "x", EventIndexes: []int64{3}}}}}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(NewReport(vs, &Cost{Protocols: map[string]*ProtocolCost{}})); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadVerdicts(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Holds || len(rep.Verdicts) != 2 || rep.Verdicts[1].Violations[0].EventIndexes[0] != 3 {
		t.Fatalf("round trip: %+v", rep)
	}
}

// A classic coordinator answers JoinGroup from memory and writes the generation only with the
// group's record at SyncGroup. One that fails over in between (or a paused one that resumes after
// losing its __consumer_offsets partition and answers from state it never wrote) forgets the
// generation, and the next coordinator hands out the one from the log again (seen on 4.4.0 and
// 4.1.2 with a paused coordinator, with new member ids and with the same one). A generation that
// some member's SyncGroup confirmed going back is still a violation.
func TestEpochMonotonicClassicGenerationNeverWritten(t *testing.T) {
	t.Parallel()
	join := func(h *hist, m, id string, gen int32) (int64, int64) {
		inv := history.Join{Member: m, MemberID: id}
		done := inv
		done.Generation = gen
		return h.call(m+"/join", history.FJoin, inv, history.OK, done)
	}
	sync := func(h *hist, m, id string, gen int32, t history.Type, errName string) (int64, int64) {
		inv := history.Sync{Member: m, MemberID: id, Generation: gen}
		done := inv
		done.Error = errName
		if t == history.OK {
			done.Assignment = history.TPs("t", 0)
		}
		return h.call(m+"/join", history.FSync, inv, t, done)
	}
	// rejoin: m1 joins with id at gen and its SyncGroup is answered (t, errName); it returns the
	// SyncGroup's answer.
	rejoin := func(h *hist, id string, gen int32, t history.Type, errName string) int64 {
		join(h, "m1", id, gen)
		_, done := sync(h, "m1", id, gen, t, errName)
		return done
	}

	// Rejoined with a new id after UNKNOWN_MEMBER_ID: the coordinator had forgotten generation 5.
	h := newClassicHist(t)
	join(h, "m1", "m1-a", 5)
	join(h, "m1", "m1-b", 4)
	mustHoldNoting(t, EpochMonotonic(h.events(), nil), "not judged", "the unconfirmed generation")

	// The 4.4.0 history of TestMatrix/4.4.0/broker-faults/java/seed-7: a Java classic member got
	// generation 7 from the resumed coordinator, its SyncGroup was answered NOT_COORDINATOR, and the
	// new coordinator answered its rejoin (same member id) with generation 4 from the log.
	h = newClassicHist(t)
	rejoin(h, "m1-a", 4, history.OK, "")
	h.assigned("m1", 4, 0)
	rejoin(h, "m1-a", 7, history.Fail, "NOT_COORDINATOR")
	rejoin(h, "m1-a", 4, history.OK, "")
	h.assigned("m1", 4, 0)
	mustHoldNoting(t, EpochMonotonic(h.events(), nil), "excused", "the forgotten generation")

	// The 4.4.0 history of TestMatrix/4.4.0/broker-faults/mixed/seed-7: a paused coordinator
	// resumed, expired every member, turned the empty group into a new classic group it never
	// wrote, and answered a rejoin with generation 1 before it saw it had lost its partition; the
	// new coordinator went on from the log's generation 3.
	h = newClassicHist(t)
	rejoin(h, "m1-a", 3, history.OK, "")
	h.assigned("m1", 3, 0)
	rejoin(h, "m1-b", 1, history.Fail, "REBALANCE_IN_PROGRESS")
	rejoin(h, "m1-b", 4, history.OK, "")
	mustHold(t, EpochMonotonic(h.events(), nil))

	// The same lower generation confirmed by a SyncGroup is written: a violation.
	h = newClassicHist(t)
	a := rejoin(h, "m1-a", 3, history.OK, "")
	b := rejoin(h, "m1-b", 1, history.OK, "")
	mustCite(t, EpochMonotonic(h.events(), nil), a, b)

	// The same, but generation 7 was written: m1's own SyncGroup at it was answered.
	h = newClassicHist(t)
	a = rejoin(h, "m1-a", 7, history.OK, "")
	b = rejoin(h, "m1-a", 4, history.OK, "")
	mustCite(t, EpochMonotonic(h.events(), nil), a, b)

	// Another member's SyncGroup at 7 confirms the generation m1 only saw in JoinGroup.
	h = newClassicHist(t)
	_, a = join(h, "m1", "m1-a", 7)
	sync(h, "m2", "m2-a", 7, history.OK, "")
	b = rejoin(h, "m1-b", 4, history.OK, "")
	mustCite(t, EpochMonotonic(h.events(), nil), a, b)

	// A SyncGroup at 7 that succeeds only after the step back does not make it a violation: the
	// new coordinator reached generation 7 again on its own.
	h = newClassicHist(t)
	join(h, "m1", "m1-a", 7)
	join(h, "m1", "m1-a", 4)
	rejoin(h, "m1-a", 7, history.OK, "")
	mustHold(t, EpochMonotonic(h.events(), nil))
}

// mustCiteSecondOwner: first is assigned t-0 at epoch and revokes it, then (after between, when
// given) second is assigned it at the same epoch; ValidPartitionEpoch must cite both assignments.
func mustCiteSecondOwner(t *testing.T, h *hist, first, second string, epoch int32, between func()) {
	t.Helper()
	a := h.assigned(first, epoch, 0)
	h.revoked(first, epoch, 0)
	if between != nil {
		between()
	}
	b := h.assigned(second, epoch, 0)
	mustCite(t, ValidPartitionEpoch(h.events(), nil), a, b)
}

// mustHoldNoting fails the test unless v holds with a note that says note (about what).
func mustHoldNoting(t *testing.T, v Verdict, note, what string) {
	t.Helper()
	mustHold(t, v)
	if !hasNote(v, note) {
		t.Fatalf("%s is not noted (%q): %v", what, note, v.Notes)
	}
}

// TestDescribeUnstableNamesMembersBehind: a consumer group not Stable is
// said with its state and the members behind its assignment epoch; no
// group is said as such.
func TestDescribeUnstableNamesMembersBehind(t *testing.T) {
	t.Parallel()
	g := &history.GroupDescription{State: "Reconciling", Protocol: history.ProtocolConsumer, AssignmentEpoch: 5,
		Members: []history.MemberDescription{{MemberID: "x", MemberEpoch: 5}, {MemberID: "y", MemberEpoch: 4}}}
	if got, want := DescribeUnstable(g), "state Reconciling, assignment epoch 5, members behind: y at epoch 4"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := DescribeUnstable(nil); got != "no group" {
		t.Fatalf("nil: got %q", got)
	}
}
