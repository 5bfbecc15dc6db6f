package check

import (
	"encoding/base64"
	"strings"
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
	wantHolds(t, verdictOn(twoMembers(0, 0, 1)), false, "gives t-0 to 2 of 2 members, more than the share assignor's ceil(members/partitions) = 1 (2 partitions initialized), 1 over it")
	// Only partition 0 initialized: the assignor shares it among both
	// (GroupMetadataManager gives the assignor the initialized partitions
	// only), which is within the bound.
	wantHolds(t, verdictOn(twoMembers(0, 0)), true, "")

	v := stateVerdict(t, base(), nil)
	wantHolds(t, v, false, "no share_recovery")
}

// TestShareAckErrorAppliedSighted: an accept answered NOT_LEADER_FOR_PARTITION
// of a record never delivered again, which the replayed __share_group_state
// keeps ACKNOWLEDGED (or below its start offset), or, without it, the final
// start offset passed, is a sighting of FindingShareAckErrorApplied. Not
// sighted: the state has the record available (the write did not land), the
// record came back, another member's accept may have settled it, the accept
// was refused before any write (INVALID_RECORD_STATE), or the last delivery
// was at the limit (a lapsed lock archives it).
func TestShareAckErrorAppliedSighted(t *testing.T) {
	base := func(ackErr string, count int16) *shareHist {
		h := &shareHist{}
		h.fetch("a", 0, 100, history.OK, nil, acq("t", 0, 2, count))
		h.ack("a", 200, 2300, history.OK, ackErr, ackOf(history.AckAccept, 2, 2))
		h.final(10000)
		return h
	}
	acked := sharegroup.StateBatch{FirstOffset: 2, LastOffset: 2, DeliveryState: sharegroup.StateAcknowledged, DeliveryCount: 1}
	avail := acked
	avail.DeliveryState = sharegroup.StateAvailable
	sighted := func(h *shareHist, obs *history.Observations) []Sighting {
		var out []Sighting
		for _, s := range Sightings(h.events(), obs, sharePlan) {
			if s.Finding == FindingShareAckErrorApplied {
				out = append(out, s)
			}
		}
		return out
	}
	withState := func(rec *history.ShareRecovery) *history.Observations {
		return &history.Observations{Group: "g", ShareRecovery: rec}
	}
	withStart := func(start int64) *history.Observations {
		return &history.Observations{Group: "g", Final: history.Snapshot{ShareStarts: []history.ShareStart{{Topic: "t", Partition: 0, StartOffset: start, End: 10}}}}
	}
	for _, c := range []struct {
		name string
		h    *shareHist
		obs  *history.Observations
		want string // in the sighting's text; "" for none
	}{
		{"kept acknowledged", base("NOT_LEADER_FOR_PARTITION", 1), withState(recovery(t, 2, 2, acked)), "keeps it ACKNOWLEDGED at delivery count 1"},
		{"below the start offset", base("NOT_LEADER_FOR_PARTITION", 1), withState(recovery(t, 3, 3)), "start offset 3 past it"},
		{"final start offset only", base("NOT_LEADER_FOR_PARTITION", 1), withStart(3), "final share-partition start offset 3 is past it"},
		{"state has it available", base("NOT_LEADER_FOR_PARTITION", 1), withState(recovery(t, 2, 2, avail)), ""},
		{"start offset not past it", base("NOT_LEADER_FOR_PARTITION", 1), withStart(2), ""},
		{"no observation", base("NOT_LEADER_FOR_PARTITION", 1), nil, ""},
		{"refused before the write", base("INVALID_RECORD_STATE", 1), withState(recovery(t, 2, 2, acked)), ""},
		{"delivered at the limit", base("NOT_LEADER_FOR_PARTITION", 3), withState(recovery(t, 3, 3)), ""},
		{"came back", func() *shareHist {
			h := base("NOT_LEADER_FOR_PARTITION", 1)
			h.fetchFrom(2, "b", 1000, 1100, acq("t", 2, 2, 1))
			return h
		}(), withState(recovery(t, 3, 3)), ""},
		{"another accept may have settled it", func() *shareHist {
			h := base("NOT_LEADER_FOR_PARTITION", 1)
			h.ack("a", 2400, 2500, history.Info, "", ackOf(history.AckAccept, 2, 2))
			return h
		}(), withState(recovery(t, 3, 3)), ""},
	} {
		got := sighted(c.h, c.obs)
		switch {
		case c.want == "" && len(got) > 0:
			t.Errorf("%s: sighted %+v", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0].What, c.want) || got[0].Member != "a"):
			t.Errorf("%s: sightings %+v, want one by a saying %q", c.name, got, c.want)
		}
	}
}
