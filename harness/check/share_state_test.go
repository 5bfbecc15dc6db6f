package check

import (
	"encoding/base64"
	"testing"

	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/harness/history"
)

var stateTopicID = [16]byte{9, 9}

// recovery builds what the observer reads after a run of topic t (one
// partition): the group at epoch 4 with no member, assignment epoch 4,
// partition 0 initialized, and a share state of start offset start with
// batches; DescribeShareGroupOffsets says described.
func recovery(t *testing.T, start, described int64, batches ...sharegroup.StateBatch) *history.ShareRecovery {
	t.Helper()
	rec := &history.ShareRecovery{HasRecords: true, TopicIDs: map[string]string{"t": base64.RawURLEncoding.EncodeToString(stateTopicID[:])},
		Describe: &history.ShareGroupDescription{State: "Empty", GroupEpoch: 4, AssignmentEpoch: 4},
		Starts:   []history.ShareStart{{Topic: "t", Partition: 0, StartOffset: described, End: 10}}}
	group := func(r sharegroup.GroupRecord) {
		k, v, err := sharegroup.EncodeGroupRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		rec.GroupRecords = append(rec.GroupRecords, history.RawRecord{Offset: int64(len(rec.GroupRecords)), Key: k, Value: v})
	}
	group(sharegroup.GroupRecord{Type: sharegroup.TypeStatePartitionMetadata, GroupID: "g", Value: &sharegroup.StatePartitionMetadataValue{
		InitializedTopics: []sharegroup.TopicInfo{{TopicID: stateTopicID, TopicName: "t", Partitions: []int32{0}}}}})
	group(sharegroup.GroupRecord{Type: sharegroup.TypeGroupMetadata, GroupID: "g", Value: &sharegroup.GroupMetadataValue{Epoch: 4}})
	group(sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMetadata, GroupID: "g", Value: &sharegroup.TargetAssignmentMetadataValue{AssignmentEpoch: 4}})
	k, v, err := sharegroup.EncodeStateRecord(sharegroup.StateRecord{Type: sharegroup.TypeShareSnapshot,
		Key: sharegroup.StateKey{GroupID: "g", TopicID: stateTopicID}, Value: &sharegroup.SnapshotValue{StartOffset: start, DeliveryCompleteCount: -1, StateBatches: batches}})
	if err != nil {
		t.Fatal(err)
	}
	rec.StateRecords = append(rec.StateRecords, history.RawRecord{Key: k, Value: v})
	return rec
}

func stateVerdict(t *testing.T, h *shareHist, rec *history.ShareRecovery) Verdict {
	t.Helper()
	evs := h.events()
	for _, v := range ShareVerdicts(evs, &history.Observations{Group: "g", ShareRecovery: rec}, sharePlan) {
		if v.Name == "ShareStateMatchesLog" {
			return v
		}
	}
	t.Fatal("no verdict ShareStateMatchesLog")
	return Verdict{}
}

// TestShareStateMatchesLog: the replayed state must agree with what the
// brokers describe and keep every acknowledgement the broker answered; a
// start offset that differs, an accepted record the state has as
// available, a group epoch that differs, a target assignment that shares
// a partition among more members than the share assignor allows, and a
// run without the observation fail; the run that agrees holds.
func TestShareStateMatchesLog(t *testing.T) {
	base := func() *shareHist {
		h := &shareHist{}
		h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 2, 1))
		h.ack("a", 200, 300, history.OK, "", ackOf(history.AckAccept, 0, 2))
		h.final(1000)
		return h
	}
	acked := sharegroup.StateBatch{FirstOffset: 2, LastOffset: 2, DeliveryState: sharegroup.StateAcknowledged, DeliveryCount: 1}
	wantHolds(t, stateVerdict(t, base(), recovery(t, 2, 2, acked)), true, "")
	wantHolds(t, stateVerdict(t, base(), recovery(t, 3, 3)), true, "")

	wantHolds(t, stateVerdict(t, base(), recovery(t, 2, 3, acked)), false, "start offset 2; DescribeShareGroupOffsets says 3")
	avail := acked
	avail.DeliveryState = sharegroup.StateAvailable
	wantHolds(t, stateVerdict(t, base(), recovery(t, 2, 2, avail)), false, "does not keep it")
	wantHolds(t, stateVerdict(t, base(), recovery(t, 1, 1, acked)), false, "t-0@1")

	rec := recovery(t, 3, 3)
	rec.Describe.GroupEpoch = 5
	wantHolds(t, stateVerdict(t, base(), rec), false, "ShareGroupDescribe says epoch 5")

	rec = recovery(t, 3, 3)
	rec.Describe.Members = []history.ShareGroupMember{{MemberID: "ghost", MemberEpoch: 4}}
	wantHolds(t, stateVerdict(t, base(), rec), false, "lists member ghost")

	// Two members on two partitions: the share assignor gives each
	// partition to ceil(2/2) = 1 member; a target assignment that gives
	// partition 0 to both is over the bound.
	plan2 := sharePlan
	plan2.Topics = []history.TopicPlan{{Name: "t", Partitions: 2}}
	twoMembers := func(second int32, initialized ...int32) *history.ShareRecovery {
		rec := recovery(t, 3, 3)
		rec.Starts = append(rec.Starts, history.ShareStart{Topic: "t", Partition: 1, StartOffset: -1})
		add := func(r sharegroup.GroupRecord) {
			k, v, _ := sharegroup.EncodeGroupRecord(r)
			rec.GroupRecords = append(rec.GroupRecords, history.RawRecord{Key: k, Value: v})
		}
		add(sharegroup.GroupRecord{Type: sharegroup.TypeStatePartitionMetadata, GroupID: "g", Value: &sharegroup.StatePartitionMetadataValue{
			InitializedTopics: []sharegroup.TopicInfo{{TopicID: stateTopicID, TopicName: "t", Partitions: initialized}}}})
		for i, m := range []string{"m1", "m2"} {
			p := int32(0)
			if i == 1 {
				p = second
			}
			add(sharegroup.GroupRecord{Type: sharegroup.TypeMemberMetadata, GroupID: "g", MemberID: m, Value: &sharegroup.MemberMetadataValue{SubscribedTopicNames: []string{"t"}}})
			add(sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMember, GroupID: "g", MemberID: m, Value: &sharegroup.TargetAssignmentMemberValue{
				TopicPartitions: []sharegroup.TopicPartitions{{TopicID: stateTopicID, Partitions: []int32{p}}}}})
		}
		add(sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMetadata, GroupID: "g", Value: &sharegroup.TargetAssignmentMetadataValue{AssignmentEpoch: 4}})
		for _, m := range []string{"m1", "m2"} {
			add(sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMember, GroupID: "g", MemberID: m})
			add(sharegroup.GroupRecord{Type: sharegroup.TypeMemberMetadata, GroupID: "g", MemberID: m})
		}
		return rec
	}
	verdictOn := func(rec *history.ShareRecovery) Verdict {
		for _, v := range ShareVerdicts(base().events(), &history.Observations{Group: "g", ShareRecovery: rec}, plan2) {
			if v.Name == "ShareStateMatchesLog" {
				return v
			}
		}
		t.Fatal("no verdict")
		return Verdict{}
	}
	wantHolds(t, verdictOn(twoMembers(1, 0, 1)), true, "")
	wantHolds(t, verdictOn(twoMembers(0, 0, 1)), false, "gives t-0 to 2 of 2 members, more than the share assignor's ceil(members/partitions) = 1")
	// Only partition 0 initialized: the assignor shares it among both
	// (GroupMetadataManager gives the assignor the initialized partitions
	// only), which is within the bound.
	wantHolds(t, verdictOn(twoMembers(0, 0)), true, "")

	v := stateVerdict(t, base(), nil)
	wantHolds(t, v, false, "no share_recovery")
}
