package consumergroup

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// joinGroup has n members join group "g" on topic t (n partitions) at now
// and heartbeats them, acknowledging what each was given, until every
// member is at the assignment epoch with its target and the group is
// Stable. The assignment interval is 1 s (Kafka's default, KIP-1263), so
// the wave computes a handful of targets, not one per member.
func joinGroup(tb testing.TB, n int) (*Manager, Topics, []string, time.Time) {
	tb.Helper()
	interval := time.Second
	m, err := New(version.MustParse("4.4.0").Profile(), Config{AssignmentInterval: &interval})
	if err != nil {
		tb.Fatal(err)
	}
	var id [16]byte
	copy(id[:], "topic:t")
	topics := Topics{{Name: "t", ID: id, Partitions: n}}
	now := time.UnixMilli(1_700_000_000_000)
	ids := make([]string, n)
	epochs := make([]int32, n)
	owned := make([][]kmsg.ConsumerGroupHeartbeatRequestTopic, n)
	rc := RequestContext{ClientID: "c", ClientHost: "/127.0.0.1"}
	hb := func(i int) {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberEpoch = 1, "g", epochs[i]
		req.RebalanceTimeoutMillis = -1
		if ids[i] == "" {
			req.MemberID = fmt.Sprintf("member-%06d", i)
			req.RebalanceTimeoutMillis = 60000
			req.SubscribedTopicNames = []string{"t"}
			req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		} else {
			req.MemberID = ids[i]
			req.Topics = owned[i]
		}
		resp, _ := m.Heartbeat(now, rc, req, topics)
		if resp.ErrorCode != 0 {
			tb.Fatalf("heartbeat of member %d: error %d", i, resp.ErrorCode)
		}
		ids[i], epochs[i] = *resp.MemberID, resp.MemberEpoch
		if resp.Assignment != nil {
			owned[i] = owned[i][:0]
			for _, t := range resp.Assignment.Topics {
				owned[i] = append(owned[i], kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
			}
		}
	}
	for i := range n {
		hb(i)
	}
	for round := 0; ; round++ {
		if round == 20 {
			tb.Fatalf("%d members: not stable after %d rounds of heartbeats", n, round)
		}
		now = now.Add(2 * interval)
		for i := range n {
			hb(i)
		}
		if g := m.rp.groups["g"]; g.state() == StateStable {
			return m, topics, ids, now
		}
	}
}

// TestFailedWriteLeavesGroupUnchanged: a write whose records replay refuses
// partway (here a member that joins with a partition another member owns at
// a higher epoch, after a member's tombstones) leaves the group as it was:
// its members, their order, the partition epochs and the subscription counts
// (applyAll puts back what the records changed instead of copying the group
// first).
func TestFailedWriteLeavesGroupUnchanged(t *testing.T) {
	m, topics, ids, _ := joinGroup(t, 6)
	g := m.rp.groups["g"]
	before := m.State()
	order := slices.Clone(g.order)
	var owned records.CurrentAssignmentTopic
	var ownerEpoch int32
	for _, mb := range g.members {
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
	gone := ids[1]
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
	_ = topics
}
