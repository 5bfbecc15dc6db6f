package consumergroup

import (
	"slices"
	"testing"

	"github.com/groupquake/groupquake/coordinator/records"
)

// TestFailedWriteLeavesGroupUnchanged: a write whose records replay refuses
// partway (here a member that joins with a partition another member owns at
// a higher epoch, after a member's tombstones) leaves the group as it was:
// its members, their order, the partition epochs and the subscription counts
// (applyAll puts back what the records changed instead of copying the group
// first).
func TestFailedWriteLeavesGroupUnchanged(t *testing.T) {
	m, _, ids, _ := joinGroup(t, 6)
	g := m.rp.groups["g"]
	before := m.State()
	order := slices.Clone(g.order)
	gone := ids[1]
	var owned records.CurrentAssignmentTopic
	var ownerEpoch int32
	for _, mb := range g.members {
		if mb.id == gone {
			continue // its partitions are free once its tombstones are applied
		}
		for tid, ps := range mb.assigned {
			for p := range ps {
				owned = records.CurrentAssignmentTopic{TopicID: tid, Partitions: []int32{p}}
				ownerEpoch = mb.epoch
			}
		}
	}
	if ownerEpoch == 0 {
		t.Fatal("no member owns a partition")
	}
	recs := []records.Record{
		tombstone(records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: gone}),
		tombstone(records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: gone}),
		tombstone(records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: gone}),
		{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "new"}, Value: &records.ConsumerGroupMemberMetadataValue{
			ClientID: "c", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t", "u"}, RebalanceTimeoutMs: 60000, ServerAssignor: optional("range"),
		}},
		{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "new"}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch: ownerEpoch - 1, State: records.MemberStable, AssignedPartitions: []records.CurrentAssignmentTopic{owned},
		}},
	}
	if err := m.applyAll("g", recs); err == nil {
		t.Fatal("a partition owned at a higher epoch was given to a new member, want the write refused")
	}
	if g2 := m.rp.groups["g"]; g2 != g {
		t.Fatal("the group was replaced")
	}
	if after := m.State(); !after.Equal(before) {
		t.Fatalf("refused write changed the group:\nbefore %s\nafter  %s", before.Format(nil), after.Format(nil))
	}
	if !slices.Equal(g.order, order) {
		t.Fatalf("member order %v, was %v", g.order, order)
	}
	if err := m.CheckIndexes(); err != nil {
		t.Fatal(err)
	}
	if g.nameCounts["t"] != 6 || len(g.nameCounts) != 1 || g.askedAssignors != 0 {
		t.Fatalf("counts %v, %d asking for an assignor; want t: 6, none asking", g.nameCounts, g.askedAssignors)
	}
}
