package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// consumeRange: m consumes t-p offsets from to to, one event each.
func (h *hist) consumeRange(m string, epoch, p int32, from, to int64) (last int64) {
	h.t.Helper()
	for o := from; o <= to; o++ {
		last = h.consume(m, epoch, p, o)
	}
	return last
}

// offsetFetch: m says it read the committed offset off of t-p (-1: none).
func (h *hist) offsetFetch(m string, p int32, o int64) int64 {
	h.t.Helper()
	return h.info(m, history.FOffsetFetch, map[string]any{"member": m, "offsets": []history.OffsetAt{off(p, o)}})
}

// memberFault: the nemesis applies fault what to m and heals it.
func (h *hist) memberFault(what, m string) (stop int64) {
	h.t.Helper()
	f := history.Fault{What: what, Target: []string{m}}
	h.call("nemesis/0", history.FFaultStart, f, history.OK, f)
	stop, _ = h.call("nemesis/0", history.FFaultStop, f, history.OK, f)
	return stop
}

// aReadToFour: member a owns t-0 at epoch 1 and has consumed its offsets 0 to 4; last is the
// event of offset 4.
func aReadToFour(t *testing.T) (h *hist, last int64) {
	t.Helper()
	h = newHist(t)
	h.assigned("a", 1, 0)
	return h, h.consumeRange("a", 1, 0, 0, 4)
}

// aConsumesFourWhileCommitting: member a owns t-0 at epoch 1, has consumed its offsets 0 to 3 and
// sent a commit of offset 5, and consumes offset 4 while that commit is unanswered.
func aConsumesFourWhileCommitting(t *testing.T) *hist {
	t.Helper()
	h := newHist(t)
	h.assigned("a", 1, 0)
	h.consumeRange("a", 1, 0, 0, 3)
	h.invoke("a", history.FCommit, h.commitOf("a", 1, 0, 5))
	h.consume("a", 1, 0, 4)
	return h
}

func TestCommitsFollowConsumedRules(t *testing.T) {
	t.Parallel()
	judge := func(h *hist) Verdict { return CommitsFollowConsumed(h.events(), nil) }

	// (b): one past a record the member consumed.
	t.Run("a commit one past the last record consumed holds", func(t *testing.T) {
		h, _ := aReadToFour(t)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.commit("a", 1, history.OK, "", 0, 3) // an earlier position is one it reached too
		mustHoldNote(t, judge(h), "2 commits judged: 2 one past a record the member consumed before the answer (0 of them")
	})
	t.Run("a commit ahead of the last record consumed fails", func(t *testing.T) {
		h, last := aReadToFour(t)
		inv, ack := h.commit("a", 1, history.OK, "", 0, 7)
		v := judge(h)
		x := mustCite(t, v, inv, ack, last)
		mustFailOnce(t, v, []int64{inv, ack, last}, "a committed t-0 at offset 7 (sent at event "+itoa(inv)+", accepted at event "+itoa(ack)+")",
			"the highest record of it it had consumed was offset 4")
		if strings.Contains(x.Message, "started again") {
			t.Fatalf("no process of a started again: %q", x.Message)
		}
	})
	t.Run("the first read of the highest record is cited", func(t *testing.T) {
		h := newHist(t)
		h.offsetFetch("a", 0, 3)
		h.assigned("a", 1, 0)
		top := h.consume("a", 1, 0, 3)
		h.consume("a", 1, 0, 2)
		h.consume("a", 1, 0, 3) // a re-read (BoundedDuplicates' business)
		inv, _ := h.commit("a", 1, history.OK, "", 0, 9)
		mustFailOnce(t, judge(h), []int64{inv, top}, "was offset 3 (event "+itoa(top)+")")
	})
	t.Run("a commit never answered counts every record before the end", func(t *testing.T) {
		h := aConsumesFourWhileCommitting(t)
		mustHoldNote(t, judge(h), "1 commits judged: 1 one past")
		h.invoke("a/2", history.FCommit, h.commitOf("a", 1, 0, 8))
		mustFailSaying(t, judge(h), "never answered")
	})
	t.Run("a commit one past more than the last record fails, by one", func(t *testing.T) {
		h, _ := aReadToFour(t)
		inv, ack := h.commit("a", 1, history.OK, "", 0, 6)
		mustFailOnce(t, judge(h), []int64{inv, ack}, "offset 6")
	})
	// The workload writes a Poll's records after Poll returned: a commit of the position that
	// Poll reached may be sent before they are written, and answered after.
	t.Run("a record written after the commit was sent and before its answer counts", func(t *testing.T) {
		h := aConsumesFourWhileCommitting(t)
		h.complete("a", history.FCommit, history.OK, h.commitOf("a", 1, 0, 5))
		mustHoldNote(t, judge(h), "(1 of them with the record written only after the commit was sent)")
	})
	t.Run("a record written only after the answer does not", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consumeRange("a", 1, 0, 0, 3)
		inv, ack := h.commit("a", 1, history.OK, "", 0, 5)
		h.consume("a", 1, 0, 4)
		mustFailOnce(t, judge(h), []int64{inv, ack}, "offset 3")
	})
	t.Run("a record another member consumed does not", func(t *testing.T) {
		h := newHist(t)
		h.assigned("b", 1, 1)
		h.consumeRange("b", 1, 0, 0, 4) // b reads t-0 (ConsumedOnlyOwned's business)
		h.assigned("a", 1, 0)
		inv, _ := h.commit("a", 1, history.OK, "", 0, 5)
		mustFailSaying(t, judge(h), "it had consumed no record of it")
		mustCite(t, judge(h), inv)
	})

	// (a): a position the member started from.
	t.Run("a commit of the offset the previous owner committed holds", func(t *testing.T) {
		h, _ := aReadToFour(t)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		h.commit("b", 2, history.OK, "", 0, 5) // nothing new to read: b commits where it starts
		mustHoldNote(t, judge(h), "1 at a position the member started from")
	})
	t.Run("a commit sent after the member began reading is no start of it", func(t *testing.T) {
		h := newHist(t)
		h.takeover()                           // a at epoch 1, b at epoch 2: a is a zombie
		h.consumeRange("b", 2, 0, 0, 2)        // b starts at the log's start
		h.consumeRange("a", 1, 0, 0, 8)        // a reads on
		h.commit("a", 1, history.OK, "", 0, 9) // a reached 9 (FencedCommitsRejected's business)
		inv, ack := h.commit("b", 2, history.OK, "", 0, 9)
		mustFailOnce(t, judge(h), []int64{inv, ack}, "b committed t-0 at offset 9", "offset 2")
	})
	t.Run("a member that takes a partition back starts from its committed offset again", func(t *testing.T) {
		h, _ := aReadToFour(t)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		h.consumeRange("b", 2, 0, 5, 9)
		h.commit("b", 2, history.OK, "", 0, 10)
		h.revoked("b", 2, 0)
		h.assigned("a", 3, 0)
		h.commit("a", 3, history.OK, "", 0, 10)
		mustHoldNote(t, judge(h), "1 at a position the member started from")
	})
	t.Run("a committed offset the member read holds", func(t *testing.T) {
		h := newHist(t)
		h.offsetFetch("a", 0, 12) // committed before the history began
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 12)
		mustHoldNote(t, judge(h), "1 at a position the member started from")
	})
	t.Run("a committed offset another member read, or none, is no start", func(t *testing.T) {
		h := newHist(t)
		h.offsetFetch("b", 0, 12)
		h.offsetFetch("a", 0, -1)
		h.assigned("a", 1, 0)
		inv, ack := h.commit("a", 1, history.OK, "", 0, 12)
		mustFailOnce(t, judge(h), []int64{inv, ack}, "it read no committed offset 12")
	})
	t.Run("a committed-offset read the history cannot decode is no start", func(t *testing.T) {
		h := newHist(t)
		h.info("a", history.FOffsetFetch, map[string]any{"member": 5, "offsets": []history.OffsetAt{off(0, 12)}})
		h.assigned("a", 1, 0)
		inv, _ := h.commit("a", 1, history.OK, "", 0, 12)
		mustCite(t, judge(h), inv)
	})
	t.Run("the log's start holds where nothing was committed", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 0)
		mustHoldNote(t, judge(h), "1 at a position the member started from")
	})

	// (c): an offset the member committed before.
	t.Run("a wrong position committed again is reported once", func(t *testing.T) {
		h, _ := aReadToFour(t)
		first, _ := h.commit("a", 1, history.Info, "REQUEST_TIMED_OUT", 0, 9)
		h.commit("a", 1, history.OK, "", 0, 9)
		v := judge(h)
		mustFailOnce(t, v, []int64{first}, "of unknown outcome")
		mustNote(t, v, "1 repeating the member's own earlier commit")
	})
	t.Run("a rejected commit excuses nothing", func(t *testing.T) {
		h, _ := aReadToFour(t)
		h.commit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 9) // certainly not written: not judged
		inv, ack := h.commit("a", 1, history.OK, "", 0, 9)
		v := judge(h)
		mustFailOnce(t, v, []int64{inv, ack})
		mustNote(t, v, "1 commits certainly not written")
	})

	// This incarnation: a process started again has only the committed offsets.
	for _, what := range []string{"member-crash", "member-restart", "member-leave"} {
		t.Run("what a process consumed before a "+what+" is no position of the next one", func(t *testing.T) {
			h, _ := aReadToFour(t)
			h.lost("a", 1, 0)
			heal := h.memberFault(what, "a")
			h.assigned("a", 3, 0)
			inv, ack := h.commit("a", 3, history.OK, "", 0, 5)
			mustFailOnce(t, judge(h), []int64{inv, ack}, "since its process started again (event "+itoa(heal)+")")
		})
	}
	t.Run("what a frozen process consumed still is", func(t *testing.T) {
		h, _ := aReadToFour(t)
		h.memberFault("member-freeze", "a")
		h.commit("a", 1, history.OK, "", 0, 5)
		mustHold(t, judge(h))
	})
	t.Run("a supervisor's restart starts a new process", func(t *testing.T) {
		h, _ := aReadToFour(t)
		h.lost("a", 1, 0)
		h.info("a", history.FRestart, history.Restart{Member: "a", Action: history.RestartStarted, Attempt: 1})
		h.assigned("a", 3, 0)
		inv, _ := h.commit("a", 3, history.OK, "", 0, 5)
		mustCite(t, judge(h), inv)
	})
	t.Run("the history's first event counts as any other", func(t *testing.T) {
		h := newHist(t)
		start := h.info("a", history.FRestart, history.Restart{Member: "a", Action: history.RestartStarted, Attempt: 1})
		h.assigned("a", 1, 0)
		h.consumeRange("a", 1, 0, 0, 4)
		h.commit("a", 1, history.OK, "", 0, 9)
		mustFailSaying(t, judge(h), "(event "+itoa(start)+")")
		g := newHist(t)
		first := g.consume("a", 1, 0, 4) // a record of an ownership the history began after
		g.commit("a", 1, history.OK, "", 0, 5)
		mustHold(t, judge(g))
		g.commit("a", 1, history.OK, "", 0, 7)
		mustCite(t, judge(g), first)
	})

	t.Run("reset commits and unwritten commits are not judged", func(t *testing.T) {
		h := newHist(t)
		h.offsetFetch("a", 0, 5)
		h.assigned("a", 1, 0)
		h.consumeRange("a", 1, 0, 5, 9)
		h.reset("a", 0, 2)                     // a position a never reached: the workload moved it there
		h.commit("a", 1, history.OK, "", 0, 2) // where the reset put it
		h.commit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 40)
		mustHoldNote(t, judge(h), "not judged: 1 reset commits, 1 commits certainly not written")
	})
	t.Run("an answer recorded without its invoke was answered where it stands", func(t *testing.T) {
		h := newHist(t)
		h.commit("a", 1, history.OK, "", 0, 5)
		h.assigned("a", 1, 0)
		h.consumeRange("a", 1, 0, 0, 4)
		// The history lost the invoke (HistoryWellFormed's business): it begins with the answer.
		es := slices.Clone(h.events()[1:])
		for i := range es {
			es[i].Index = int64(i)
		}
		mustFailOnce(t, CommitsFollowConsumed(es, nil), []int64{0}, "accepted at event 0")
	})
	t.Run("no commit is nothing to judge", func(t *testing.T) {
		h, _ := aReadToFour(t)
		v := judge(h)
		mustJudgeNothing(t, v, "no commit was made in the history")
		mustNote(t, v, "vacuous")
	})
}

// TestCommitsFollowConsumedOnARealRun: a real run holds as recorded; with one accepted commit a
// record further on, it fails there and only there.
func TestCommitsFollowConsumedOnARealRun(t *testing.T) {
	t.Parallel()
	events, obs, _ := loadRun(t, freezeSeed)
	mustHold(t, CommitsFollowConsumed(events, obs))
	ahead := slices.Clone(events)
	at := -1
	for i, e := range ahead {
		if e.F == history.FCommit && e.Type == history.OK && i > len(ahead)/2 {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatal("the run has no accepted commit in its second half")
	}
	c := ahead[at].Value.(history.Commit)
	c.Offsets = slices.Clone(c.Offsets)
	c.Offsets[0].Offset++
	ahead[at].Value = c
	v := CommitsFollowConsumed(ahead, obs)
	mustFailOnce(t, v, []int64{ahead[at].Index}, c.Offsets[0].TP().String()+" at offset "+itoa(c.Offsets[0].Offset))
}
