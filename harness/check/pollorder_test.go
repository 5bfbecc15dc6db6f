package check

import (
	"slices"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// The workload writes a Poll's records after Poll returned; a member's
// heartbeat goroutine may report a fence's loss meanwhile, so the history
// shows records after the loss that were handed out before it (a Kafka
// 4.4.0 broker-faults run, seed 4361399420741873081: m3's records 17 and 18
// of a batch of 5–18, written after its UNKNOWN_MEMBER_ID loss, were
// called consumed while not owned and duplicated without a rebalance).
// The member's poll counts say which came first.

func (h *hist) ownedAfterPoll(f, m string, epoch int32, polls uint64, ps ...int32) int64 {
	h.t.Helper()
	return h.info(m, f, history.Assignment{Member: m, Protocol: h.proto, Epoch: epoch, Partitions: history.TPs("t", ps...), AfterPoll: &polls})
}

func (h *hist) consumePolled(m string, epoch, p int32, off int64, poll uint64) int64 {
	h.t.Helper()
	return h.info(m, history.FConsume, history.Consume{Member: m, Topic: "t", Partition: p, Offset: off, Seq: 1000*int64(p) + off, Epoch: epoch, Poll: poll})
}

// fencedWhileWriting is the run's order: poll 2 returned t-0 offsets 2–4,
// the workload wrote offset 2, the member reported its fence and the loss
// (after 2 Polls), then the workload wrote offsets 3 and 4 of poll 2; then
// the record of later poll (0 for a member that does not number its Polls).
func fencedWhileWriting(t *testing.T, later uint64, numbered bool) (h *hist, late int64) {
	h = newHist(t)
	poll := func(n uint64) uint64 {
		if numbered {
			return n
		}
		return 0
	}
	// owned reports a's ownership of t-0 changing (f), after polls Polls when it numbers them.
	owned := func(f string, polls uint64) {
		if numbered {
			h.ownedAfterPoll(f, "a", 1, polls, 0)
		} else {
			h.owned(f, "a", 1, 0)
		}
	}
	owned(history.FAssigned, 0)
	h.consumePolled("a", 1, 0, 0, poll(1))
	h.consumePolled("a", 1, 0, 1, poll(1))
	h.consumePolled("a", 1, 0, 2, poll(2))
	h.info("a", history.FFenced, history.Membership{Member: "a", Epoch: 1, Error: "UNKNOWN_MEMBER_ID"})
	owned(history.FLost, 2)
	h.consumePolled("a", 1, 0, 3, poll(2))
	h.consumePolled("a", 1, 0, 4, poll(2))
	if later > 0 {
		late = h.consumePolled("a", 1, 0, 5, poll(later))
	}
	return h, late
}

func TestPollCountsOrderRecordsBeforeALoss(t *testing.T) {
	t.Parallel()
	t.Run("records of a Poll that returned before the loss hold", func(t *testing.T) {
		h, _ := fencedWhileWriting(t, 0, true)
		mustHold(t, ConsumedOnlyOwned(h.events(), nil))
		mustHold(t, BoundedDuplicates(h.events(), nil))
	})
	t.Run("a record of a Poll after the loss fails", func(t *testing.T) {
		h, late := fencedWhileWriting(t, 3, true)
		v := ConsumedOnlyOwned(h.events(), nil)
		if v.Holds || len(v.Violations) != 1 || !slices.Contains(v.Violations[0].EventIndexes, late) {
			t.Fatalf("want one violation citing event %d: %+v", late, v)
		}
	})
	t.Run("without poll counts the history's order decides", func(t *testing.T) {
		h, _ := fencedWhileWriting(t, 0, false)
		if v := ConsumedOnlyOwned(h.events(), nil); v.Holds {
			t.Fatalf("records written after the loss, with nothing to place them before it, hold: %+v", v)
		}
	})
	t.Run("a record of a Poll before a new ownership is not put under it", func(t *testing.T) {
		// Poll 1 returned t-0 offset 0 while a owned it; a lost it (after
		// 1 Poll) and was given it back (after 1 Poll); the record is
		// written after the new assignment: it belongs to the first.
		h := newHist(t)
		h.ownedAfterPoll(history.FAssigned, "a", 1, 0, 0)
		h.ownedAfterPoll(history.FLost, "a", 1, 1, 0)
		h.ownedAfterPoll(history.FAssigned, "a", 2, 1, 0)
		h.consumePolled("a", 1, 0, 0, 1)
		f := build(h.events(), nil)
		c := f.consumes[0][0]
		if c.interval != f.byTP[0][0] {
			t.Fatalf("record of poll 1 placed under ownership %d, want the first (%d)", c.interval, f.byTP[0][0])
		}
	})
}

// The member reports an assignment after it made it (its events go to the
// hooks once its ownership lock is released), and a Poll meanwhile hands out
// a record of the new partition, which the workload writes first: the
// history shows the record before the assignment. Seen once under load in
// harness/run's TestRunHealsTheLinksAnEarlierRunLeft ("m1 consumed
// gq-53-records-3 offset 6 ... never been assigned"). The poll counts say the
// record's Poll returned after the assignment was made.
func TestPollCountsPlaceARecordWrittenBeforeItsAssignment(t *testing.T) {
	t.Parallel()
	// writtenFirst: a's record of poll 1 of t-0 is written, then a's
	// assignment of t-0 made after afterPoll Polls; restarted puts a new
	// process of a between them.
	writtenFirst := func(t *testing.T, afterPoll uint64, restarted bool) (*hist, int64) {
		h := newHist(t)
		rec := h.consumePolled("a", 1, 0, 0, 1)
		if restarted {
			h.info("a", history.FRestart, history.Restart{Member: "a", Action: history.RestartStarted, Attempt: 1})
		}
		h.ownedAfterPoll(history.FAssigned, "a", 1, afterPoll, 0)
		return h, rec
	}
	t.Run("a record of a Poll after the assignment holds", func(t *testing.T) {
		h, _ := writtenFirst(t, 0, false)
		mustHold(t, ConsumedOnlyOwned(h.events(), nil))
	})
	t.Run("a record of a Poll before the assignment fails", func(t *testing.T) {
		h, rec := writtenFirst(t, 1, false)
		v := ConsumedOnlyOwned(h.events(), nil)
		if v.Holds || len(v.Violations) != 1 || !slices.Contains(v.Violations[0].EventIndexes, rec) {
			t.Fatalf("want one violation citing event %d: %+v", rec, v)
		}
	})
	t.Run("a record of another process of the member fails", func(t *testing.T) {
		// Poll counts start over with each process: poll 1 of the old one
		// says nothing of the new one's assignment.
		h, rec := writtenFirst(t, 0, true)
		v := ConsumedOnlyOwned(h.events(), nil)
		if v.Holds || len(v.Violations) != 1 || !slices.Contains(v.Violations[0].EventIndexes, rec) {
			t.Fatalf("want one violation citing event %d: %+v", rec, v)
		}
	})
	t.Run("an ownership that ended before the record's Poll does not cover it", func(t *testing.T) {
		h := newHist(t)
		rec := h.consumePolled("a", 1, 0, 0, 3)
		h.ownedAfterPoll(history.FAssigned, "a", 1, 0, 0)
		h.ownedAfterPoll(history.FRevoked, "a", 1, 2, 0)
		v := ConsumedOnlyOwned(h.events(), nil)
		if v.Holds || len(v.Violations) != 1 || !slices.Contains(v.Violations[0].EventIndexes, rec) {
			t.Fatalf("want one violation citing event %d: %+v", rec, v)
		}
	})
}
