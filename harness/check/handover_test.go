package check

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/history"
)

// static announces m's instance id the way its heartbeats do.
func (h *hist) static(m, id string) {
	h.t.Helper()
	in := history.Heartbeat{Member: m, InstanceID: id, Protocol: h.proto}
	h.call(m+"/hb", history.FHeartbeat, in, history.OK, in)
}

// A static member's bounce into the other protocol: Kafka gives the newcomer with its instance id
// the member's assignment at the member's epoch (GroupMetadataManager
// .getOrMaybeSubscribeStaticConsumerGroupMember), so one (partition, epoch) pair has two members of
// the history in turn.
func TestStaticHandover(t *testing.T) {
	t.Parallel()
	t.Run("a bounce under one instance id holds", func(t *testing.T) {
		h := newHist(t)
		h.static("m1", "i1")
		h.assigned("m1", 2, 0, 1)
		h.commit("m1", 2, history.OK, "", 0, 3)
		h.revoked("m1", 2, 0, 1)
		h.static("m3", "i1")
		h.assigned("m3", 2, 0, 1)
		h.commit("m3", 2, history.OK, "", 0, 5)
		h.revoked("m3", 2, 0, 1)
		h.static("m5", "i1") // and back
		h.assigned("m5", 2, 0, 1)
		h.commit("m5", 2, history.OK, "", 1, 7)
		ev := h.events()
		mustHold(t, ValidPartitionEpoch(ev, nil))
		mustHold(t, FencedCommitsRejected(ev, nil))
		mustHold(t, NoDoubleOwnership(ev, nil))
		if v := ValidPartitionEpoch(ev, nil); !strings.Contains(strings.Join(v.Notes, " "), "4 passed from a static member") {
			t.Fatalf("notes do not count the 4 handovers: %v", v.Notes)
		}
	})
	t.Run("another instance id is a second owner", func(t *testing.T) {
		h := newHist(t)
		h.static("m1", "i1")
		mustCiteSecondOwner(t, h, "m1", "m3", 2, func() { h.static("m3", "i2") })
	})
	t.Run("dynamic members are second owners", func(t *testing.T) {
		mustCiteSecondOwner(t, newHist(t), "m1", "m3", 2, nil)
	})
	t.Run("the same instance id while the first still owns it is a second owner", func(t *testing.T) {
		h := newHist(t)
		h.static("m1", "i1")
		a := h.assigned("m1", 2, 0)
		h.static("m3", "i1")
		b := h.assigned("m3", 2, 0)
		mustCite(t, ValidPartitionEpoch(h.events(), nil), a, b)
	})
	t.Run("the old incarnation's commit after the handover fails", func(t *testing.T) {
		h := newHist(t)
		h.static("m1", "i1")
		h.assigned("m1", 2, 0)
		h.revoked("m1", 2, 0)
		h.static("m3", "i1")
		b := h.assigned("m3", 2, 0)
		inv, ok := h.commit("m1", 2, history.OK, "", 0, 4)
		mustSay(t, mustCite(t, FencedCommitsRejected(h.events(), nil), inv, ok, b), "under the same instance id")
	})
}
