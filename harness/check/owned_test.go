package check

import (
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

func TestConsumedOnlyOwned(t *testing.T) {
	t.Parallel()
	t.Run("consumption inside ownerships holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.consume("a", 1, 0, 0)
		h.consume("a", 1, 1, 0)
		h.revoked("a", 2, 1)
		h.assigned("b", 3, 1)
		h.consume("a", 2, 0, 1)
		h.consume("b", 3, 1, 1)
		h.info("a", history.FLeft, history.Membership{Member: "a", Epoch: 2})
		h.assigned("b", 4, 0)
		h.consume("b", 4, 0, 2)
		mustHold(t, ConsumedOnlyOwned(h.events(), nil))
	})
	t.Run("consuming after the revocation fails", func(t *testing.T) {
		h := newHist(t)
		a := h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 0)
		r := h.revoked("a", 1, 0)
		h.assigned("b", 2, 0)
		c := h.consume("a", 1, 0, 1)
		mustSay(t, mustCite(t, ConsumedOnlyOwned(h.events(), nil), a, r, c), "revoked", "t-0")
	})
	t.Run("consuming after a fence fails", func(t *testing.T) {
		h := newHist(t)
		a := h.assigned("a", 1, 0)
		fenced := h.info("a", history.FFenced, history.Membership{Member: "a", Epoch: 1, Error: "FENCED_MEMBER_EPOCH"})
		c := h.consume("a", 1, 0, 4)
		mustCite(t, ConsumedOnlyOwned(h.events(), nil), a, fenced, c)
	})
	t.Run("consuming after a session expiry or loss fails", func(t *testing.T) {
		for _, end := range []string{history.FSessionExpired, history.FLost} {
			h := newHist(t)
			a := h.assigned("a", 1, 0)
			var e int64
			if end == history.FLost {
				e = h.lost("a", 1, 0)
			} else {
				e = h.info("a", end, history.Membership{Member: "a", Epoch: 1})
			}
			c := h.consume("a", 1, 0, 4)
			mustCite(t, ConsumedOnlyOwned(h.events(), nil), a, e, c)
		}
	})
	t.Run("consuming a partition never assigned fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		c := h.consume("a", 1, 1, 0)
		mustSay(t, mustCite(t, ConsumedOnlyOwned(h.events(), nil), c), "never been assigned")
	})
	t.Run("consuming before the assignment fails", func(t *testing.T) {
		h := newHist(t)
		c := h.consume("b", 1, 0, 0)
		h.assigned("b", 1, 0)
		mustCite(t, ConsumedOnlyOwned(h.events(), nil), c)
	})
	t.Run("record written late but covered by the member's commit before revoking holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 0)
		h.commit("a", 1, history.OK, "", 0, 2) // position 2: offset 1 was handed out
		h.revoked("a", 1, 0)
		h.consume("a", 1, 0, 1)
		mustHold(t, ConsumedOnlyOwned(h.events(), nil))
	})
	t.Run("a record above the last commit written after the revocation fails", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 2)
		r := h.revoked("a", 1, 0)
		c := h.consume("a", 1, 0, 2)
		mustCite(t, ConsumedOnlyOwned(h.events(), nil), r, c)
	})
	t.Run("a commit from an earlier ownership excuses nothing", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.commit("a", 1, history.OK, "", 0, 9)
		h.revoked("a", 1, 0)
		a2 := h.assigned("a", 3, 0)
		r2 := h.revoked("a", 3, 0)
		c := h.consume("a", 3, 0, 5)
		mustCite(t, ConsumedOnlyOwned(h.events(), nil), a2, r2, c)
	})
	t.Run("All reports it", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.revoked("a", 1, 0)
		h.consume("a", 1, 0, 1)
		for _, v := range All(h.events(), nil, history.Plan{}) {
			if v.Name == "ConsumedOnlyOwned" {
				if v.Holds {
					t.Fatal("ConsumedOnlyOwned holds in All")
				}
				return
			}
		}
		t.Fatal("All has no ConsumedOnlyOwned verdict")
	})
}

// autoCommit records a commit member m made on its own (process m/commit), as run.HookRecorder does.
func (h *hist) autoCommit(m string, epoch int32, t history.Type, errName string, p int32, off int64) (int64, int64) {
	h.t.Helper()
	c := history.Commit{Member: m, Protocol: h.proto, Epoch: epoch, Offsets: []history.OffsetAt{{Topic: "t", Partition: p, Offset: off}}}
	return h.commitAs(m+"/commit", c, t, errName)
}

func TestCommittedBeforeRevoked(t *testing.T) {
	t.Parallel()
	t.Run("auto-commit before the revocation holds", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.consume("a", 1, 0, 0)
		h.consume("a", 1, 0, 1)
		h.consume("a", 1, 1, 0)
		h.autoCommit("a", 1, history.OK, "", 0, 2)
		h.revoked("a", 2, 0)
		mustHold(t, CommittedBeforeRevoked(h.events(), nil))
	})
	t.Run("a failed commit before the revocation still counts as sent", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 0)
		h.autoCommit("a", 1, history.Fail, "STALE_MEMBER_EPOCH", 0, 1)
		h.revoked("a", 2, 0)
		mustHold(t, CommittedBeforeRevoked(h.events(), nil))
	})
	t.Run("the driver's commit covers it too", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0, 1)
		h.consume("a", 1, 1, 0)
		h.autoCommit("a", 1, history.OK, "", 1, 1)
		h.consume("a", 1, 0, 3)
		h.commit("a", 1, history.OK, "", 0, 4)
		h.revoked("a", 2, 0)
		mustHold(t, CommittedBeforeRevoked(h.events(), nil))
	})
	t.Run("revoking without committing what was consumed fails", func(t *testing.T) {
		h := newHist(t)
		a := h.assigned("a", 1, 0, 1)
		h.consume("a", 1, 1, 0)
		h.autoCommit("a", 1, history.OK, "", 1, 1) // a commits on its own
		h.consume("a", 1, 0, 0)
		h.commit("a", 1, history.OK, "", 0, 1)
		h.consume("a", 1, 0, 1) // not covered
		r := h.revoked("a", 2, 0)
		mustSay(t, mustCite(t, CommittedBeforeRevoked(h.events(), nil), a, r), "offset 1")
	})
	t.Run("a commit from before the ownership does not cover it", func(t *testing.T) {
		h := newHist(t)
		h.autoCommit("a", 1, history.OK, "", 0, 9)
		a := h.assigned("a", 2, 0)
		h.consume("a", 2, 0, 3)
		r := h.revoked("a", 3, 0)
		mustCite(t, CommittedBeforeRevoked(h.events(), nil), a, r)
	})
	t.Run("members that never commit on their own are not judged", func(t *testing.T) {
		h := newHist(t)
		h.assigned("a", 1, 0)
		h.consume("a", 1, 0, 0)
		h.revoked("a", 2, 0)
		mustHold(t, CommittedBeforeRevoked(h.events(), nil))
	})
	// The same auto-committed ownership, consumed past its commit, ends in a revocation of a
	// classic member or in a loss: neither is a hand-off the rule judges.
	for _, c := range []struct {
		name, proto string
		end         func(h *hist, m string, epoch int32, ps ...int32) int64
	}{
		{"classic members are not judged", history.ProtocolClassic, (*hist).revoked},
		{"a loss is not a clean hand-off", history.ProtocolConsumer, (*hist).lost},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHist(t)
			h.proto = c.proto
			h.assigned("a", 1, 0)
			h.autoCommit("a", 1, history.OK, "", 0, 0)
			h.consume("a", 1, 0, 0)
			c.end(h, "a", 1, 0)
			mustHold(t, CommittedBeforeRevoked(h.events(), nil))
		})
	}
}
