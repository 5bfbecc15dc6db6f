package check

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// The tests in this file prove the two ordering rules of evidence.go checker by checker, each with
// a history that must hold and the closest one that must fail (docs/checkers-evidence.md):
//
//	rule 1: where __consumer_offsets fixes the order of two writes, it outranks the order of the
//	        answers;
//	rule 2: calls that overlap (one invoked before the other completed) are never ordered by
//	        their answers; an observer's read is a call (a snapshot from HistoryLen to HistoryEnd).

// offsetRec is an OffsetCommit record of partition p of topic "t", group "g", at log offset at.
func offsetRec(at int64, p int32, o int64) history.Record {
	return history.Record{Offset: at, KeyType: history.RecordOffsetCommit,
		Key: map[string]any{"group": "g", "topic": "t", "partition": p}, Value: map[string]any{"offset": o}}
}

// epochRec is the group's ConsumerGroupMetadata record at epoch e, at log offset at.
func epochRec(at int64, e int64) history.Record {
	return history.Record{Offset: at, KeyType: history.RecordConsumerGroupMetadata,
		Key: map[string]any{"groupid": "g"}, Value: map[string]any{"epoch": e}}
}

// logged is a final observation, after the whole history, that read committed and records.
func logged(committed []history.OffsetAt, recs ...history.Record) *history.Observations {
	return &history.Observations{Group: "g", Final: history.Snapshot{Label: "final",
		HasCommitted: committed != nil, Committed: committed, HasRecords: recs != nil, Records: recs}}
}

// freezeRun scripts a history that orders two commits one way and the log the other way: m1's
// commit of 75 is answered before its commit of 50 is recorded as sent, while a node pause and a
// member-freeze of m1 are in force, and __consumer_offsets (in the tests) holds 50 written before
// 75: the record of 50 is a write the history placed later than it happened (a request applied by
// the resumed node before its call was recorded, an answer to an earlier attempt). By the answers,
// the offset went back from 75 to 50. It returns the events the violation would cite.
func freezeRun(t *testing.T) (h *hist, ack75, inv50, ack50 int64) {
	h = newHist(t)
	h.assigned("m1", 5, 0)
	h.call("nemesis/1", history.FFaultStart, history.Fault{What: "node-pause", Target: []string{"node-1"}}, history.OK, history.Fault{What: "node-pause", Target: []string{"node-1"}, Effect: "the group's coordinator was node 1"})
	h.call("nemesis/2", history.FFaultStart, history.Fault{What: "member-freeze", Target: []string{"m1"}}, history.OK, history.Fault{What: "member-freeze", Target: []string{"m1"}})
	h.call("nemesis/1", history.FFaultStop, history.Fault{What: "node-pause", Target: []string{"node-1"}}, history.OK, history.Fault{What: "node-pause", Target: []string{"node-1"}})
	_, ack75 = h.commit("m1", 5, history.OK, "", 0, 75)
	inv50 = h.invoke("m1/commit", history.FCommit, h.commitOf("m1", 5, 0, 50))
	h.call("nemesis/2", history.FFaultStop, history.Fault{What: "member-freeze", Target: []string{"m1"}}, history.OK, history.Fault{What: "member-freeze", Target: []string{"m1"}})
	ack50 = h.complete("m1/commit", history.FCommit, history.OK, h.commitOf("m1", 5, 0, 50))
	return h, ack75, inv50, ack50
}

func TestEvidenceCommittedOffsetMonotonic(t *testing.T) {
	t.Parallel()
	h, ack75, inv50, ack50 := freezeRun(t)
	t.Run("rule 1: a commit answered after a higher one but written before it holds", func(t *testing.T) {
		v := CommittedOffsetMonotonic(h.events(), logged([]history.OffsetAt{off(0, 75)}, epochRec(1, 5), offsetRec(10, 0, 50), offsetRec(12, 0, 75)))
		mustHold(t, v)
		if n := notesOf(v); !strings.Contains(n, "1 commit(s) answered after a higher one but written before it") || !strings.Contains(n, "holds every write of 50 (log offset 10) before every write of 75 (log offset 12)") {
			t.Fatalf("notes: %s", n)
		}
	})
	t.Run("rule 1: the same answers with 50 written after 75 fail", func(t *testing.T) {
		v := CommittedOffsetMonotonic(h.events(), logged([]history.OffsetAt{off(0, 50)}, offsetRec(10, 0, 75), offsetRec(12, 0, 50)))
		mustCite(t, v, ack75, inv50, ack50)
		if len(v.Violations) != 2 || !strings.Contains(v.Violations[1].Message, "go back from 75 to 50 at __consumer_offsets offset 12") {
			t.Fatalf("want the answers' and the log's violation, got %+v", v.Violations)
		}
	})
	t.Run("rule 1: without the log the answers' order stands", func(t *testing.T) {
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), logged([]history.OffsetAt{off(0, 75)})), []int64{ack75, inv50, ack50}, "went back from 75", "to 50")
	})
	t.Run("rule 1: an older record of the same offset does not stand for a write the log lost", func(t *testing.T) {
		// An earlier commit of 50 (acknowledged) and m1's: two acknowledged writes of 50, one record.
		h := newHist(t)
		h.assigned("m1", 5, 0)
		h.commit("m1", 5, history.OK, "", 0, 50)
		_, ack75 := h.commit("m1", 5, history.OK, "", 0, 75)
		inv50, ack50 := h.commit("m1", 5, history.OK, "", 0, 50)
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), logged(nil, offsetRec(10, 0, 50), offsetRec(12, 0, 75))), []int64{ack75, inv50, ack50}, "went back from 75")
		// With both writes of 50 in the log before 75, the log orders them.
		mustHold(t, CommittedOffsetMonotonic(h.events(), logged(nil, offsetRec(9, 0, 50), offsetRec(10, 0, 50), offsetRec(12, 0, 75))))
	})
	t.Run("rule 1: a log read before the commits were answered proves nothing", func(t *testing.T) {
		obs := logged([]history.OffsetAt{off(0, 75)}, offsetRec(10, 0, 50), offsetRec(12, 0, 75))
		obs.Final.HistoryLen = inv50 // read before the commit of 50 was answered
		if v := CommittedOffsetMonotonic(h.events(), obs); v.Holds {
			t.Fatalf("holds on a log read before the answer: %+v", v)
		}
	})
	t.Run("rule 1: a higher commit the log does not excuse still fails", func(t *testing.T) {
		// 60 was acknowledged before the commit of 50 was sent and written before it too.
		h := newHist(t)
		h.assigned("m1", 5, 0)
		inv, ack := h.commitsInTurn("m1", 5, 60, 75, 50)
		v := CommittedOffsetMonotonic(h.events(), logged(nil, offsetRec(8, 0, 60), offsetRec(10, 0, 50), offsetRec(12, 0, 75)))
		if x := mustCite(t, v, ack[0], inv[2], ack[2]); !strings.Contains(x.Message, "went back from 60") || len(v.Violations) != 2 {
			t.Fatalf("want 60 → 50 by the answers and by the log, got %+v", v.Violations)
		}
	})
	t.Run("rule 2: a commit sent before others and answered after them is concurrent with them", func(t *testing.T) {
		// The order of seed 2058727196645645882 (TestFreezeSeedAnswerAfterTheMove): m1's commit of
		// 50 is sent while the coordinator's node is paused and answered after m1's freeze; m2's
		// commits of 70 and 75 are answered in between.
		h := newHist(t)
		h.assigned("m1", 4, 0)
		h.invoke("m1", history.FCommit, h.commitOf("m1", 4, 0, 50))
		h.commit("m2", 5, history.OK, "", 0, 70)
		_, ack75 := h.commit("m2", 5, history.OK, "", 0, 75)
		h.complete("m1", history.FCommit, history.OK, h.commitOf("m1", 4, 0, 50))
		mustHold(t, CommittedOffsetMonotonic(h.events(), nil))
		// Sent after 75 was answered, it is ordered after it.
		inv, done := h.commit("m1", 4, history.OK, "", 0, 50)
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), nil), []int64{ack75, inv, done}, "went back from 75")
	})
	t.Run("rule 2: a describe that overlaps a checkpoint is not ordered before it", func(t *testing.T) {
		// The describe was sent before the checkpoint began and answered while it was read: it
		// may have read after the checkpoint did (and a commit of 7 landed between them).
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{}) // event 0; the checkpoint begins after it
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Committed: []history.OffsetAt{off(0, 7)}, HasCommitted: true})
		obs := &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: 1, HistoryEnd: 2, HasCommitted: true, Committed: []history.OffsetAt{off(0, 5)}}}}
		mustHold(t, CommittedOffsetMonotonic(h.events(), obs))
		d := h.describe(nil, off(0, 4)) // sent after the checkpoint's read ended
		mustFailOnce(t, CommittedOffsetMonotonic(h.events(), obs), []int64{1, d}, "from 7 (describe at event 1) to 4 (describe at event 3)")
	})
}

func TestEvidenceDurableCommits(t *testing.T) {
	t.Parallel()
	h, ack75, _, _ := freezeRun(t)
	t.Run("rule 1: the value written last is the durable one, whatever the answers' order", func(t *testing.T) {
		v := DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}, offsetRec(10, 0, 50), offsetRec(12, 0, 75)))
		mustHold(t, v)
		if n := notesOf(v); !strings.Contains(n, "1 value(s) read were written after a commit answered later") {
			t.Fatalf("notes: %s", n)
		}
	})
	t.Run("rule 1: without the log, 75 read after 50 was answered is lost", func(t *testing.T) {
		v := DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}))
		mustFailOnce(t, v, nil, "final snapshot shows t-0 at offset 75, but the latest acknowledged commit before it was offset 50")
		_ = ack75
	})
	t.Run("rule 1: with 50 written after 75, reading 75 is a lost commit", func(t *testing.T) {
		v := DurableCommits(h.events(), logged([]history.OffsetAt{off(0, 75)}, offsetRec(10, 0, 75), offsetRec(12, 0, 50)))
		mustFailOnce(t, v, nil, "shows t-0 at offset 75")
	})
	t.Run("rule 2: a commit sent while a checkpoint was read may be what it shows", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 5) // events 1 and 2, before the checkpoint
		h.commit("a", 1, history.OK, "", 0, 9) // events 3 and 4, while it was read
		cp := history.Snapshot{Label: "cp", HistoryLen: 3, HistoryEnd: 5, HasCommitted: true, Committed: []history.OffsetAt{off(0, 9)}}
		mustHold(t, DurableCommits(h.events(), &history.Observations{Checkpoints: []history.Snapshot{cp}}))
		// Read before the commit of 9 was sent, it could not show 9.
		cp.HistoryEnd = 3
		mustFailOnce(t, DurableCommits(h.events(), &history.Observations{Checkpoints: []history.Snapshot{cp}}), nil, "checkpoint cp shows t-0 at offset 9")
	})
}

func TestEvidenceFinalSnapshotEndsAtTeardown(t *testing.T) {
	t.Parallel()
	// Without history_end, the final snapshot's read ends where the teardown phase begins: a commit
	// sent after it (a member committing as it closes) cannot be what the snapshot shows.
	run := func(teardown bool) Verdict {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.phase(history.PhaseFinal) // event 3: the final snapshot begins after it
		if teardown {
			h.phase(history.PhaseTeardown)
		}
		h.commit("a", 1, history.OK, "", 0, 9)
		obs := &history.Observations{Final: history.Snapshot{Label: "final", HistoryLen: 4, HasCommitted: true, Committed: []history.OffsetAt{off(0, 9)}}}
		return DurableCommits(h.events(), obs)
	}
	mustFailOnce(t, run(true), []int64{2}, "final snapshot shows t-0 at offset 9")
	mustHold(t, run(false))
}

func TestEvidenceFencedCommitsRejected(t *testing.T) {
	t.Parallel()
	// a's commit of 4 at epoch 1 is recorded as sent after b got the partition at epoch 2.
	zombie := func(t *testing.T) (*hist, int64, int64, int64) {
		h := newHist(t)
		_, moved := h.handover("a", 1, "b", 2, 0)
		inv, done := h.commit("a", 1, history.OK, "", 0, 4)
		return h, moved, inv, done
	}
	t.Run("rule 1: a commit the log shows written before the group reached the new epoch is no zombie", func(t *testing.T) {
		h, _, _, _ := zombie(t)
		v := FencedCommitsRejected(h.events(), logged(nil, epochRec(1, 1), offsetRec(5, 0, 4), epochRec(6, 2)))
		mustHold(t, v)
		if n := notesOf(v); !strings.Contains(n, "were written before it did") || !strings.Contains(n, "before the group reached epoch 2 (log offset 6)") {
			t.Fatalf("notes: %s", n)
		}
	})
	t.Run("rule 1: a commit the log shows written after it is a zombie", func(t *testing.T) {
		h, moved, inv, done := zombie(t)
		mustFailOnce(t, FencedCommitsRejected(h.events(), logged(nil, epochRec(1, 1), epochRec(6, 2), offsetRec(7, 0, 4))), []int64{moved, inv, done}, "a zombie commit")
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{moved, inv, done}, "a zombie commit")
	})
	t.Run("rule 2: an epoch from an answer that overlaps the commit is not after it", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		in := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: 1}
		h.invoke("a/hb", history.FHeartbeat, in) // the heartbeat that gives epoch 2 is sent
		h.commit("a", 2, history.OK, "", 0, 4)   // the commit at epoch 2 is answered
		out := in
		out.ResultEpoch = 2
		h.complete("a/hb", history.FHeartbeat, history.OK, out) // and only then the heartbeat's answer
		mustHold(t, FencedCommitsRejected(h.events(), nil))
		// A heartbeat sent after the commit was answered cannot have given it its epoch.
		h = newHist(t)
		h.assigned("a", 1, 0)
		inv, done := h.commit("a", 2, history.OK, "", 0, 4)
		_, ok := h.call("a/hb", history.FHeartbeat, in, history.OK, out)
		mustFailOnce(t, FencedCommitsRejected(h.events(), nil), []int64{inv, done, ok}, "only owned t-0 at epoch 2 from event 4, after the commit completed")
	})
}

func TestEvidenceNoDoubleOwnership(t *testing.T) {
	t.Parallel()
	// a, fenced (its ownership ends lost), has a commit accepted that it sent after b's
	// ownership at epoch 2 began.
	overlap := func(t *testing.T) *hist {
		h := newHist(t)
		h.takeover()
		h.commit("a", 1, history.OK, "", 0, 4)
		h.lost("a", 1, 0)
		return h
	}
	t.Run("rule 1: a commit the log shows written before b's epoch proves no valid session in the overlap", func(t *testing.T) {
		mustHold(t, NoDoubleOwnership(overlap(t).events(), logged(nil, epochRec(1, 1), offsetRec(5, 0, 4), epochRec(6, 2))))
	})
	t.Run("rule 1: written after it, or without the log, it does", func(t *testing.T) {
		for _, obs := range []*history.Observations{logged(nil, epochRec(1, 1), epochRec(6, 2), offsetRec(7, 0, 4)), nil} {
			v := NoDoubleOwnership(overlap(t).events(), obs)
			mustFailSaying(t, v, "although it had been fenced")
		}
	})
	t.Run("rule 2: a heartbeat sent before the overlap and answered in it proves nothing", func(t *testing.T) {
		run := func(sentFirst bool) Verdict {
			h := newHist(t)
			in := history.Heartbeat{Member: "a", Protocol: h.proto, Epoch: 1}
			out := in
			out.ResultEpoch = 1
			h.assigned("a", 1, 0)
			if sentFirst {
				h.invoke("a/hb", history.FHeartbeat, in)
			}
			h.assigned("b", 2, 0)
			if !sentFirst {
				h.invoke("a/hb", history.FHeartbeat, in)
			}
			h.complete("a/hb", history.FHeartbeat, history.OK, out)
			h.lost("a", 1, 0)
			return NoDoubleOwnership(h.events(), nil)
		}
		mustHold(t, run(true))
		if v := run(false); v.Holds || !strings.Contains(v.Violations[0].Message, "still had a valid session") {
			t.Fatalf("got %+v", v)
		}
	})
}

func TestEvidenceBoundedDuplicates(t *testing.T) {
	t.Parallel()
	// a commits 8 while a reset to 2 runs; b then owns the partition and reads offset 5 again.
	run := func(t *testing.T, concurrent bool) (*hist, []int64) {
		h := newHist(t)
		h.proto = history.ProtocolConsumer
		h.assigned("a", 1, 0)
		c5 := h.consume("a", 1, 0, 5)
		r := history.Commit{Member: "admin", Epoch: -1, Reset: true, Offsets: []history.OffsetAt{off(0, 2)}}
		var ack8 int64
		if concurrent {
			// The reset is answered first, but the two overlap: either may have landed last.
			h.invoke("admin", history.FCommit, r)
			h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 8))
			h.complete("admin", history.FCommit, history.OK, r)
			ack8 = h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, 8))
		} else {
			h.call("admin", history.FCommit, r, history.OK, r)
			_, ack8 = h.commit("a", 1, history.OK, "", 0, 8)
		}
		h.revoked("a", 1, 0)
		start := h.assigned("b", 2, 0)
		again := h.consume("b", 2, 0, 5)
		return h, []int64{c5, ack8, start, again}
	}
	t.Run("rule 2: a commit that overlaps a reset does not set the floor", func(t *testing.T) {
		h, _ := run(t, true)
		mustHold(t, BoundedDuplicates(h.events(), nil))
	})
	t.Run("rule 2: a commit sent after the reset completed does", func(t *testing.T) {
		h, cite := run(t, false)
		mustFailOnce(t, BoundedDuplicates(h.events(), nil), cite, "although offset 8 was committed")
	})
	t.Run("rule 1: the log showing the reset written first sets the floor again", func(t *testing.T) {
		h, cite := run(t, true)
		mustFailOnce(t, BoundedDuplicates(h.events(), logged(nil, offsetRec(3, 0, 2), offsetRec(4, 0, 8))), cite, "although offset 8 was committed")
		mustHold(t, BoundedDuplicates(h.events(), logged(nil, offsetRec(3, 0, 8), offsetRec(4, 0, 2))))
	})
}

func TestEvidenceEpochMonotonic(t *testing.T) {
	t.Parallel()
	g := func(epoch int32) *history.GroupDescription {
		return &history.GroupDescription{Protocol: history.ProtocolConsumer, State: "Stable", GroupEpoch: epoch}
	}
	t.Run("rule 2: a checkpoint read while a describe was under way is concurrent with it", func(t *testing.T) {
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{}) // event 0
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Group: g(6)})
		cp := &history.Observations{Checkpoints: []history.Snapshot{{Label: "cp", HistoryLen: 1, HistoryEnd: 1, Group: g(7)}}}
		mustHold(t, EpochMonotonic(h.events(), cp))
		d := h.describe(g(6))
		mustFailOnce(t, EpochMonotonic(h.events(), cp), []int64{0, d}, "group epoch went back from 7 (snapshot cp) to 6")
	})
	t.Run("rule 2: two describes that overlap are not ordered", func(t *testing.T) {
		h := newHist(t)
		h.invoke("observer", history.FDescribe, history.Describe{})
		h.call("observer/2", history.FDescribe, history.Describe{}, history.OK, history.Describe{Group: g(7)})
		h.complete("observer", history.FDescribe, history.OK, history.Describe{Group: g(6)})
		mustHold(t, EpochMonotonic(h.events(), nil))
		d := h.describe(g(6))
		mustFailOnce(t, EpochMonotonic(h.events(), nil), []int64{2, d}, "group epoch went back from 7")
	})
	t.Run("rule 1: the log orders no epochs here; a step back fails whatever it holds", func(t *testing.T) {
		h := newHist(t)
		d1 := h.describe(g(7))
		d2 := h.describe(g(6))
		mustFailOnce(t, EpochMonotonic(h.events(), logged(nil, epochRec(1, 6), epochRec(2, 7))), []int64{d1, d2}, "went back from 7")
		mustHold(t, EpochMonotonic(h.events()[:2], logged(nil, epochRec(1, 7), epochRec(2, 6))))
	})
}

// The checkers below order no two writes of the log, and order calls only by their invokes: what
// a member sent while it owned a partition counts from its invoke, whenever its answer came.
func TestEvidenceByInvoke(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		process     string // the commit's process
		lateConsume bool   // the consume is written after the revocation (else before the commit)
		check       func([]history.Event, *history.Observations) Verdict
		sentAfter   string // what a commit sent after the revocation must not do
	}{
		{"ConsumedOnlyOwned: a commit sent while owning covers a late consume, answered after or not", "a", true, ConsumedOnlyOwned,
			"a commit sent after the ownership ended excused the consume"},
		{"CommittedBeforeRevoked: the commit counts from its invoke, not its answer", "a/commit", false, CommittedBeforeRevoked,
			"a commit sent after the revocation counted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(sentBefore bool) Verdict {
				h := newHist(t)
				h.assigned("a", 1, 0)
				if !tc.lateConsume {
					h.consume("a", 1, 0, 5)
				}
				c := h.commitOf("a", 1, 0, 6)
				if sentBefore {
					h.invoke(tc.process, history.FCommit, c)
				}
				h.revoked("a", 1, 0)
				if !sentBefore {
					h.invoke(tc.process, history.FCommit, c)
				}
				h.complete(tc.process, history.FCommit, history.OK, c)
				if tc.lateConsume {
					h.consume("a", 1, 0, 5) // written after the revocation
				}
				return tc.check(h.events(), nil)
			}
			mustHold(t, run(true))
			if v := run(false); v.Holds {
				t.Fatalf("%s: %+v", tc.sentAfter, v)
			}
		})
	}
}
