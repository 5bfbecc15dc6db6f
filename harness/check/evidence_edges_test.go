package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// The edges of the evidence rules: what the log cannot stand for, what the snapshots' spans
// order, written against `make mutate`.
func TestEvidenceEdges(t *testing.T) {
	t.Parallel()
	t.Run("a step back is cited from the highest commit before it", func(t *testing.T) {
		h := newHist(t)
		h.assigned("m1", 5, 0)
		inv, ack := h.commitsInTurn("m1", 5, 80, 60, 50)
		v := CommittedOffsetMonotonic(h.events(), logged(nil, offsetRec(1, 0, 80), offsetRec(2, 0, 60), offsetRec(3, 0, 50)))
		if x := mustCite(t, v, ack[0], inv[2], ack[2]); !strings.Contains(x.Message, "went back from 80") {
			t.Fatalf("got %+v", v.Violations)
		}
	})
	t.Run("records of one offset on both sides of another order nothing", func(t *testing.T) {
		h, ack75, inv50, ack50 := freezeRun(t)
		v := CommittedOffsetMonotonic(h.events(), logged(nil, offsetRec(10, 0, 50), offsetRec(12, 0, 75), offsetRec(14, 0, 50)))
		mustCite(t, v, ack75, inv50, ack50)
		if len(v.Violations) != 2 {
			t.Fatalf("want the answers' and the log's step back, got %+v", v.Violations)
		}
	})
	t.Run("an unplaced checkpoint's records order nothing", func(t *testing.T) {
		h, ack75, inv50, ack50 := freezeRun(t)
		obs := &history.Observations{Group: "g", Checkpoints: []history.Snapshot{{Label: "cp", HasRecords: true, Records: []history.Record{offsetRec(10, 0, 50), offsetRec(12, 0, 75)}}},
			Final: history.Snapshot{Label: "final"}}
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), []int64{ack75, inv50, ack50}, "went back from 75")
	})
	t.Run("a checkpoint's log orders the writes answered before it was read", func(t *testing.T) {
		h, _, _, ack50 := freezeRun(t)
		obs := &history.Observations{Group: "g", Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: ack50 + 1, HasRecords: true, Records: []history.Record{offsetRec(10, 0, 50), offsetRec(12, 0, 75)}}},
			Final: history.Snapshot{Label: "final"}}
		mustHold(t, CommittedOffsetMonotonic(h.events(), obs))
	})
	t.Run("the log names its record offsets", func(t *testing.T) {
		if got := joinOffsets([]int64{3}); got != "log offset 3" {
			t.Fatalf("got %q", got)
		}
		if got := joinOffsets([]int64{1, 2, 3, 4, 5, 6}); got != "log offsets 1, 2, 3, 4, …" {
			t.Fatalf("got %q", got)
		}
	})
	zombie := func(t *testing.T) (*hist, []int64) {
		h := newHist(t)
		_, moved := h.handover("a", 1, "b", 2, 0)
		inv, done := h.commit("a", 1, history.OK, "", 0, 4)
		return h, []int64{moved, inv, done}
	}
	t.Run("a log that never shows the new epoch does not place a zombie before it", func(t *testing.T) {
		h, cite := zombie(t)
		mustFailOnce(t, FencedCommitsRejected(h.events(), logged(nil, epochRec(1, 1), offsetRec(5, 0, 4))), cite, "a zombie commit")
	})
	t.Run("another group's epochs are not the group's", func(t *testing.T) {
		h, cite := zombie(t)
		other := epochRec(6, 2)
		other.Key = map[string]any{"groupid": "other"}
		mustFailOnce(t, FencedCommitsRejected(h.events(), logged(nil, epochRec(1, 1), offsetRec(5, 0, 4), other)), cite, "a zombie commit")
	})
	t.Run("the first epoch record at the new epoch is where the group reached it", func(t *testing.T) {
		h, cite := zombie(t)
		mustFailOnce(t, FencedCommitsRejected(h.events(), logged(nil, epochRec(1, 1), epochRec(6, 2), offsetRec(7, 0, 4), epochRec(8, 3))), cite, "a zombie commit")
	})
	t.Run("an ownership of unknown epoch is not placed in the log", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.assigned("b", 0, 0) // the assignment does not say its epoch
		h.commit("a", 1, history.OK, "", 0, 4)
		h.lost("a", 1, 0)
		v := NoDoubleOwnership(h.events(), logged(nil, offsetRec(1, 0, 4), epochRec(2, 1)))
		mustFailSaying(t, v, "although it had been fenced")
	})
	t.Run("a commit answered before the member reported the assignment of its epoch fails", func(t *testing.T) {
		h := newHist(t)
		inv, done := h.commit("a", 2, history.OK, "", 0, 4)
		at := h.assigned("a", 2, 0)
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{inv, done, at}, "only owned t-0 at epoch 2 from event 2, after the commit completed")
	})
	g := func(gen, epoch int32) *history.GroupDescription {
		return &history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Stable", Generation: gen, GroupEpoch: epoch}
	}
	t.Run("the final snapshot comes after every checkpoint, and only after them", func(t *testing.T) {
		h := newHist(t)
		h.describe(g(0, 5))
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: 2, Group: g(0, 7)}}, Final: history.Snapshot{Label: "final", Group: g(0, 6)}}
		mustFailOnce(t, EpochMonotonic(h.events(), obs), []int64{1}, "group epoch went back from 7 (snapshot cp) to 6 (snapshot final)")
		// A describe that overlaps the final snapshot is not before it (with a reset earlier on,
		// every earlier read is looked at).
		h = newHist(t)
		h.reset("admin", 0, 1)
		h.invoke("observer", history.FDescribe, history.Describe{})
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Group: g(0, 8), Committed: []history.OffsetAt{off(0, 9)}, HasCommitted: true})
		final := &history.Observations{Final: history.Snapshot{Label: "final", HistoryLen: 3, HistoryEnd: 4, Group: g(0, 7), Committed: []history.OffsetAt{off(0, 8)}, HasCommitted: true}}
		mustHold(t, EpochMonotonic(h.events(), final))
		mustHold(t, CommittedOffsetMonotonic(h.events(), final))
	})
	t.Run("a description without a generation has none to go back", func(t *testing.T) {
		h := newHist(t)
		h.describe(g(5, 0))
		h.describe(g(0, 0))
		mustHold(t, EpochMonotonic(h.events(), nil))
	})
	t.Run("a history that lost every event judges no snapshot", func(t *testing.T) {
		obs := &history.Observations{Final: history.Snapshot{Label: "final", HistoryLen: 5, HasCommitted: true, Committed: []history.OffsetAt{off(0, 9)}}}
		v := DurableCommits(nil, obs)
		if !v.Holds || !strings.Contains(notesOf(v), "it ends at event -1") {
			t.Fatalf("got %+v", v)
		}
	})
	// b re-reads offset 5 after a owned the partition and committed 8.
	dup := func(t *testing.T, reset func(h *hist), after ...func(h *hist)) Verdict {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 5)
		reset(h)
		h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		for _, f := range after {
			f(h)
		}
		h.consume("b", 2, 0, 5)
		return BoundedDuplicates(h.events(), nil)
	}
	r := func(o int64) history.Commit {
		return history.Commit{Member: "admin", Epoch: -1, Reset: true, Offsets: []history.OffsetAt{off(0, o)}}
	}
	t.Run("a reset sent after the ownership began does not lower the floor", func(t *testing.T) {
		commit8 := func(h *hist) { h.commit("a", 1, history.OK, "", 0, 8) }
		if v := dup(t, commit8, func(h *hist) { h.call("admin", history.FCommit, r(2), history.OK, r(2)) }); v.Holds {
			t.Fatalf("holds: %+v", v)
		}
		// In flight when the ownership began, it may have landed before.
		if v := dup(t, func(h *hist) { commit8(h); h.invoke("admin", history.FCommit, r(2)) }); !v.Holds {
			t.Fatalf("fails: %+v", v)
		}
	})
	t.Run("a reset to the committed offset itself lowers nothing", func(t *testing.T) {
		v := dup(t, func(h *hist) {
			h.invoke("admin", history.FCommit, r(8))
			h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 8))
			h.complete("admin", history.FCommit, history.Info, r(8))
			h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, 8))
		})
		if v.Holds {
			t.Fatalf("holds: %+v", v)
		}
	})
}

// TestEvidenceNotes: a verdict's notes name the evidence it used, and only that.
func TestEvidenceNotes(t *testing.T) {
	t.Parallel()
	h := newHist(t)
	h.assigned("a", 1, 0)
	h.commit("a", 1, history.OK, "", 0, 5)
	h.commit("a", 1, history.OK, "", 0, 5) // an equal offset is no step back
	h.describe(nil, off(0, 5))
	obs := &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HasCommitted: true, Committed: []history.OffsetAt{off(0, 5)}, HasRecords: true, Records: []history.Record{offsetRec(1, 0, 5), offsetRec(2, 0, 5)}}}
	for _, v := range []Verdict{CommittedOffsetMonotonic(h.events(), obs), DurableCommits(h.events(), obs), EpochMonotonic(h.events(), obs), FencedCommitsRejected(h.events(), obs)} {
		mustHold(t, v)
		for _, not := range []string{"outranks", "written before it did", "snapshot(s) not judged", "snapshot(s) not checked"} {
			if strings.Contains(notesOf(v), not) {
				t.Errorf("%s notes %q: %v", v.Name, not, v.Notes)
			}
		}
	}
	t.Run("HistoryWellFormed cites a flaw at event 0 and counts only events set aside", func(t *testing.T) {
		wf := All(h.events(), nil, history.Plan{}, WithFlaws([]history.Flaw{{Index: 0, Message: "lines out of order"}}, 0))[0]
		mustCite(t, wf, 0)
		if strings.Contains(notesOf(wf), "complete events") {
			t.Fatalf("notes: %v", wf.Notes)
		}
	})
	t.Run("a snapshot beyond the history's end is counted once, whatever it read", func(t *testing.T) {
		o := &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HistoryLen: 99, HasCommitted: true, Committed: []history.OffsetAt{off(0, 3)}}}
		mustHoldNote(t, CommittedOffsetMonotonic(h.events(), o), "1 snapshot(s) not judged")
	})
	t.Run("the first value the log explained is named", func(t *testing.T) {
		h, _, _, _ := freezeRun(t)
		v := DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}, offsetRec(10, 0, 50), offsetRec(12, 0, 75)))
		if n := notesOf(v); !strings.Contains(n, "(first: offset 75 of t-0 by m1: __consumer_offsets (snapshot final) holds every write of 50") {
			t.Fatalf("notes: %s", n)
		}
	})
}

// TestEvidenceReads: observer reads are ordered by their spans, each against every read that ended
// before it began.
func TestEvidenceReads(t *testing.T) {
	t.Parallel()
	t.Run("a snapshot right after a describe comes after it, and a read of offset 0 counts", func(t *testing.T) {
		h := newHist(t)
		d := h.describe(nil, off(0, 7)) // events 0 and 1
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: 2, HasCommitted: true, Committed: []history.OffsetAt{off(0, 0)}}}}
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), []int64{d}, "from 7 (describe at event 1) to 0 (snapshot cp)")
	})
	t.Run("with resets, the highest read since the last reset that may have undone it is cited", func(t *testing.T) {
		h := newHist(t)
		h.reset("admin", 0, 1)     // events 0 and 1
		h.describe(nil, off(0, 7)) // 2, 3
		h.describe(nil, off(0, 9)) // 4, 5
		nine := h.describe(nil, off(0, 9))
		six := h.describe(nil, off(0, 6))
		five := h.describe(nil, off(0, 5))
		v := CommittedOffsetMonotonic(h.events(), nil)
		if len(v.Violations) != 2 {
			t.Fatalf("want 9 → 6 and 9 → 5, got %+v", v.Violations)
		}
		for i, want := range []int64{six, five} {
			if x := v.Violations[i]; !slices.Equal(x.EventIndexes, []int64{nine, want}) || !strings.Contains(x.Message, "went back from 9 (describe at event 7)") {
				t.Fatalf("violation %d: %+v", i, x)
			}
		}
	})
	t.Run("a read a reset may have undone is not the one a later read is judged against", func(t *testing.T) {
		h := newHist(t)
		h.describe(nil, off(0, 9))
		h.reset("admin", 0, 1)
		six := h.describe(nil, off(0, 6))
		five := h.describe(nil, off(0, 5))
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{six, five}, "went back from 6")
	})
	t.Run("a reset answered before a snapshot began is before it", func(t *testing.T) {
		h := newHist(t)
		h.reset("admin", 0, 1) // events 0 and 1; the checkpoint begins after event 1
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: 2, HistoryEnd: 2, HasCommitted: true, Committed: []history.OffsetAt{off(0, 7)}}}}
		d := h.describe(nil, off(0, 1))
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), []int64{d}, "went back from 7 (snapshot cp) to 1")
	})
	t.Run("a commit that overlaps the value read, with the log silent on it, does not supersede it", func(t *testing.T) {
		// 75 is read; 50 overlaps the commit of 75 and has no record; 60, sent after 75 was
		// answered, was written before it.
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.invoke("a/2", history.FCommit, h.commitOf("a", 1, 0, 50))
		h.commit("a", 1, history.OK, "", 0, 75)
		h.complete("a/2", history.FCommit, history.OK, h.commitOf("a", 1, 0, 50))
		h.commit("a", 1, history.OK, "", 0, 60)
		mustHold(t, DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}, offsetRec(1, 0, 60), offsetRec(2, 0, 75))))
	})
	t.Run("a commit that overlaps the one the read shows does not supersede it", func(t *testing.T) {
		// a's commit of 50 is sent before the commit of 75 completes and answered after it: the
		// two are concurrent, and the final read shows 75.
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.overlappingCommits(75, 50)
		mustHold(t, DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}, offsetRec(1, 0, 50), offsetRec(2, 0, 75))))
		// Where the log shows 50 written after 75, it outranks the answers: the read had to show 50.
		mustFailOnce(t, DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}, offsetRec(1, 0, 75), offsetRec(2, 0, 50))), nil,
			"final snapshot shows t-0 at offset 75", "holds a write acknowledged before the read (log offset 2) after every write of 75 (log offset 1)")
	})
}
