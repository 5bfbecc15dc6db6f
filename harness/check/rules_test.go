package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// The tests in this file prove the checkers' side rules one at a time: each rule gets a history
// that fails because of that rule alone and, next to it, the closest history that must hold. They
// were written against `make mutate` (tools/mutate): a rule that can be removed without a test
// failing is a rule nobody relies on.

func (h *hist) invoke(proc, f string, v any) int64 {
	h.t.Helper()
	return h.add(history.Event{Type: history.Invoke, Process: proc, F: f, Value: v})
}

func (h *hist) complete(proc, f string, t history.Type, v any) int64 {
	h.t.Helper()
	return h.add(history.Event{Type: t, Process: proc, F: f, Value: v})
}

func (h *hist) commitOf(m string, epoch int32, p int32, o int64) history.Commit {
	return history.Commit{Member: m, Protocol: h.proto, Epoch: epoch, Offsets: []history.OffsetAt{off(p, o)}}
}

// overlappingCommits: a sends a commit of first and, before its answer, one of second (on process
// a/2), both of partition 0 at epoch 1; both are acknowledged, first's answer first.
func (h *hist) overlappingCommits(first, second int64) {
	h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, first))
	h.invoke("a/2", history.FCommit, h.commitOf("a", 1, 0, second))
	h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, first))
	h.complete("a/2", history.FCommit, history.OK, h.commitOf("a", 1, 0, second))
}

// mustFailOnce fails the test unless v fails with exactly one violation citing want and containing
// every fragment.
func mustFailOnce(t *testing.T, v Verdict, want []int64, fragments ...string) {
	t.Helper()
	x := mustCite(t, v, want...)
	if len(v.Violations) != 1 {
		t.Fatalf("%s: want exactly one violation, got %d: %+v", v.Name, len(v.Violations), v.Violations)
	}
	for _, f := range fragments {
		if !strings.Contains(x.Message, f) {
			t.Fatalf("%s: message %q lacks %q", v.Name, x.Message, f)
		}
	}
}

func notesOf(v Verdict) string { return strings.Join(v.Notes, "\n") }

func TestFencedCommitsRejectedRules(t *testing.T) {
	t.Parallel()
	// staleRejected: a owns t-0 at epoch 1, b takes it at epoch 2, then a's commit at epoch 1 is
	// rejected with errName.
	staleRejected := func(t *testing.T, proto, errName string) (Verdict, int64) {
		h := newHist(t)
		h.proto = proto
		h.takeover()
		_, fail := h.commit("a", 1, history.Fail, errName, 0, 4)
		return FencedCommitsRejected(h.events(), nil), fail
	}
	named := map[string][]string{
		history.ProtocolConsumer: {"UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "ILLEGAL_GENERATION", "STALE_MEMBER_EPOCH"},
		history.ProtocolClassic:  {"UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS"},
	}
	unjudged := []string{"COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION"}
	for proto, errs := range named {
		for _, e := range append(errs, unjudged...) {
			t.Run(proto+" stale commit rejected with "+e+" holds", func(t *testing.T) {
				v, _ := staleRejected(t, proto, e)
				mustHold(t, v)
			})
		}
	}
	wrong := map[string][]string{
		history.ProtocolConsumer: {"REBALANCE_IN_PROGRESS", "OFFSET_METADATA_TOO_LARGE"},
		history.ProtocolClassic:  {"STALE_MEMBER_EPOCH", "OFFSET_METADATA_TOO_LARGE"},
	}
	for proto, errs := range wrong {
		for _, e := range errs {
			t.Run(proto+" stale commit rejected with "+e+" fails", func(t *testing.T) {
				v, fail := staleRejected(t, proto, e)
				mustFailOnce(t, v, []int64{fail}, e, "not an error the "+proto+" protocol names")
			})
		}
	}
	t.Run("the protocol of a commit that does not say is the member's", func(t *testing.T) {
		h := newClassicHist(t)
		h.takeover()
		c := history.Commit{Member: "a", Epoch: 1, Offsets: []history.OffsetAt{off(0, 4)}}
		h.commitAs("a", c, history.Fail, "REBALANCE_IN_PROGRESS")
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a stale commit with an unknown outcome is not judged", func(t *testing.T) {
		h := newHist(t)
		h.takeover()
		h.commit("a", 1, history.Info, "", 0, 4) // timed out
		h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 5))
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("an admin commit at epoch 0 is not judged", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("admin", 0, history.OK, "", 1, 4)
		mustHoldNote(t, FencedCommitsRejected(h.events(), nil), "0 accepted and 0 rejected member commits judged; 1 admin commits")
	})
	t.Run("counts of judged commits", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 4)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.commit("a", 1, history.Fail, "COORDINATOR_NOT_AVAILABLE", 0, 6)
		mustHoldNote(t, FencedCommitsRejected(h.events(), nil), "2 accepted and 1 rejected member commits judged; 0 admin")
	})
	t.Run("a rejected commit that was not stale may carry any error", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.Fail, "OFFSET_METADATA_TOO_LARGE", 0, 4)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("an accepted zombie commit is one violation that says it was accepted", func(t *testing.T) {
		h := newHist(t)
		_, b := h.takeover()
		inv, ok := h.commit("a", 1, history.OK, "", 0, 4)
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{inv, ok, b}, "was accepted at event", "zombie")
	})
	t.Run("a request rejected with the wrong error is one violation however many partitions it covers", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.assigned("b", 2, 0, 1)
		c := history.Commit{Member: "a", Protocol: h.proto, Epoch: 1, Offsets: []history.OffsetAt{off(0, 4), off(1, 4)}}
		_, fail := h.commitAs("a", c, history.Fail, "OFFSET_METADATA_TOO_LARGE")
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{fail}, "OFFSET_METADATA_TOO_LARGE")
	})
	t.Run("a commit at an epoch the member reached only after it completed fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		inv, ok := h.commit("a", 2, history.OK, "", 0, 4)
		_, hb := h.hb("a", 2, history.OK) // a reaches (t-0, 2) only now
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{inv, ok, hb}, "after the commit completed")
	})
	t.Run("a commit at an epoch the member reached while it was in flight holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.invoke("a", history.FCommit, h.commitOf("a", 2, 0, 4))
		h.hb("a", 2, history.OK) // the heartbeat goroutine records epoch 2 meanwhile
		h.complete("a", history.FCommit, history.OK, h.commitOf("a", 2, 0, 4))
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a commit at an epoch whose assignment arrived while it was in flight holds", func(t *testing.T) {
		h := newHist(t)
		h.invoke("a", history.FCommit, h.commitOf("a", 2, 0, 4))
		h.assigned("a", 2, 0)
		h.complete("a", history.FCommit, history.OK, h.commitOf("a", 2, 0, 4))
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a member committing at its older epoch after it got the partition back is not a zombie", func(t *testing.T) {
		h := newHist(t)
		h.handover("a", 1, "a", 3, 0)
		h.commit("a", 1, history.OK, "", 0, 4)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a commit of a partition the member never owned fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		inv, ok := h.commit("a", 1, history.OK, "", 1, 4)
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{inv, ok}, "a never owned t-1 at epoch 1")
	})
	t.Run("a commit sent before the partition moved on is not a zombie", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 4))
		h.assigned("b", 2, 0)
		h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, 4))
		h.lost("a", 1, 0)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a partition handed to another member at the same epoch is not a zombie commit", func(t *testing.T) {
		// Two owners of one (partition, epoch) are ValidPartitionEpoch's violation; a commit by
		// the first owner is not stale by a newer epoch.
		h := newHist(t)
		h.assigned("a", 2, 0)
		h.assigned("b", 2, 0)
		h.commit("a", 2, history.OK, "", 0, 4)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
}

func TestEpochMonotonicRules(t *testing.T) {
	t.Parallel()
	t.Run("sentinels after an epoch hold", func(t *testing.T) {
		h := newHist(t)
		h.hb("a", 3, history.OK)
		leave := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: -1, ResultEpoch: -1}
		h.call("a/hb", history.FHeartbeat, leave, history.OK, leave)
		h.revoked("a", 0, 0)
		mustHoldNote(t, EpochMonotonic(h.events(), nil), "1 epochs checked over 1 sequences")
	})
	// Three heartbeats of a answered with these epochs, the last below the highest: one violation
	// that cites the answer of the second (the latest sighting of the highest) and of the third.
	for _, c := range []struct {
		name   string
		epochs [3]int32
		says   string
	}{
		{"an epoch seen again holds and the violation cites its latest sighting", [3]int32{3, 3, 2}, "member epoch of a went back from 3 (event 3) to 2 (event 5)"},
		{"a drop below the highest epoch fails after a rise", [3]int32{1, 5, 3}, "from 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHist(t)
			h.hb("a", c.epochs[0], history.OK)
			_, high := h.hb("a", c.epochs[1], history.OK)
			_, back := h.hb("a", c.epochs[2], history.OK)
			mustFailOnce(t, EpochMonotonic(h.events(), nil), []int64{high, back}, c.says)
		})
	}
	t.Run("lost reports an older epoch and holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 2, 0)
		h.hb("a", 3, history.OK)
		h.lost("a", 2, 0)
		mustHold(t, EpochMonotonic(h.events(), nil))
	})
	t.Run("an epoch reported with assigned going back fails", func(t *testing.T) {
		h := newHist(t)
		_, hb := h.hb("a", 3, history.OK)
		as := h.assigned("a", 2, 0)
		mustFailOnce(t, EpochMonotonic(h.events(), nil), []int64{hb, as}, "epoch of a went back from 3", "(assigned)")
	})
	t.Run("the epoch a consumer heartbeat sends is not judged, only the one it gets", func(t *testing.T) {
		h := newHist(t)
		h.hb("a", 3, history.OK)
		in := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: 1}
		out := in
		out.ResultEpoch = 3
		h.call("a/hb", history.FHeartbeat, in, history.OK, out)
		mustHold(t, EpochMonotonic(h.events(), nil))
	})
	t.Run("a failed consumer heartbeat is not judged, whatever epoch its response carries", func(t *testing.T) {
		h := newHist(t)
		h.hb("a", 5, history.OK)
		in := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: 5}
		out := in
		out.ResultEpoch, out.Error = 3, "FENCED_MEMBER_EPOCH"
		h.call("a/hb", history.FHeartbeat, in, history.Fail, out)
		mustHold(t, EpochMonotonic(h.events(), nil))
	})
	t.Run("classic heartbeats that failed or never completed are not judged", func(t *testing.T) {
		h := newClassicHist(t)
		h.hb("a", 5, history.OK)
		h.hb("a", 2, history.Fail)
		h.invoke("a/hb", history.FHeartbeat, history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: 1})
		mustHold(t, EpochMonotonic(h.events(), nil))
	})
	t.Run("a failed join or sync is not judged", func(t *testing.T) {
		h := newClassicHist(t)
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 7})
		h.call("a", history.FJoin, history.Join{Member: "a", Generation: 3}, history.Fail, history.Join{Member: "a", Generation: 3, Error: "UNKNOWN_MEMBER_ID"})
		h.call("a", history.FSync, history.Sync{Member: "a", Generation: 3}, history.Fail, history.Sync{Member: "a", Generation: 3, Error: "ILLEGAL_GENERATION"})
		mustHold(t, EpochMonotonic(h.events(), nil))
	})
	t.Run("a classic sync generation going back fails", func(t *testing.T) {
		h := newClassicHist(t)
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 7})
		_, j := h.call("a", history.FSync, history.Sync{Member: "a", Generation: 7}, history.OK, history.Sync{Member: "a", Generation: 7})
		_, s := h.call("a", history.FSync, history.Sync{Member: "a", Generation: 6}, history.OK, history.Sync{Member: "a", Generation: 6})
		mustFailOnce(t, EpochMonotonic(h.events(), nil), []int64{j, s}, "generation of a went back from 7")
	})
	g := func(gen, ge, ae, me int32) *history.GroupDescription {
		return &history.GroupDescription{Generation: gen, GroupEpoch: ge, AssignmentEpoch: ae, Members: []history.MemberDescription{{MemberID: "x", MemberEpoch: me}}}
	}
	for _, c := range []struct {
		name     string
		from, to *history.GroupDescription
		want     string
	}{
		{"generation", g(5, 0, 0, 0), g(4, 0, 0, 0), "group generation went back from 5"},
		{"group epoch", g(0, 5, 0, 0), g(0, 4, 0, 0), "group epoch went back from 5"},
		{"assignment epoch", g(0, 0, 5, 0), g(0, 0, 4, 0), "assignment epoch went back from 5"},
		{"described member epoch", g(0, 0, 0, 5), g(0, 0, 0, 4), "member epoch of x as described went back from 5"},
	} {
		t.Run("a described "+c.name+" going back fails", func(t *testing.T) {
			h := newHist(t)
			d1 := h.describe(c.from)
			d2 := h.describe(c.to)
			mustFailOnce(t, EpochMonotonic(h.events(), nil), []int64{d1, d2}, c.want)
		})
	}
	t.Run("a standalone describe info is judged, the unknown completion of a describe call is not", func(t *testing.T) {
		h := newHist(t)
		d := h.describe(g(0, 5, 0, 0))
		h.call("observer", history.FDescribe, history.Describe{}, history.Info, history.Describe{Group: g(0, 2, 0, 0)})
		mustHold(t, EpochMonotonic(h.events(), nil))
		i := h.info("observer", history.FDescribe, history.Describe{Group: g(0, 3, 0, 0)})
		mustFailOnce(t, EpochMonotonic(h.events(), nil), []int64{d, i}, "group epoch went back from 5")
	})
	t.Run("the unknown completion of the first call of the history is not a standalone describe", func(t *testing.T) {
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{}) // event 0
		h.call("observer/2", history.FDescribe, history.Describe{}, history.OK, history.Describe{Group: g(0, 5, 0, 0), Committed: []history.OffsetAt{off(0, 7)}, HasCommitted: true})
		h.complete("observer", history.FDescribe, history.Info, history.Describe{Group: g(0, 3, 0, 0), Committed: []history.OffsetAt{off(0, 3)}, HasCommitted: true})
		mustHold(t, EpochMonotonic(h.events(), nil))
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
	})
	t.Run("snapshots are judged where they were taken, the final one last", func(t *testing.T) {
		h := newHist(t)
		h.hb("a", 1, history.OK)
		h.hb("a", 2, history.OK)
		h.describe(g(0, 3, 0, 0)) // events 4 and 5
		rising := &history.Observations{
			Checkpoints: []history.Snapshot{{Label: "late", HistoryLen: 6, Group: g(0, 7, 0, 0)}, {Label: "early", HistoryLen: 2, Group: g(0, 2, 0, 0)}},
			Final:       history.Snapshot{Label: "final", Group: g(0, 8, 0, 0)},
		}
		mustHold(t, EpochMonotonic(h.events(), rising))
		falling := &history.Observations{
			Checkpoints: []history.Snapshot{{Label: "late", HistoryLen: 6, Group: g(0, 2, 0, 0)}, {Label: "early", HistoryLen: 2, Group: g(0, 3, 0, 0)}},
			Final:       history.Snapshot{Label: "final", Group: g(0, 3, 0, 0)},
		}
		mustFailOnce(t, EpochMonotonic(h.events(), falling), []int64{5}, "from 3 (event 5 (describe)) to 2 (snapshot late)")
	})
	t.Run("a snapshot taken while a describe was under way is concurrent with it", func(t *testing.T) {
		// The checkpoint began after event 2, the describe's invoke: either may have read first.
		h := newHist(t)
		h.hb("a", 1, history.OK)
		h.describe(g(0, 6, 0, 0)) // events 2 and 3; the checkpoint below begins before event 3
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: 3, HistoryEnd: 3, Group: g(0, 7, 0, 0)}}}
		mustHold(t, EpochMonotonic(h.events(), obs))
		// A describe sent after the checkpoint's read ended comes after it.
		d := h.describe(g(0, 6, 0, 0)) // events 4 and 5
		mustFailOnce(t, EpochMonotonic(h.events(), obs), []int64{2, d}, "from 7 (snapshot cp) to 6 (event 5 (describe))")
	})
	t.Run("a checkpoint newer than a later describe fails", func(t *testing.T) {
		// Before the snapshots were merged into the history walk, every snapshot was judged after
		// the last event, so this step back from a checkpoint to a later describe went unseen.
		h := newHist(t)
		h.hb("a", 1, history.OK)
		d := h.describe(g(0, 6, 0, 0)) // events 2 and 3
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "after restart", HistoryLen: 2, HistoryEnd: 2, Group: g(0, 7, 0, 0)}}}
		mustFailOnce(t, EpochMonotonic(h.events(), obs), []int64{1, d}, "group epoch went back from 7 (snapshot after restart) to 6 (event 3 (describe))")
		// Without HistoryEnd the checkpoint's read may have lasted past the describe's.
		obs.Checkpoints[0].HistoryEnd = 0
		mustHold(t, EpochMonotonic(h.events(), obs))
	})
}

func TestCommittedOffsetMonotonicRules(t *testing.T) {
	t.Parallel()
	t.Run("concurrent commits may complete in either order", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.overlappingCommits(7, 5)
		mustHoldNote(t, CommittedOffsetMonotonic(h.events(), nil), "0 ordered commit pairs")
	})
	t.Run("a commit is judged against the highest one completed before it", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 9)
		_, nine := h.commit("a", 1, history.OK, "", 0, 9) // the latest of equal offsets is cited
		inv5, five := h.commit("a", 1, history.OK, "", 0, 5)
		inv7, seven := h.commit("a", 1, history.OK, "", 0, 7)
		v := CommittedOffsetMonotonic(h.events(), nil)
		if v.Holds || len(v.Violations) != 2 {
			t.Fatalf("want 9 → 5 and 9 → 7, got %+v", v.Violations)
		}
		for i, want := range [][]int64{{nine, inv5, five}, {nine, inv7, seven}} {
			if got := v.Violations[i].EventIndexes; !slices.Equal(got, want) {
				t.Fatalf("violation %d cites %v, want %v: %s", i, got, want, v.Violations[i].Message)
			}
		}
	})
	t.Run("the first commit of the history stays the baseline while it is the highest", func(t *testing.T) {
		h := newHist(t)
		_, nine := h.commit("a", 1, history.OK, "", 0, 9) // commit 0
		h.commit("a", 1, history.OK, "", 0, 5)
		inv, seven := h.commit("a", 1, history.OK, "", 0, 7)
		v := CommittedOffsetMonotonic(h.events(), nil)
		if len(v.Violations) != 2 {
			t.Fatalf("want 9 → 5 and 9 → 7, got %+v", v.Violations)
		}
		mustCite(t, v, nine, inv, seven)
	})
	t.Run("after a reset the offsets must rise again", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 7)
		h.reset("admin", 0, 1)
		_, three := h.commit("a", 1, history.OK, "", 0, 3)
		inv, two := h.commit("a", 1, history.OK, "", 0, 2)
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{three, inv, two}, "went back from 3")
	})
	t.Run("a reset that failed excuses nothing", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		_, seven := h.commit("a", 1, history.OK, "", 0, 7)
		r := history.Commit{Member: "admin", Epoch: -1, Reset: true, Offsets: []history.OffsetAt{off(0, 1)}}
		h.call("admin", history.FCommit, r, history.Fail, r)
		inv, two := h.commit("a", 1, history.OK, "", 0, 2)
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{seven, inv, two}, "went back from 7")
	})
	t.Run("a reset that may have applied excuses a drop", func(t *testing.T) {
		for _, outcome := range []history.Type{history.Info, ""} {
			h := newHist(t)
			h.assigned("a", 1, 0)
			h.commit("a", 1, history.OK, "", 0, 7)
			h.describe(nil, off(0, 7))
			r := history.Commit{Member: "admin", Epoch: -1, Reset: true, Offsets: []history.OffsetAt{off(0, 1)}}
			h.invoke("admin", history.FCommit, r)
			if outcome != "" {
				h.complete("admin", history.FCommit, outcome, r)
			}
			h.commit("a", 1, history.OK, "", 0, 2)
			h.describe(nil, off(0, 2))
			mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
		}
	})
	t.Run("a standalone reset info excuses only drops across its own event", func(t *testing.T) {
		h := newHist(t)
		h.info("admin", history.FCommit, history.Commit{Member: "admin", Epoch: -1, Reset: true, Offsets: []history.OffsetAt{off(0, 1)}}) // event 0
		h.assigned("a", 1, 0)
		_, seven := h.commit("a", 1, history.OK, "", 0, 7)
		inv, two := h.commit("a", 1, history.OK, "", 0, 2)
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{seven, inv, two}, "went back from 7")
	})
	t.Run("an observer read of no offset does not count, a read of offset 0 does", func(t *testing.T) {
		h := newHist(t)
		h.describe(nil, off(0, 5))
		h.describe(nil, off(0, -1))
		h.describe(nil, off(0, 5))
		h.describe(nil) // committed offsets not fetched
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
		five := h.describe(nil, off(0, 5))
		zero := h.describe(nil, off(0, 0))
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{five, zero}, "went back from 5")
	})
	t.Run("snapshots at the same place keep their order, the final one last", func(t *testing.T) {
		h := newHist(t)
		h.describe(nil, off(0, 3))
		obs := &history.Observations{
			Checkpoints: []history.Snapshot{{Label: "cp", HasCommitted: true, Committed: []history.OffsetAt{off(0, 7)}}},
			Final:       history.Snapshot{Label: "final", HasCommitted: true, Committed: []history.OffsetAt{off(0, 5)}},
		}
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), nil, "from 7 (snapshot cp) to 5 (snapshot final)")
	})
	t.Run("a describe not marked as fetched is not a read", func(t *testing.T) {
		h := newHist(t)
		h.describe(nil, off(0, 7))
		h.call("observer", history.FDescribe, history.Describe{}, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 3)}})
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
	})
	t.Run("a reset that landed while the earlier read was in flight excuses the drop", func(t *testing.T) {
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{}) // event 0
		h.reset("admin", 0, 1)
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 7)}, HasCommitted: true})
		h.describe(nil, off(0, 1))
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
	})
	t.Run("a reset that completed just after the earlier snapshot excuses the drop", func(t *testing.T) {
		h := newHist(t)
		r := history.Commit{Member: "admin", Epoch: -1, Reset: true, Offsets: []history.OffsetAt{off(0, 1)}}
		h.invoke("admin", history.FCommit, r)               // event 0
		h.complete("admin", history.FCommit, history.OK, r) // event 1, just after the checkpoint
		obs := &history.Observations{
			Checkpoints: []history.Snapshot{{Label: "before", HistoryLen: 1, HasCommitted: true, Committed: []history.OffsetAt{off(0, 7)}}},
			Final:       history.Snapshot{Label: "final", HasCommitted: true, Committed: []history.OffsetAt{off(0, 1)}},
		}
		mustHold(t, CommittedOffsetMonotonic(h.events(), obs))
	})
	t.Run("a reset sent after the later read excuses nothing", func(t *testing.T) {
		h := newHist(t)
		d := h.describe(nil, off(0, 7)) // events 0 and 1
		h.reset("admin", 0, 1)          // events 2 and 3, after the checkpoint
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "checkpoint", HistoryLen: 2, HistoryEnd: 2, HasCommitted: true, Committed: []history.OffsetAt{off(0, 1)}}}}
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), []int64{d}, "went back from 7")
		// A checkpoint that does not say when its read ended may have read after the reset landed:
		// the two are concurrent.
		obs.Checkpoints[0].HistoryEnd = 0
		mustHold(t, CommittedOffsetMonotonic(h.events(), obs))
	})
	t.Run("snapshots are observer reads; one without committed offsets is not", func(t *testing.T) {
		h := newHist(t)
		d := h.describe(nil, off(0, 7))
		h.info("nemesis", history.FFaultStop, history.Fault{What: "restart", Target: []string{"broker-1"}})
		unread := &history.Observations{Checkpoints: []history.Snapshot{{Label: "after restart", HistoryLen: 3, Committed: []history.OffsetAt{off(0, 3)}}}}
		mustHold(t, CommittedOffsetMonotonic(h.events(), unread))
		read := &history.Observations{Checkpoints: []history.Snapshot{{Label: "after restart", HistoryLen: 3, HasCommitted: true, Committed: []history.OffsetAt{off(0, 3)}}}}
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), read), []int64{d}, "from 7 (describe at event 1) to 3 (snapshot after restart)")
	})
	rec := func(typ int16, group string, o int64) history.Record {
		return history.Record{Offset: o, KeyType: typ, Key: map[string]any{"group": group, "topic": "t", "partition": 0}, Value: map[string]any{"offset": o}}
	}
	tomb := func() history.Record {
		return history.Record{Offset: 99, KeyType: history.RecordOffsetCommit, Key: map[string]any{"group": "g", "topic": "t", "partition": 0}}
	}
	records := func(rs ...history.Record) *history.Observations {
		return &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HasRecords: true, Records: rs}}
	}
	t.Run("a tombstone starts the records over", func(t *testing.T) {
		mustHoldNote(t, CommittedOffsetMonotonic(nil, records(rec(1, "g", 30), tomb(), rec(1, "g", 10))), "2 OffsetCommit records checked")
	})
	t.Run("records of another group are not judged", func(t *testing.T) {
		mustHold(t, CommittedOffsetMonotonic(nil, records(rec(1, "other", 30), rec(1, "other", 10))))
	})
	t.Run("legacy OffsetCommit records are judged", func(t *testing.T) {
		v := CommittedOffsetMonotonic(nil, records(rec(0, "g", 30), rec(0, "g", 10)))
		mustFailSaying(t, v, "go back from 30 to 10")
	})
	t.Run("only OffsetCommit records with an offset are judged", func(t *testing.T) {
		other := func(o int64) history.Record { return rec(history.RecordGroupMetadata, "g", o) }
		noTopic := func(o int64) history.Record {
			r := rec(1, "g", o)
			delete(r.Key, "topic")
			return r
		}
		noOffset := rec(1, "g", 0)
		noOffset.Value = map[string]any{"metadata": ""}
		mustHold(t, CommittedOffsetMonotonic(nil, records(rec(1, "g", 30), other(20), other(10), noTopic(20), noTopic(10), noOffset)))
	})
	t.Run("records going back to a reset's offset hold", func(t *testing.T) {
		h := newHist(t)
		h.reset("admin", 0, 10)
		mustHold(t, CommittedOffsetMonotonic(h.events(), records(rec(1, "g", 30), rec(1, "g", 10))))
		v := CommittedOffsetMonotonic(h.events(), records(rec(1, "g", 30), rec(1, "g", 20)))
		mustFailSaying(t, v, "go back from 30 to 20")
	})
}

func TestBoundedDuplicatesRules(t *testing.T) {
	t.Parallel()
	t.Run("a member that does not own the partition reading a record twice fails", func(t *testing.T) {
		h := newHist(t)
		c1 := h.consume("a", 1, 0, 0)
		c2 := h.consume("a", 1, 0, 0)
		v := BoundedDuplicates(h.events(), nil)
		mustFailOnce(t, v, []int64{c1, c2}, "which did not own the partition")
		mustNote(t, v, "2 records were consumed by members that did not own")
	})
	t.Run("a duplicate within the first ownership says so", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		c1 := h.consume("a", 1, 0, 0)
		c2 := h.consume("a", 1, 0, 0)
		mustFailOnce(t, BoundedDuplicates(h.events(), nil), []int64{c1, c2}, "again at event 2 within one ownership by a, with no rebalance between")
	})
	// handover: a reads 5 and commits 6 (acknowledged before b's ownership begins), then opt runs,
	// then b takes over and reads 5 again.
	handover := func(t *testing.T, opt func(h *hist)) (Verdict, int64) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 5)
		h.commit("a", 1, history.OK, "", 0, 6)
		opt(h)
		h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		c2 := h.consume("b", 2, 0, 5)
		return BoundedDuplicates(h.events(), nil), c2
	}
	t.Run("a reset below the record explains the duplicate", func(t *testing.T) {
		v, _ := handover(t, func(h *hist) { h.reset("admin", 0, 2) })
		mustHold(t, v)
	})
	t.Run("a lower commit after a higher one does not lower the floor", func(t *testing.T) {
		v, c2 := handover(t, func(h *hist) { h.commit("a", 1, history.OK, "", 0, 3) })
		mustFailOnce(t, v, []int64{c2}, "although offset 6 was committed")
	})
	t.Run("a commit acknowledged after the new ownership began does not count", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 5)
		h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 6))
		h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, 6))
		h.consume("b", 2, 0, 5)
		v := BoundedDuplicates(h.events(), nil)
		mustHold(t, v)
		if !strings.Contains(notesOf(v), "1 duplicate consumptions; at most 1 of them within one ownership") || strings.Contains(notesOf(v), "did not own") {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	t.Run("the floor is per partition", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.consume("a", 1, 1, 5)
		h.commit("a", 1, history.OK, "", 0, 6)
		h.revoked("a", 1, 0, 1)
		h.assigned("b", 2, 0, 1)
		h.consume("b", 2, 1, 5)
		mustHold(t, BoundedDuplicates(h.events(), nil))
	})
}

func TestRecoveredStateMatchesLogRules(t *testing.T) {
	t.Parallel()
	replay := func(st GroupState) ReplayFunc {
		return func([]history.Record) (GroupState, error) { return st, nil }
	}
	snap := func(g *history.GroupDescription, committed ...history.OffsetAt) *history.Observations {
		return &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HistoryLen: 8, HasRecords: true, Group: g, Committed: committed, HasCommitted: committed != nil}}
	}
	t.Run("no observations is skipped", func(t *testing.T) {
		if v := RecoveredStateMatchesLog(nil, replay(GroupState{})); v.Skipped == "" || !v.Holds {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("a snapshot whose replay fails is one violation, not compared", func(t *testing.T) {
		fails := func([]history.Record) (GroupState, error) { return GroupState{}, errTest }
		mustFailOnce(t, RecoveredStateMatchesLog(snap(&history.GroupDescription{GroupEpoch: 5}, off(0, 3)), fails), []int64{7}, "snapshot final: replaying 0 records failed: unknown record type 99")
	})
	t.Run("a snapshot without records is not compared", func(t *testing.T) {
		obs := snap(&history.GroupDescription{GroupEpoch: 5})
		obs.Final.HasRecords = false
		v := RecoveredStateMatchesLog(obs, replay(GroupState{GroupEpoch: 4}))
		mustHold(t, v)
		if !strings.Contains(notesOf(v), "vacuous") || !strings.Contains(notesOf(v), "0 snapshots replayed") {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	t.Run("every snapshot with records is compared", func(t *testing.T) {
		obs := snap(&history.GroupDescription{GroupEpoch: 4})
		obs.Checkpoints = []history.Snapshot{{Label: "after restart", HistoryLen: 3, HasRecords: true, Group: &history.GroupDescription{GroupEpoch: 5}}}
		v := RecoveredStateMatchesLog(obs, replay(GroupState{GroupEpoch: 4}))
		mustFailOnce(t, v, []int64{2}, "snapshot after restart: group epoch: replay 4, described 5")
		if strings.Contains(notesOf(v), "vacuous") || !strings.Contains(notesOf(v), "2 snapshots replayed") {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	for _, c := range []struct {
		name  string
		st    GroupState
		g     *history.GroupDescription
		wants string // "" means it must hold
	}{
		{"protocols differ", GroupState{Protocol: "classic"}, &history.GroupDescription{Protocol: "consumer"}, "replay says a classic group, the broker describes a consumer group"},
		{"replay names no protocol", GroupState{}, &history.GroupDescription{Protocol: "consumer"}, ""},
		{"description names no protocol", GroupState{Protocol: "classic"}, &history.GroupDescription{}, ""},
		{"generation differs", GroupState{Generation: 3}, &history.GroupDescription{Generation: 4}, "generation: replay 3, described 4"},
		{"assignment epoch differs", GroupState{AssignmentEpoch: 3}, &history.GroupDescription{AssignmentEpoch: 4}, "assignment epoch: replay 3, described 4"},
		{"numbers not described are not compared", GroupState{Generation: 3, GroupEpoch: 3, AssignmentEpoch: 3}, &history.GroupDescription{}, ""},
		{"a described member missing from the replay", GroupState{}, &history.GroupDescription{Members: []history.MemberDescription{{MemberID: "x", MemberEpoch: 2}}}, "member x is described (epoch 2) but not in the replayed state"},
		{"members that agree", GroupState{Members: map[string]MemberState{"x": {MemberEpoch: 2, Assignment: history.TPs("t", 0)}}}, &history.GroupDescription{Members: []history.MemberDescription{{MemberID: "x", MemberEpoch: 2, Assignment: history.TPs("t", 0)}}}, ""},
		{"an assignment that differs", GroupState{Members: map[string]MemberState{"x": {MemberEpoch: 2, Assignment: history.TPs("t", 0)}}}, &history.GroupDescription{Members: []history.MemberDescription{{MemberID: "x", MemberEpoch: 2, Assignment: history.TPs("t", 1)}}}, "member x assignment: replay [t-0], described [t-1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := RecoveredStateMatchesLog(snap(c.g), replay(c.st))
			if c.wants == "" {
				mustHold(t, v)
				return
			}
			mustFailOnce(t, v, []int64{7}, "snapshot final: "+c.wants)
		})
	}
	t.Run("offsets are compared only when they were read", func(t *testing.T) {
		st := GroupState{Offsets: map[history.TP]int64{{Topic: "t", Partition: 0}: 5}}
		mustHold(t, RecoveredStateMatchesLog(snap(nil), replay(st)))
		mustFailOnce(t, RecoveredStateMatchesLog(snap(nil, off(1, -1)), replay(st)), []int64{7}, "offset of t-0: replay 5, none described")
		mustFailOnce(t, RecoveredStateMatchesLog(snap(nil, off(0, 5), off(1, 3)), replay(st)), []int64{7}, "offset of t-1: described 3, none in the replayed state")
		mustHold(t, RecoveredStateMatchesLog(snap(nil, off(0, 5), off(1, -1)), replay(st)))
		mustFailOnce(t, RecoveredStateMatchesLog(snap(nil, off(0, 0)), replay(st)), []int64{7}, "offset of t-0: replay 5, described 0")
	})
}

func TestNoDoubleOwnershipRules(t *testing.T) {
	t.Parallel()
	t.Run("a member that left was not fenced", func(t *testing.T) {
		h := newHist(t)
		a, b := h.takeover()
		h.info("a", history.FLeft, history.Membership{Member: "a", Epoch: 1})
		mustFailOnce(t, NoDoubleOwnership(h.events(), nil), []int64{a, b}, "a was not fenced (its ownership revoked)",
			"a (from event 0, epoch 1, revoked at event 2)", "b (from event 1, epoch 2, still owned at the end)")
	})
	t.Run("a member whose session expired was fenced", func(t *testing.T) {
		h := newHist(t)
		h.takeover()
		h.info("a", history.FSessionExpired, history.Membership{Member: "a", Epoch: 1})
		mustHoldNote(t, NoDoubleOwnership(h.events(), nil), "2 ownership intervals over 1 partitions; 1 overlaps, 1 excused")
	})
	t.Run("the later owner may be the fenced one", func(t *testing.T) {
		h := newHist(t)
		h.takeover()
		h.lost("b", 2, 0)
		h.revoked("a", 3, 0)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
	})
	t.Run("the fenced side's calls outside the overlap do not count", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.hb("a", 1, history.OK)               // before b's ownership began
		h.commit("a", 1, history.OK, "", 0, 3) // before too
		h.assigned("b", 2, 0)                  // the overlap begins
		h.commit("a", 1, history.OK, "", 1, 3) // another partition
		h.commit("b", 2, history.OK, "", 0, 4) // the other member's
		h.commit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 5)
		h.lost("a", 1, 0)        // the overlap ends
		h.hb("a", 3, history.OK) // after it
		h.commit("a", 3, history.OK, "", 0, 6)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
	})
	t.Run("an overlap with an ownership that ended before is none", func(t *testing.T) {
		h := newHist(t)
		h.handover("a", 1, "c", 2, 0)
		h.assigned("b", 3, 0)
		v := NoDoubleOwnership(h.events(), nil)
		if v.Holds || len(v.Violations) != 1 || !strings.Contains(v.Violations[0].Message, "owned by c") {
			t.Fatalf("want only c and b, got %+v", v.Violations)
		}
	})
}

func TestValidPartitionEpochRules(t *testing.T) {
	t.Parallel()
	t.Run("ownership at no known epoch is not a pair", func(t *testing.T) {
		h := newHist(t)
		h.handover("a", 0, "b", 0, 0)
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
	})
	t.Run("the same second owner of one pair is one violation, another is a second", func(t *testing.T) {
		h := newHist(t)
		a, b := h.handover("a", 3, "b", 3, 0)
		h.revoked("b", 3, 0)
		h.assigned("b", 3, 0)
		v := ValidPartitionEpoch(h.events(), nil)
		mustFailOnce(t, v, []int64{a, b}, "partition t-0 at epoch 3 owned by a")
		h.revoked("b", 3, 0)
		c := h.assigned("c", 3, 0)
		v = ValidPartitionEpoch(h.events(), nil)
		if len(v.Violations) != 2 || !strings.Contains(v.Violations[0].Message, "by b") || !strings.Contains(v.Violations[1].Message, "by c") {
			t.Fatalf("want b then c, got %+v", v.Violations)
		}
		mustCite(t, v, a, c)
	})
	t.Run("a member that owns a partition again at its own epoch is one owner", func(t *testing.T) {
		h := newHist(t)
		h.handover("a", 3, "a", 3, 0)
		h.hb("a", 3, history.OK)
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
	})
}

func TestNoLostRecordsRules(t *testing.T) {
	t.Parallel()
	t.Run("a record acknowledged at offset 0 is matched by its offset", func(t *testing.T) {
		h := newHist(t)
		h.produce(0, 0)
		h.info("a", history.FConsume, history.Consume{Member: "a", Topic: "t", Partition: 0, Offset: 0, Seq: 777})
		mustHold(t, NoLostRecords(h.events(), nil))
	})
	t.Run("a record acknowledged without an offset is matched by its seq", func(t *testing.T) {
		h := newHist(t)
		in := history.Produce{Topic: "t", Partition: 0, Seq: 5, Offset: -1}
		out := in
		out.Acked = true
		_, ok := h.call("p0", history.FProduce, in, history.OK, out)
		v := NoLostRecords(h.events(), nil)
		mustFailOnce(t, v, []int64{ok}, "seq 5")
		mustNote(t, v, "no \"final\" phase marker")
		h.info("a", history.FConsume, history.Consume{Member: "a", Topic: "t", Partition: 3, Offset: 40, Seq: 5})
		v = NoLostRecords(h.events(), nil)
		mustHold(t, v)
		if strings.Contains(notesOf(v), "phase marker") {
			t.Fatalf("nothing lost, yet notes %v", v.Notes)
		}
	})
	t.Run("a final marker at the very start still counts as one", func(t *testing.T) {
		h := newHist(t)
		h.phase(history.PhaseFinal)
		h.produce(0, 0)
		v := NoLostRecords(h.events(), nil)
		if v.Holds || strings.Contains(notesOf(v), "phase marker") {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("no acknowledged record is nothing to judge", func(t *testing.T) {
		h := newHist(t)
		h.call("p0", history.FProduce, history.Produce{Topic: "t", Seq: 1, Offset: -1}, history.Fail, history.Produce{Topic: "t", Seq: 1, Offset: -1})
		v := NoLostRecords(h.events(), nil)
		mustJudgeNothing(t, v, "no record was produced in the history")
		mustNote(t, v, "vacuous")
	})
}

func TestFactsRules(t *testing.T) {
	t.Parallel()
	t.Run("a partition that failed inside an accepted commit is not committed", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 9)
		c := history.Commit{Member: "a", Protocol: h.proto, Epoch: 1, Offsets: []history.OffsetAt{off(0, 2), off(1, 2)}}
		done := c
		done.PartitionErrors = []history.PartitionError{{Topic: "t", Partition: 0, Error: "OFFSET_METADATA_TOO_LARGE"}, {Topic: "t", Partition: 1, Error: "OFFSET_METADATA_TOO_LARGE"}}
		h.call("a", history.FCommit, c, history.OK, done)
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a completion that restates nothing keeps the invoke's offsets and epoch", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 9)
		inv, ok := h.call("a", history.FCommit, h.commitOf("a", 1, 0, 2), history.OK, history.Commit{})
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{inv, ok}, "went back from 9 (commit by a acknowledged at event 2) to 2")
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a commit invoked at event 0 pairs with its completion", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 5) // events 0 and 1
		_, eight := h.commit("a", 1, history.OK, "", 0, 8)
		d := h.describe(nil, off(0, 5))
		mustFailOnce(t, DurableCommits(h.events(), nil), []int64{eight, d}, "shows t-0 at offset 5")
	})
	t.Run("a completion's protocol is the commit's", func(t *testing.T) {
		h := newHist(t)
		h.takeover()
		c := h.commitOf("a", 1, 0, 4)
		done := c
		done.Protocol, done.Error = history.ProtocolClassic, "REBALANCE_IN_PROGRESS"
		h.call("a", history.FCommit, c, history.Fail, done)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a completion's offsets are what was committed", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 9)
		h.call("a", history.FCommit, h.commitOf("a", 1, 0, 2), history.OK, h.commitOf("a", 1, 0, 9))
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
	})
	t.Run("what a member said about its protocol wins over its commits", func(t *testing.T) {
		h := newClassicHist(t)
		h.takeover()
		h.commit("a", 1, history.Fail, "ILLEGAL_GENERATION", 0, 3) // classic, says so
		odd := history.Commit{Member: "a", Protocol: history.ProtocolConsumer, Epoch: 1, Offsets: []history.OffsetAt{off(0, 4)}}
		h.commitAs("a", odd, history.Fail, "STALE_MEMBER_EPOCH")
		plain := history.Commit{Member: "a", Epoch: 1, Offsets: []history.OffsetAt{off(0, 5)}}
		h.commitAs("a", plain, history.Fail, "REBALANCE_IN_PROGRESS")
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a completion's own epoch and reset mark are what count", func(t *testing.T) {
		h := newHist(t)
		h.takeover()
		c := h.commitOf("a", 1, 0, 4)
		done := c
		done.Epoch = 2 // the coordinator answered for epoch 2, which b holds
		inv, ok := h.call("a", history.FCommit, c, history.OK, done)
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{inv, ok}, "belonged to b")
		h2 := newHist(t)
		h2.commit("a", 1, history.OK, "", 0, 9)
		r := h2.commitOf("a", 1, 0, 2)
		doneR := r
		doneR.Reset = true
		h2.call("a", history.FCommit, r, history.OK, doneR)
		mustHold(t, CommittedOffsetMonotonic(h2.events(), nil))
	})
	t.Run("a member's protocol comes from its commits when nothing else says", func(t *testing.T) {
		h := newClassicHist(t)
		h.info("a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)})
		h.info("b", history.FAssigned, history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 0)})
		c := history.Commit{Member: "a", Protocol: history.ProtocolClassic, Epoch: 1, Offsets: []history.OffsetAt{off(0, 1)}}
		h.call("a", history.FCommit, c, history.OK, c)
		c2 := c
		c2.Protocol = ""
		h.commitAs("a", c2, history.Fail, "REBALANCE_IN_PROGRESS")
		v := FencedCommitsRejected(h.events(), nil)
		if len(v.Violations) != 1 || !strings.Contains(v.Violations[0].Message, "was accepted") {
			t.Fatalf("only the accepted zombie commit must fail, got %+v", v.Violations)
		}
	})
}

func TestDurableCommitsRules(t *testing.T) {
	t.Parallel()
	t.Run("a value only a failed commit wrote is lost", func(t *testing.T) {
		h := newHist(t)
		_, ok := h.commit("a", 1, history.OK, "", 0, 5)
		h.commit("a", 1, history.Fail, "NOT_COORDINATOR", 0, 8)
		d := h.describe(nil, off(0, 8))
		mustFailOnce(t, DurableCommits(h.events(), nil), []int64{ok, d}, "shows t-0 at offset 8, but the latest acknowledged commit before it was offset 5")
	})
	t.Run("a value written by a commit sent after the read is lost", func(t *testing.T) {
		h := newHist(t)
		_, ok := h.commit("a", 1, history.OK, "", 0, 5)
		h.invoke("observer", history.FDescribe, history.Describe{})
		d := h.complete("observer", history.FDescribe, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 8)}, HasCommitted: true})
		h.commit("a", 1, history.Info, "", 0, 8)
		mustFailOnce(t, DurableCommits(h.events(), nil), []int64{ok, d}, "at offset 8")
	})
	t.Run("a commit acknowledged or unknown while the read was going on explains it", func(t *testing.T) {
		for _, outcome := range []history.Type{history.OK, history.Info} {
			h := newHist(t)
			h.commit("a", 1, history.OK, "", 0, 5)
			h.invoke("observer", history.FDescribe, history.Describe{})
			h.commit("a", 1, outcome, "", 0, 8)
			h.complete("observer", history.FDescribe, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 8)}, HasCommitted: true})
			mustHold(t, DurableCommits(h.events(), nil))
		}
	})
	t.Run("a describe may miss a commit acknowledged while it was in flight", func(t *testing.T) {
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{}) // event 0
		h.commit("a", 1, history.OK, "", 0, 5)
		h.complete("observer", history.FDescribe, history.OK, history.Describe{HasCommitted: true})
		h.invoke("observer", history.FDescribe, history.Describe{})
		h.commit("a", 1, history.OK, "", 0, 8)
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 5)}, HasCommitted: true})
		mustHold(t, DurableCommits(h.events(), nil))
	})
	t.Run("a timed-out commit may land after later acknowledged ones", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.Info, "", 0, 8) // timed out: it may still be applied
		h.commit("a", 1, history.OK, "", 0, 5)
		h.describe(nil, off(0, 8))
		mustHold(t, DurableCommits(h.events(), nil))
	})
	t.Run("an acknowledged commit superseded by a later acknowledged one is lost", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 8)
		_, five := h.commit("a", 1, history.OK, "", 0, 5) // sent after 8 completed: it supersedes it
		d := h.describe(nil, off(0, 8))
		mustFailOnce(t, DurableCommits(h.events(), nil), []int64{five, d}, "the latest acknowledged commit before it was offset 5")
	})
	t.Run("of two concurrent commits either may be the one that stays", func(t *testing.T) {
		for _, shown := range []int64{5, 8} {
			h := newHist(t)
			h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 5))
			h.invoke("a/2", history.FCommit, h.commitOf("a", 1, 0, 8))
			h.complete("a/2", history.FCommit, history.OK, h.commitOf("a", 1, 0, 8))
			h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, 5))
			h.describe(nil, off(0, shown))
			mustHold(t, DurableCommits(h.events(), nil))
		}
	})
	t.Run("a read of no committed offset after an acknowledged commit is a loss", func(t *testing.T) {
		h := newHist(t)
		_, ok := h.commit("a", 1, history.OK, "", 0, 5)
		d := h.describe(nil, off(0, -1))
		mustFailOnce(t, DurableCommits(h.events(), nil), []int64{ok, d}, "shows no committed offset for t-0")
	})
	t.Run("reads that were not fetched or cannot be placed are not judged, and the notes say so", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.call("observer", history.FDescribe, history.Describe{}, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 1)}})
		obs := &history.Observations{
			Checkpoints: []history.Snapshot{
				{Label: "unplaced", HasCommitted: true, Committed: []history.OffsetAt{off(0, 1)}},
				{Label: "not fetched", HistoryLen: 3, Committed: []history.OffsetAt{off(0, 1)}},
			},
			Final: history.Snapshot{Label: "final", Committed: []history.OffsetAt{off(0, 1)}},
		}
		v := DurableCommits(h.events(), obs)
		mustHold(t, v)
		for _, want := range []string{"the final observation has no committed offsets", "1 checkpoints without history_len were not checked", "0 reads of committed offsets checked"} {
			if !strings.Contains(notesOf(v), want) {
				t.Fatalf("notes %v lack %q", v.Notes, want)
			}
		}
		mustNote(t, DurableCommits(h.events(), nil), "no observations")
	})
	t.Run("a checkpoint is judged against the commits acknowledged before it", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 5) // events 0 and 1
		h.commit("a", 1, history.OK, "", 0, 8) // events 2 and 3
		at := func(n int64, o int64) *history.Observations {
			return &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: n, HasCommitted: true, Committed: []history.OffsetAt{off(0, o)}}}}
		}
		mustHold(t, DurableCommits(h.events(), at(2, 5)))
		mustHold(t, DurableCommits(h.events(), at(3, 5))) // taken while 8 was in flight
		mustHold(t, DurableCommits(h.events(), at(3, 8)))
		mustHold(t, DurableCommits(h.events(), at(4, 8)))
		v := DurableCommits(h.events(), at(4, 5))
		mustFailOnce(t, v, []int64{3}, "checkpoint cp shows t-0 at offset 5")
		if !strings.Contains(notesOf(v), "1 reads of committed offsets checked, 1 partition values judged") || strings.Contains(notesOf(v), "without history_len") {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
}

func TestEventuallyConvergesRules(t *testing.T) {
	t.Parallel()
	t.Run("a bound set in the plan replaces the timers", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		heal := h.phase(history.PhaseHeal)
		h.wait(9 * time.Second)
		late := h.assigned("b", 2, 1) // 10s after the heal
		h.phase(history.PhaseFinal)
		p := convergePlan()
		p.ConvergenceBound = 5 * time.Second
		mustFailOnce(t, EventuallyConverges(h.events(), nil, p), []int64{heal, late}, "5s over the bound (convergence_bound 5s set in the plan)")
		p.ConvergenceBound = 0
		mustHold(t, EventuallyConverges(h.events(), nil, p))
	})
	t.Run("any missing timer skips the checker", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			p := convergePlan()
			switch i {
			case 0:
				p.SessionTimeout = 0
			case 1:
				p.HeartbeatInterval = 0
			case 2:
				p.RebalanceTimeout = 0
			}
			h := newHist(t)
			h.assigned("a", 1, 0, 1)
			if v := EventuallyConverges(h.events(), nil, p); v.Skipped == "" {
				t.Fatalf("timer %d missing: got %+v", i, v)
			}
		}
		if v := EventuallyConverges(nil, nil, convergePlan()); !strings.Contains(v.Skipped, "empty history") {
			t.Fatalf("empty history: %+v", v)
		}
	})
	t.Run("without a heal marker it is measured from the last fault stop", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.info("nemesis", history.FFaultStop, history.Fault{What: "pause"})
		h.wait(60 * time.Second)
		last := h.info("nemesis", history.FFaultStop, history.Fault{What: "pause"})
		h.revoked("a", 2, 1)
		h.assigned("b", 2, 1)
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), nil, convergePlan())
		mustHold(t, v)
		if !strings.Contains(notesOf(v), fmt.Sprintf("measured from the last fault stop at event %d", last)) || !strings.Contains(notesOf(v), "2s after the heal") {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	t.Run("a final marker before the heal is not the end", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseFinal)
		h.phase(history.PhaseHeal)
		r := h.revoked("a", 1, 1)
		v := EventuallyConverges(h.events(), nil, convergePlan())
		mustFailOnce(t, v, []int64{r}, "t-1 has 0 owners")
		mustNote(t, v, "judged at the end of the history")
	})
	t.Run("what happens after the final marker is not judged", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		h.phase(history.PhaseFinal)
		h.revoked("a", 1, 1)
		h.describe(inState(4, "Reconciling"))
		mustHold(t, EventuallyConverges(h.events(), nil, convergePlan()))
	})
	t.Run("a partition with two owners at the end fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		b := h.assigned("b", 2, 1)
		h.phase(history.PhaseFinal)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{b}, "t-1 has 2 owners")
	})
	t.Run("a partition with two owners at the end cites where each began to own it", func(t *testing.T) {
		// a holds t-1 from before the heal and never lets go; b is the last to arrive. The
		// violation must name both (the scorecard charges it to the members it cites), not only b.
		h := newHist(t)
		a := h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		h.revoked("a", 1, 0)
		c := h.assigned("c", 2, 0)
		b := h.assigned("b", 2, 1)
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), nil, convergePlan())
		mustFailOnce(t, v, []int64{a, b}, "t-1 has 2 owners")
		if slices.Contains(v.Violations[0].EventIndexes, c) {
			t.Fatalf("cites %v: c's ownership of t-0, which has one owner, is not part of it", v.Violations[0].EventIndexes)
		}
	})
	t.Run("two owners with no final phase: each owner's start is cited", func(t *testing.T) {
		h := newHist(t)
		a := h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		b := h.assigned("b", 2, 1)
		mustCite(t, EventuallyConverges(h.events(), nil, convergePlan()), a, b)
	})
	t.Run("without topics in the plan the partitions ever assigned are judged", func(t *testing.T) {
		p := convergePlan()
		p.Topics = nil
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		r := h.revoked("a", 2, 1)
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), nil, p)
		mustFailOnce(t, v, []int64{r}, "t-1 has 0 owners")
		mustNote(t, v, "judged over the 2 partitions that were ever assigned")
	})
	t.Run("descriptions before the heal are not judged", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.describe(inState(2, "Assigning"))
		h.phase(history.PhaseHeal)
		h.describe(stable(3))
		h.phase(history.PhaseFinal)
		mustHold(t, EventuallyConverges(h.events(), nil, convergePlan()))
	})
	t.Run("the final observation is the last description", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		h.describe(stable(3))
		h.phase(history.PhaseFinal)
		g := stable(4)
		g.Protocol, g.State = history.ProtocolClassic, "PreparingRebalance"
		v := EventuallyConverges(h.events(), &history.Observations{Final: history.Snapshot{Group: g}}, convergePlan())
		x := mustCite(t, v)
		mustSay(t, x, "group not stable at the final observation: state PreparingRebalance; judged 3s after the heal (event 1), within the bound (session 10s + rebalance 20s + 3×heartbeat 1s + slack 2s = 35s) by 32s")
		h.wait(50 * time.Second)
		late := stable(4)
		v = EventuallyConverges(h.events(), &history.Observations{Final: history.Snapshot{Group: late, Time: h.now}}, convergePlan())
		mustHold(t, v)
		if !strings.Contains(notesOf(v), "group Stable from the describe at event") {
			t.Fatalf("the describe before the final observation was Stable too: %v", v.Notes)
		}
	})
	t.Run("stability is measured from when the group was Stable for good", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		heal := h.phase(history.PhaseHeal)
		h.describe(stable(3)) // Stable early, but not for good
		h.describe(inState(4, "Reconciling"))
		h.wait(40 * time.Second)
		good := h.describe(stable(5))
		h.phase(history.PhaseFinal)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{heal, good}, "stability bound exceeded")
	})
	t.Run("a final observation without a time is taken at the last event", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		h.wait(50 * time.Second)
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), &history.Observations{Final: history.Snapshot{Group: stable(3)}}, convergePlan())
		mustFailSaying(t, v, "51s after the heal (final observation)")
	})
}

func TestHistoryWellFormedRules(t *testing.T) {
	t.Parallel()
	h := newHist(t)
	h.commit("a", 1, history.OK, "", 0, 1)
	h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 2))             // never completes
	h.invoke("b/hb", history.FHeartbeat, history.Heartbeat{Member: "b"}) // never completes
	v := HistoryWellFormed(h.events())
	mustHoldNote(t, v, "4 events, 2 calls never completed")
}

func TestVerdictRules(t *testing.T) {
	t.Parallel()
	t.Run("a verdict lists the first violations and counts the rest", func(t *testing.T) {
		h := newHist(t)
		for i := int64(0); i < maxViolations+2; i++ {
			h.produce(0, i)
		}
		v := NoLostRecords(h.events(), nil)
		if v.Holds || len(v.Violations) != maxViolations || !strings.Contains(notesOf(v), "2 more violations not listed (the first 1000 are)") {
			t.Fatalf("holds %v, %d violations, notes %v", v.Holds, len(v.Violations), v.Notes)
		}
	})
	t.Run("cited events are sorted, unique and never negative", func(t *testing.T) {
		vd := newVerdict("X")
		vd.fail([]int64{5, -1, 3, 5, 3, 0}, "x")
		if got := vd.done().Violations[0].EventIndexes; !slices.Equal(got, []int64{0, 3, 5}) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("a report holds only when every verdict does", func(t *testing.T) {
		if r := NewReport([]Verdict{{Name: "A", Holds: true}, skipped("B", "why")}, nil); !r.Holds {
			t.Fatalf("%+v", r)
		}
		if r := NewReport([]Verdict{{Name: "A"}, {Name: "B", Holds: true}}, nil); r.Holds {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("a broken verdicts.json says how to regenerate it", func(t *testing.T) {
		if _, err := ReadVerdicts(strings.NewReader("{")); err == nil || !strings.Contains(err.Error(), "groupquake check RUN_DIR") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestRebalanceCostRules(t *testing.T) {
	t.Parallel()
	t.Run("a member that left and came back did not stop; its partitions did", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0) // t=1s
		h.info("a", history.FLeft, history.Membership{Member: "a", Epoch: 1})
		h.assigned("a", 2, 0) // t=3s
		pc := RebalanceCost(h.events()).Protocols[history.ProtocolConsumer]
		if pc == nil || pc.MemberStops.Count != 0 || pc.PartitionStops.Count != 1 || pc.PartitionStops.Max != time.Second {
			t.Fatalf("cost %+v", pc)
		}
	})
	t.Run("a member stops until it owns anything again", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1) // t=1s
		h.revoked("a", 1, 0)     // t=2s: still owns t-1
		h.revoked("a", 1, 1)     // t=3s: owns nothing
		h.wait(4 * time.Second)
		h.assigned("a", 2, 0) // t=8s
		h.assigned("a", 2, 1) // t=9s
		pc := RebalanceCost(h.events()).Protocols[history.ProtocolConsumer]
		if pc.MemberStops.Count != 1 || pc.MemberStops.Max != 5*time.Second {
			t.Fatalf("member stops %+v", pc.MemberStops)
		}
		if s := pc.Stops; len(s) != 3 || s[0].Partition != "t-0" || s[1].Member != "a" || s[2].Partition != "t-1" || s[1].Epoch != 2 {
			t.Fatalf("stops in history order: %+v", s)
		}
	})
	t.Run("overlapping ownerships cover a partition until the last one ends", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0) // t=1s
		h.assigned("b", 2, 0) // t=2s
		h.lost("b", 2, 0)     // t=3s
		h.revoked("a", 1, 0)  // t=4s
		h.assigned("c", 3, 0) // t=5s
		h.proto = ""
		h.assigned("d", 0, 1) // no protocol reported
		h.revoked("d", 0, 1)
		h.assigned("d", 0, 1)
		c := RebalanceCost(h.events())
		pc := c.Protocols[history.ProtocolConsumer]
		if pc.PartitionStops.Count != 1 || pc.PartitionStops.Max != time.Second {
			t.Fatalf("partition stops %+v", pc.PartitionStops)
		}
		if u := c.Protocols["unknown"]; u == nil || u.PartitionStops.Count != 1 {
			t.Fatalf("no protocol is \"unknown\": %+v", c.Protocols)
		}
	})
	t.Run("statistics use nearest ranks", func(t *testing.T) {
		var ds []time.Duration
		for i := 1; i <= 10; i++ {
			ds = append(ds, time.Duration(i)*time.Second)
		}
		s := statsOf(ds)
		if s.Count != 10 || s.Total != 55*time.Second || s.Mean != 5500*time.Millisecond || s.P50 != 5*time.Second || s.P99 != 10*time.Second || s.Max != 10*time.Second {
			t.Fatalf("%+v", s)
		}
		if s := statsOf(nil); s != (Stats{}) {
			t.Fatalf("%+v", s)
		}
	})
}

func TestFactsOwnershipRules(t *testing.T) {
	t.Parallel()
	t.Run("an assignment repeating a held partition opens no new ownership", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.assigned("a", 2, 0, 1)
		h.revoked("a", 2, 2) // not held: nothing to end
		mustHoldNote(t, NoDoubleOwnership(h.events(), nil), "2 ownership intervals over 3 partitions")
	})
	t.Run("only completions of assigned and fenced count", func(t *testing.T) {
		h := newHist(t)
		h.invoke("a", history.FAssigned, history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)})
		h.assigned("b", 2, 0)
		h.invoke("b/x", history.FFenced, history.Membership{Member: "b", Epoch: 2})
		h.assigned("c", 3, 0)
		v := NoDoubleOwnership(h.events(), nil)
		if len(v.Violations) != 1 || !strings.Contains(v.Violations[0].Message, "owned by b") || !strings.Contains(v.Violations[0].Message, "and c") {
			t.Fatalf("want only b and c, got %+v", v.Violations)
		}
	})
	t.Run("a classic heartbeat's generation is the epoch a member holds its partitions at", func(t *testing.T) {
		h := newClassicHist(t)
		h.assigned("a", 3, 1)
		_, ok := h.hb("a", 4, history.OK)
		h.revoked("a", 4, 1)
		b := h.assigned("b", 4, 1)
		mustCite(t, ValidPartitionEpoch(h.events(), nil), ok, b)
	})
	t.Run("join and sync set the generation and count as a session", func(t *testing.T) {
		h := newClassicHist(t)
		a, b := h.takeover()
		inv, j := h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 2})
		h.lost("a", 2, 0)
		x := mustCite(t, NoDoubleOwnership(h.events(), nil), a, b, inv, j)
		mustSay(t, x, "its join sent at event")
		// A generation a JoinGroup answered is not yet the generation of what a holds: a
		// coordinator that fails over before the SyncGroup loses it (joinEpoch).
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
		hb := newHist(t)
		hb.proto = history.ProtocolClassic
		hb.assigned("a", 1, 0)
		b2 := hb.assigned("b", 2, 0)
		hb.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 2})
		_, beat := hb.hb("a", 2, history.OK)
		hb.lost("a", 2, 0)
		mustCite(t, ValidPartitionEpoch(hb.events(), nil), b2, beat) // a heartbeat at 2 answered: a held t-0 at 2
		h2 := newHist(t)
		h2.proto = history.ProtocolClassic
		h2.assigned("a", 1, 0)
		h2.assigned("b", 2, 0)
		h2.call("a", history.FSync, history.Sync{Member: "a", Generation: 2}, history.OK, history.Sync{Member: "a", Generation: 2})
		h2.lost("a", 2, 0)
		if v := NoDoubleOwnership(h2.events(), nil); v.Holds || !strings.Contains(v.Violations[0].Message, "its sync sent at event") {
			t.Fatalf("got %+v", v)
		}
		mustCite(t, ValidPartitionEpoch(h2.events(), nil), 1, 3)
	})
	t.Run("a generation lost with its coordinator is given again", func(t *testing.T) {
		// 4.1.2, seed 95072700681147714: a (cooperative) joined generation 2 holding t-0 and
		// t-1; the coordinator failed over before the SyncGroup, and the new one, which had
		// loaded generation 1, answered it ILLEGAL_GENERATION. a lost its partitions and joined
		// again; the group's own generation 2 gave t-1 to b, whose commits at 2 were accepted.
		h := newClassicHist(t)
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 1})
		h.assigned("a", 1, 0, 1)
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 2})
		h.call("a", history.FSync, history.Sync{Member: "a", Generation: 2}, history.Fail, history.Sync{Member: "a", Generation: 2, Error: "ILLEGAL_GENERATION"})
		h.lost("a", 2, 0, 1)
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 2})
		h.call("b", history.FJoin, history.Join{Member: "b"}, history.OK, history.Join{Member: "b", Generation: 2})
		h.call("a", history.FSync, history.Sync{Member: "a", Generation: 2}, history.OK, history.Sync{Member: "a", Generation: 2})
		h.assigned("a", 2, 0)
		h.call("b", history.FSync, history.Sync{Member: "b", Generation: 2}, history.OK, history.Sync{Member: "b", Generation: 2})
		h.assigned("b", 2, 1)
		h.commit("b", 2, history.OK, "", 1, 5)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
		mustHold(t, FencedCommitsRejected(h.events(), nil))
		// Had a's SyncGroup of its generation 2 been answered, t-1 was a's at 2 too: b's
		// assignment of it at 2 is the violation, and its commit a fenced one.
		h2 := newHist(t)
		h2.proto = history.ProtocolClassic
		h2.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 1})
		h2.assigned("a", 1, 0, 1)
		h2.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 2})
		_, sync := h2.call("a", history.FSync, history.Sync{Member: "a", Generation: 2}, history.OK, history.Sync{Member: "a", Generation: 2})
		h2.lost("a", 2, 0, 1)
		b := h2.assigned("b", 2, 1)
		h2.commit("b", 2, history.OK, "", 1, 5)
		mustCite(t, ValidPartitionEpoch(h2.events(), nil), sync, b)
		if v := FencedCommitsRejected(h2.events(), nil); v.Holds {
			t.Fatalf("FencedCommitsRejected holds: %+v", v)
		}
	})
	t.Run("an accepted commit confirms the generation its member joined", func(t *testing.T) {
		// 4.1.2, seed 6203843358561747071: kgo-classic member a (cooperative) held t-2 at
		// generation 4, joined generation 5, and lost its SyncGroup's answer to a link fault;
		// the leader's SyncGroup did not complete either (no generation 5 in the log), and the
		// group went back to PreparingRebalance at 5, where Kafka accepts a commit at 5. a
		// committed t-2, which it had carried into 5, and the coordinator accepted it.
		carried := func(other bool) *hist {
			h := newClassicHist(t)
			h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 4})
			h.call("a", history.FSync, history.Sync{Member: "a", Generation: 4}, history.OK, history.Sync{Member: "a", Generation: 4})
			h.assigned("a", 4, 2)
			h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 5})
			h.call("a", history.FSync, history.Sync{Member: "a", Generation: 5}, history.Info, history.Sync{Member: "a", Generation: 5, Error: "connection closed before the answer"})
			if other {
				h.call("b", history.FSync, history.Sync{Member: "b", Generation: 5}, history.OK, history.Sync{Member: "b", Generation: 5})
				h.assigned("b", 5, 2)
			}
			h.commit("a", 5, history.OK, "", 2, 20)
			h.lost("a", 5, 2)
			return h
		}
		h := carried(false)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
		mustHold(t, NoDoubleOwnership(h.events(), nil))
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
		// Generation 5 gave t-2 to b: a's commit of it at 5 is a zombie's, accepted.
		if v := FencedCommitsRejected(carried(true).events(), nil); v.Holds || !strings.Contains(v.Violations[0].Message, "belonged to b") {
			t.Fatalf("a commit of a partition generation 5 gave b: %+v", v)
		}
		// A partition a never held is not confirmed by the commit.
		h3 := newClassicHist(t)
		h3.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 5})
		h3.commit("a", 5, history.OK, "", 1, 20)
		if v := FencedCommitsRejected(h3.events(), nil); v.Holds || !strings.Contains(v.Violations[0].Message, "never owned") {
			t.Fatalf("a commit of a partition a never held: %+v", v)
		}
	})
	t.Run("a failed join or sync is no session", func(t *testing.T) {
		h := newClassicHist(t)
		h.takeover()
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.Fail, history.Join{Member: "a", Generation: 2, Error: "UNKNOWN_MEMBER_ID"})
		h.call("a", history.FSync, history.Sync{Member: "a", Generation: 2}, history.Fail, history.Sync{Member: "a", Generation: 2, Error: "ILLEGAL_GENERATION"})
		h.lost("a", 1, 0)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
		mustHold(t, ValidPartitionEpoch(h.events(), nil))
	})
	t.Run("a join makes the member classic for the commits that do not say", func(t *testing.T) {
		h := newHist(t)
		h.proto = ""
		h.call("a", history.FJoin, history.Join{Member: "a"}, history.OK, history.Join{Member: "a", Generation: 1})
		h.takeover()
		h.commit("a", 1, history.Fail, "REBALANCE_IN_PROGRESS", 0, 4)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("a standalone describe info is an observer read", func(t *testing.T) {
		h := newHist(t)
		d := h.describe(nil, off(0, 7))
		i := h.info("observer", history.FDescribe, history.Describe{Committed: []history.OffsetAt{off(0, 3)}, HasCommitted: true})
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{d, i}, "went back from 7")
	})
}

func TestDur(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		1500*time.Millisecond + 400*time.Microsecond: "1.5s",
		1234567 * time.Nanosecond:                    "1.235ms",
		999 * time.Nanosecond:                        "999ns",
	} {
		if got := dur(d); got != want {
			t.Errorf("dur(%d) = %q, want %q", d, got, want)
		}
	}
}

func TestEventuallyConvergesBoundRules(t *testing.T) {
	t.Parallel()
	t.Run("converging exactly at the bound holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.phase(history.PhaseHeal)
		h.wait(34 * time.Second)
		h.assigned("b", 2, 1) // 35s after the heal: the bound
		h.phase(history.PhaseFinal)
		mustHold(t, EventuallyConverges(h.events(), nil, convergePlan()))
		h2 := newHist(t)
		h2.assigned("a", 1, 0, 1)
		h2.phase(history.PhaseHeal)
		h2.wait(34 * time.Second)
		h2.describe(stable(2)) // invoked 35s after the heal
		h2.phase(history.PhaseFinal)
		mustHold(t, EventuallyConverges(h2.events(), nil, convergePlan()))
	})
	t.Run("convergence lost after the heal is measured from when it came back", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		heal := h.phase(history.PhaseHeal)
		h.assigned("b", 2, 1) // two owners
		h.wait(40 * time.Second)
		back := h.revoked("a", 2, 1)
		h.describe(nil, off(0, 1)) // committed offsets only: says nothing about stability
		h.phase(history.PhaseFinal)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{heal, back}, "ownership bound exceeded")
	})
	t.Run("an unstable consumer group with every member at the assignment epoch names no member", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		h.describe(inState(4, "Assigning"))
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), nil, convergePlan())
		mustFailSaying(t, v, "state Assigning; judged 1s after the heal (event 1), within the bound (session 10s + rebalance 20s + 3×heartbeat 1s + slack 2s = 35s) by 34s")
	})
}

func TestEventuallyConvergesUniverseRules(t *testing.T) {
	t.Parallel()
	t.Run("a heal marker as the first event is the heal", func(t *testing.T) {
		h := newHist(t)
		heal := h.phase(history.PhaseHeal) // event 0
		h.wait(40 * time.Second)
		late := h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseFinal)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{heal, late}, "ownership bound exceeded")
	})
	t.Run("without markers it is measured from the first assignment, not the first event", func(t *testing.T) {
		h := newHist(t)
		h.produce(0, 0)
		h.wait(100 * time.Second)
		h.assigned("a", 1, 0, 1)
		mustHold(t, EventuallyConverges(h.events(), nil, convergePlan()))
	})
	t.Run("without markers, faults or assignments nothing converges", func(t *testing.T) {
		h := newHist(t)
		h.produce(0, 0)
		v := EventuallyConverges(h.events(), nil, convergePlan())
		mustFailSaying(t, v, "t-0 has 0 owners, t-1 has 0 owners")
	})
	t.Run("a describe is dated by its invoke, even one sent before the heal", func(t *testing.T) {
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{}) // event 0
		h.assigned("a", 1, 0, 1)
		h.phase(history.PhaseHeal)
		h.wait(40 * time.Second)
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Group: stable(2)})
		h.phase(history.PhaseFinal)
		mustHold(t, EventuallyConverges(h.events(), nil, convergePlan()))
	})
	t.Run("partitions outside the plan do not count", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 5)
		h.phase(history.PhaseHeal)
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), nil, convergePlan())
		if v.Holds || !strings.Contains(v.Violations[0].Message, "t-1 has 0 owners") || strings.Contains(v.Violations[0].Message, "t-5") {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("without topics in the plan partitions never assigned do not count", func(t *testing.T) {
		p := convergePlan()
		p.Topics = nil
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.consume("b", 1, 7, 0) // t-7 is known, never assigned
		h.phase(history.PhaseHeal)
		h.phase(history.PhaseFinal)
		mustHold(t, EventuallyConverges(h.events(), nil, p))
	})
}

func TestEventuallyConvergesCountRules(t *testing.T) {
	t.Parallel()
	t.Run("three owners going back to one converge when the last extra owner leaves", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		heal := h.phase(history.PhaseHeal)
		h.assigned("b", 2, 1) // two owners
		h.assigned("c", 2, 1) // three
		h.wait(40 * time.Second)
		h.revoked("b", 3, 1) // two
		one := h.revoked("c", 3, 1)
		h.phase(history.PhaseFinal)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{heal, one}, "ownership bound exceeded: every partition had exactly one owner only 44s after the heal")
	})
	t.Run("convergence before the heal is dated by the event that reached it", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1) // event 0
		h.phase(history.PhaseHeal)
		h.phase(history.PhaseFinal)
		mustHoldNote(t, EventuallyConverges(h.events(), nil, convergePlan()), "every partition owned by exactly one member 0s after the heal (event 0)")
	})
	t.Run("a Stable description before the heal says nothing about after it", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.describe(stable(2))
		heal := h.phase(history.PhaseHeal)
		h.wait(40 * time.Second)
		d := h.describe(stable(2))
		h.phase(history.PhaseFinal)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{heal, d}, "stability bound exceeded")
	})
	t.Run("nothing to own converges at the heal", func(t *testing.T) {
		p := convergePlan()
		p.Topics = nil
		h := newHist(t)
		heal := h.phase(history.PhaseHeal)
		h.phase(history.PhaseFinal)
		v := EventuallyConverges(h.events(), nil, p)
		mustHold(t, v)
		if !strings.Contains(notesOf(v), fmt.Sprintf("every partition owned by exactly one member 0s after the heal (event %d)", heal)) {
			t.Fatalf("notes: %v", v.Notes)
		}
	})
	t.Run("only the partitions without exactly one owner are named, in order", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1, 2)
		h.phase(history.PhaseHeal)
		h.revoked("a", 1, 2)
		h.revoked("a", 1, 0)
		h.phase(history.PhaseFinal)
		p := convergePlan()
		p.Topics[0].Partitions = 3
		v := EventuallyConverges(h.events(), nil, p)
		if v.Holds || !strings.Contains(v.Violations[0].Message, "at event 4, t-0 has 0 owners, t-2 has 0 owners; judged 3s after the heal (event 1), within the bound (session 10s + rebalance 20s + 3×heartbeat 1s + slack 2s = 35s) by 32s") || !strings.Contains(notesOf(v), "group stability not observed") {
			t.Fatalf("got %+v", v)
		}
	})
}

func TestFactsPayloadRules(t *testing.T) {
	t.Parallel()
	t.Run("a payload of the wrong type is a problem and is skipped", func(t *testing.T) {
		for f, want := range map[string]string{
			history.FAssigned: "history.Assignment", history.FRevoked: "history.Assignment", history.FLost: "history.Assignment",
			history.FFenced: "history.Membership", history.FSessionExpired: "history.Membership", history.FLeft: "history.Membership",
			history.FHeartbeat: "history.Heartbeat", history.FJoin: "history.Join", history.FSync: "history.Sync",
			history.FCommit: "history.Commit", history.FConsume: "history.Consume", history.FProduce: "history.Produce",
			history.FDescribe: "history.Describe", history.FPhase: "history.Phase",
		} {
			var wrong any = history.Phase{Name: "x"}
			if f == history.FPhase {
				wrong = history.Produce{}
			}
			es := []history.Event{{Index: 0, Type: history.OK, Process: "a", F: f, Value: wrong}}
			v := HistoryWellFormed(es)
			if v.Holds || !strings.Contains(v.Violations[len(v.Violations)-1].Message, "want "+want) {
				t.Fatalf("%s with a %T payload: %+v", f, wrong, v)
			}
		}
	})
	t.Run("a payload that does not decode is one problem", func(t *testing.T) {
		es := []history.Event{{Index: 0, Type: history.Info, Process: "a", F: history.FAssigned, Value: json.RawMessage(`{"partitions": 5}`)}}
		v := HistoryWellFormed(es)
		if v.Holds || len(v.Violations) != 1 || strings.Contains(v.Violations[0].Message, "want history.Assignment") {
			t.Fatalf("got %+v", v)
		}
	})
	t.Run("events with a wrong payload change no ownership, session or record", func(t *testing.T) {
		bad := history.Phase{Name: "x"}
		own := func(i int64, f, m string, epoch int32) history.Event {
			return history.Event{Index: i, Type: history.Info, Process: m, F: f, Value: history.Assignment{Member: m, Epoch: epoch, Partitions: history.TPs("t", 0)}}
		}
		fenced := []history.Event{own(0, history.FAssigned, "a", 1), own(1, history.FAssigned, "b", 2), {Index: 2, Type: history.Info, Process: "a", F: history.FFenced, Value: bad}}
		if v := NoDoubleOwnership(fenced, nil); v.Holds || !strings.Contains(v.Violations[0].Message, "a was not fenced") {
			t.Fatalf("a fenced event without a Membership fenced a: %+v", v)
		}
		sessions := []history.Event{own(0, history.FAssigned, "a", 1), own(1, history.FAssigned, "b", 2),
			{Index: 2, Type: history.OK, Process: "a", F: history.FHeartbeat, Value: bad},
			{Index: 3, Type: history.OK, Process: "a", F: history.FJoin, Value: bad},
			{Index: 4, Type: history.OK, Process: "a", F: history.FSync, Value: bad},
			own(5, history.FLost, "a", 1)}
		mustHold(t, NoDoubleOwnership(sessions, nil))
		records := []history.Event{
			{Index: 0, Type: history.Info, Process: "a", F: history.FConsume, Value: bad},
			{Index: 1, Type: history.Info, Process: "a", F: history.FConsume, Value: bad},
			{Index: 2, Type: history.OK, Process: "p0", F: history.FProduce, Value: bad},
			{Index: 3, Type: history.OK, Process: "observer", F: history.FDescribe, Value: bad},
			{Index: 4, Type: history.Info, Process: "a", F: history.FCommit, Value: bad},
		}
		mustJudgeNothing(t, BoundedDuplicates(records, nil), "no record was consumed in the history")
		mustJudgeNothing(t, NoLostRecords(records, nil), "no record was produced in the history")
		mustJudgeNothing(t, FencedCommitsRejected(records, nil), "no commit was made in the history")
	})
	t.Run("a commit completion whose invoke was malformed is judged on its own", func(t *testing.T) {
		c := history.Commit{Member: "a", Protocol: history.ProtocolConsumer, Epoch: 1, Offsets: []history.OffsetAt{off(0, 5)}}
		rejected := c
		rejected.Error = "NOT_COORDINATOR"
		admin := history.Commit{Member: "x", Epoch: 0, Offsets: []history.OffsetAt{off(0, 9)}}
		es := []history.Event{
			{Index: 0, Type: history.Invoke, Process: "a", F: history.FCommit, Value: c},
			{Index: 1, Type: history.Fail, Process: "a", F: history.FCommit, Value: rejected},
			{Index: 2, Type: history.Invoke, Process: "x", F: history.FCommit, Value: history.Phase{Name: "x"}},
			{Index: 3, Type: history.OK, Process: "x", F: history.FCommit, Value: admin},
		}
		mustHold(t, FencedCommitsRejected(es, nil))
	})
	t.Run("a heartbeat's protocol is the member's", func(t *testing.T) {
		h := newHist(t)
		h.proto = ""
		h.takeover()
		in := history.Heartbeat{Member: "a", Protocol: history.ProtocolClassic, Epoch: 1}
		h.call("a/hb", history.FHeartbeat, in, history.Fail, in)
		h.lost("a", 1, 0)
		h.call("a/hb", history.FHeartbeat, in, history.OK, in)
		h.commit("a", 1, history.Fail, "REBALANCE_IN_PROGRESS", 0, 4)
		mustHold(t, FencedCommitsRejected(h.events(), nil))
	})
	t.Run("at most 1000 problems are kept", func(t *testing.T) {
		es := make([]history.Event, maxViolations+1)
		for i := range es {
			es[i] = history.Event{Index: int64(i), Type: history.Info, Process: "a", F: history.FConsume, Value: history.Phase{}}
		}
		v := HistoryWellFormed(es)
		if len(v.Violations) != maxViolations || strings.Contains(notesOf(v), "more violations") {
			t.Fatalf("%d violations, notes %v", len(v.Violations), v.Notes)
		}
	})
	t.Run("sentinel epochs do not replace the epoch a member holds", func(t *testing.T) {
		h := newHist(t)
		h.hb("a", 3, history.OK)
		h.hb("a", 0, history.OK) // a response without an epoch
		leave := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: -1, ResultEpoch: -1}
		h.call("a/hb", history.FHeartbeat, leave, history.OK, leave)
		h.assigned("a", 0, 0) // the assignment does not say its epoch
		h.assigned("b", 4, 0)
		v := NoDoubleOwnership(h.events(), nil)
		mustFailSaying(t, v, "owned by a (from event 6, epoch 3,")
	})
	t.Run("a member without a name is its process", func(t *testing.T) {
		h := newHist(t)
		h.info("a", history.FAssigned, history.Assignment{Epoch: 1, Partitions: history.TPs("t", 0)})
		h.assigned("b", 2, 0)
		v := NoDoubleOwnership(h.events(), nil)
		mustFailSaying(t, v, "owned by a (from event 0")
	})
	t.Run("a heartbeat answer without its invoke proves no session after the overlap began", func(t *testing.T) {
		// Its invoke is not in the history: it may have been sent before b's ownership began, as
		// the call in the next case was. The broken pairing is HistoryWellFormed's to report.
		hb := history.Heartbeat{Member: "a", Protocol: history.ProtocolConsumer, Epoch: 1, ResultEpoch: 1}
		es := []history.Event{
			{Index: 0, Type: history.Info, Process: "a", F: history.FAssigned, Value: history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)}},
			{Index: 1, Type: history.Info, Process: "b", F: history.FAssigned, Value: history.Assignment{Member: "b", Epoch: 2, Partitions: history.TPs("t", 0)}},
			{Index: 2, Type: history.OK, Process: "a/hb", F: history.FHeartbeat, Value: hb},
			{Index: 3, Type: history.Info, Process: "a", F: history.FLost, Value: history.Assignment{Member: "a", Epoch: 1, Partitions: history.TPs("t", 0)}},
		}
		mustHold(t, NoDoubleOwnership(es, nil))
		if v := HistoryWellFormed(es); v.Holds {
			t.Fatalf("HistoryWellFormed holds on an answer without its call: %+v", v)
		}
		// With its invoke after b's ownership began, the same answer proves a's session.
		withInvoke := append(slices.Clone(es[:2]), history.Event{Index: 2, Type: history.Invoke, Process: "a/hb", F: history.FHeartbeat, Value: hb})
		for _, e := range es[2:] {
			e.Index++
			withInvoke = append(withInvoke, e)
		}
		v := NoDoubleOwnership(withInvoke, nil)
		mustFailSaying(t, v, "still had a valid session")
	})
	t.Run("a heartbeat sent before the overlap began proves nothing about it", func(t *testing.T) {
		h := newHist(t)
		in := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: 1}
		h.invoke("a/hb", history.FHeartbeat, in) // event 0
		h.takeover()
		out := in
		out.ResultEpoch = 1
		h.complete("a/hb", history.FHeartbeat, history.OK, out)
		h.lost("a", 1, 0)
		mustHold(t, NoDoubleOwnership(h.events(), nil))
	})
	t.Run("a fault stop that never completed is not the heal", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		stop := h.info("nemesis", history.FFaultStop, history.Fault{What: "pause"})
		h.wait(60 * time.Second)
		h.invoke("nemesis/2", history.FFaultStop, history.Fault{What: "pause"})
		late := h.assigned("b", 2, 1)
		mustFailOnce(t, EventuallyConverges(h.events(), nil, convergePlan()), []int64{stop, late}, "ownership bound exceeded")
	})
}
