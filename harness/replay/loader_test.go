package replay_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/replay"
)

// slowLoad is how Load and State replayed before offset commits took their
// own way: every record decoded into a records.Record by DecodeRecord
// (replay.Decode) and replayed by Coordinator.Replay, the records of group
// only unless every, with the errors worded as Load words them.
func slowLoad(t *testing.T, p version.Profile, group string, every bool, recs []history.Record) (*coordinator.Coordinator, error) {
	t.Helper()
	m, err := consumergroup.New(p, consumergroup.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(p, coordinator.Config{ConsumerGroups: coordinator.NewConsumerGroups(m)})
	if err != nil {
		t.Fatal(err)
	}
	for _, hr := range recs {
		dec, err := replay.Decode(hr)
		if err != nil {
			return nil, err
		}
		if !every && replay.GroupOf(dec.Key) != group {
			continue
		}
		if err := c.Replay(dec); err != nil {
			return nil, fmt.Errorf("%s: the reference coordinator of Kafka %s refuses it: %w", replay.Where(hr), p.Version, err)
		}
	}
	c.Loaded(time.UnixMilli(0))
	return c, nil
}

// rawRecord adds r encoded as it is, not shaped as l's release writes it,
// so that every value version reaches the log.
func (l *log) rawRecord(r records.Record) { l.t.Helper(); l.encoded(records.EncodeRecord(r)) }

// share adds a share group's record.
func (l *log) share(r sharegroup.GroupRecord) {
	l.t.Helper()
	l.encoded(sharegroup.EncodeGroupRecord(r))
}

// encoded adds the record of key k and value v that an encoder returned.
func (l *log) encoded(k, v []byte, err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatal(err)
	}
	l.rawBytes(k, v)
}

func (l *log) rawBytes(k, v []byte) {
	l.recs = append(l.recs, history.Record{Partition: 1, Offset: int64(len(l.recs)), KeyType: int16(binary.BigEndian.Uint16(k)), RawKey: k, RawValue: v})
}

// variedLog is a partition of every record type the coordinator replays:
// offset commits of every value version of types 1 and 0 (metadata, leader
// epochs, expire timestamps, topic ids, unknown tagged fields) and their
// tombstones, of classic groups, of a consumer group and of groups that
// have offsets only; GroupMetadata of every version and a tombstone; a
// consumer group with its regular expression; a share group (types 10–15,
// tombstones among them); streams and unknown types.
func variedLog(t *testing.T, v string) *log {
	l := newLog(t, v)
	classicGroup(t, l, "g", 2, map[string]map[string][]int32{"a": {"t": {0, 1}}, "b": {"t": {2, 3}}})
	for p := range int32(4) {
		l.commit("g", "t", p, int64(10+p))
	}
	var tags kmsg.Tags
	tags.Set(5, []byte{1, 2})
	for ver := int16(0); ver <= 4; ver++ {
		for _, group := range []string{"g", "h"} {
			w := records.NewOffsetCommitValue(ver)
			w.Offset, w.Metadata, w.CommitTimestamp = int64(100+ver), fmt.Sprintf("meta-%d", ver), 2000+int64(ver)
			if ver >= 3 {
				w.LeaderEpoch = int32(ver)
			}
			if ver == 1 {
				w.ExpireTimestamp = 9000
			}
			if ver == 4 {
				w.TopicID, w.UnknownTags = topicT, tags
			}
			l.rawRecord(records.Record{Key: records.OffsetCommitKey{Group: group, Topic: "t", Partition: int32(ver)}, Value: w})
		}
	}
	legacy := records.NewOffsetCommitValue(0)
	legacy.Offset, legacy.Metadata = 7, "legacy"
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Legacy: true, Group: "legacy", Topic: "u", Partition: 0}, Value: legacy})
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Legacy: true, Group: "legacy", Topic: "u", Partition: 1}, Value: legacy})
	// Tombstones: of an offset, of an offset never committed, of a group's
	// last offset (its entry goes), and the group's offset again after.
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Group: "g", Topic: "t", Partition: 1}})
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Group: "g", Topic: "t", Partition: 99}})
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Legacy: true, Group: "legacy", Topic: "u", Partition: 0}})
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Group: "h", Topic: "t", Partition: 0}})
	l.rawRecord(records.Record{Key: records.OffsetCommitKey{Group: "h", Topic: "t", Partition: 1}})
	l.commit("h", "t", 0, 55)

	consumerGroup(l, "c")
	l.add(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: "c", RegularExpression: "t.*"}, Value: &records.ConsumerGroupRegularExpressionValue{Topics: []string{"t"}, Version: 3, Timestamp: 4000}})
	l.commit("c", "t", 0, 70)

	for ver := int16(0); ver <= 4; ver++ {
		w := &records.GroupMetadataValue{}
		w.Version, w.ProtocolType, w.Generation, w.CurrentStateTimestamp = ver, "consumer", int32(ver+1), -1
		proto := "range"
		w.Protocol, w.Leader = &proto, nil
		if ver >= 2 {
			w.CurrentStateTimestamp = 3000
		}
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost, m.SessionTimeoutMillis = fmt.Sprintf("v%d", ver), "kgo", "/127.0.0.1", 6000
		m.RebalanceTimeoutMillis = -1
		if ver >= 1 {
			m.RebalanceTimeoutMillis = 60000
		}
		m.Assignment = assignmentBytes(t, map[string][]int32{"t": {int32(ver)}})
		w.Members = append(w.Members, m)
		l.rawRecord(records.Record{Key: records.GroupMetadataKey{Group: "v"}, Value: w})
		l.commit("v", "t", int32(ver), int64(ver))
	}
	classicGroup(t, l, "gone", 1, map[string]map[string][]int32{"a": {"t": {0}}})
	l.commit("gone", "t", 0, 1)
	l.add(records.Record{Key: records.GroupMetadataKey{Group: "gone"}})

	rack := "r1"
	tps := []sharegroup.TopicPartitions{{TopicID: topicT, Partitions: []int32{0, 1}}}
	for _, r := range []sharegroup.GroupRecord{
		{Type: sharegroup.TypeMemberMetadata, GroupID: "s", MemberID: "m1", Value: &sharegroup.MemberMetadataValue{RackID: &rack, ClientID: "kgo", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t"}}},
		{Type: sharegroup.TypeMemberMetadata, GroupID: "s", MemberID: "m2", Value: &sharegroup.MemberMetadataValue{ClientID: "kgo", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t"}}},
		{Type: sharegroup.TypeGroupMetadata, GroupID: "s", Value: &sharegroup.GroupMetadataValue{Epoch: 2, MetadataHash: 77}},
		{Type: sharegroup.TypeTargetAssignmentMember, GroupID: "s", MemberID: "m1", Value: &sharegroup.TargetAssignmentMemberValue{TopicPartitions: tps}},
		{Type: sharegroup.TypeTargetAssignmentMetadata, GroupID: "s", Value: &sharegroup.TargetAssignmentMetadataValue{AssignmentEpoch: 2, AssignmentTimestamp: 5000}},
		{Type: sharegroup.TypeCurrentMemberAssignment, GroupID: "s", MemberID: "m1", Value: &sharegroup.CurrentMemberAssignmentValue{MemberEpoch: 2, PreviousMemberEpoch: 1, AssignedPartitions: tps}},
		{Type: sharegroup.TypeStatePartitionMetadata, GroupID: "s", Value: &sharegroup.StatePartitionMetadataValue{InitializedTopics: []sharegroup.TopicInfo{{TopicID: topicT, TopicName: "t", Partitions: []int32{0, 1}}}}},
		{Type: sharegroup.TypeCurrentMemberAssignment, GroupID: "s", MemberID: "m2"},
		{Type: sharegroup.TypeMemberMetadata, GroupID: "s", MemberID: "m2"},
	} {
		l.share(r)
	}
	l.rawBytes([]byte{0, 17, 0, 1, 'x'}, []byte{0, 0, 1, 2, 3})
	l.rawBytes([]byte{3, 232, 9, 9}, nil)
	l.commit("g", "t", 0, 12)
	return l
}

// TestLoaderSameAsDecodeAndReplay: Load, and the replay of one group that
// State makes, leave the coordinator in the state that decoding every
// record into a records.Record and replaying it with Coordinator.Replay
// leaves, for every served release and a partition of every record type;
// and where that fails (bytes cut short, versions Kafka does not read,
// records without bytes, records the coordinator refuses), they fail with
// the same error.
func TestLoaderSameAsDecodeAndReplay(t *testing.T) {
	for _, v := range version.Served() {
		l := variedLog(t, v.String())
		got, err := replay.Load(l.p, l.recs)
		if err != nil {
			t.Fatalf("%s: Load: %v", v, err)
		}
		want, err := slowLoad(t, l.p, "", true, l.recs)
		if err != nil {
			t.Fatalf("%s: the slow load: %v", v, err)
		}
		st := got.State()
		if !st.Equal(want.State()) {
			t.Fatalf("%s: Load gives\n%+v\nthe slow load\n%+v", v, st, want.State())
		}
		groups := map[string]bool{}
		for _, o := range st.Offsets {
			groups[o.Group] = true
		}
		if len(st.Offsets) < 15 || !groups["legacy"] || !groups["c"] || !groups["h"] || st.Share == "" || st.Consumer == "" {
			t.Fatalf("%s: the log does not reach what it should: %d offsets of groups %v, share groups %q", v, len(st.Offsets), groups, st.Share)
		}
		for _, group := range []string{"g", "h", "legacy", "c", "v", "gone", "s", "nobody"} {
			got, err := replay.LoadGroup(l.p, group, l.recs)
			if err != nil {
				t.Fatalf("%s: replay of group %s: %v", v, group, err)
			}
			want, err := slowLoad(t, l.p, group, false, l.recs)
			if err != nil {
				t.Fatalf("%s: the slow replay of group %s: %v", v, group, err)
			}
			if !got.State().Equal(want.State()) {
				t.Fatalf("%s: replay of group %s gives\n%+v\nthe slow replay\n%+v", v, group, got.State(), want.State())
			}
		}
		sameErrors(t, l)
	}
}

// sameErrors breaks l's records one at a time and checks that Load and the
// slow load refuse them alike.
func sameErrors(t *testing.T, l *log) {
	t.Helper()
	broken := func(i int, change func(hr *history.Record)) []history.Record {
		recs := append([]history.Record(nil), l.recs...)
		hr := recs[i]
		hr.RawKey = append([]byte(nil), hr.RawKey...)
		if hr.RawValue != nil {
			hr.RawValue = append([]byte(nil), hr.RawValue...)
		}
		change(&hr)
		recs[i] = hr
		return recs
	}
	var cases [][]history.Record
	for i, hr := range l.recs {
		cases = append(cases,
			broken(i, func(hr *history.Record) { hr.RawKey = hr.RawKey[:len(hr.RawKey)-1] }),
			broken(i, func(hr *history.Record) { hr.RawKey = append(hr.RawKey, 0) }),
			broken(i, func(hr *history.Record) { hr.RawKey, hr.RawValue = nil, nil }))
		if hr.RawValue == nil {
			cases = append(cases, broken(i, func(hr *history.Record) { hr.RawValue = []byte{} }),
				broken(i, func(hr *history.Record) { hr.Value = map[string]any{"offset": 1} }))
			continue
		}
		cases = append(cases,
			broken(i, func(hr *history.Record) { hr.RawValue = hr.RawValue[:len(hr.RawValue)-1] }),
			broken(i, func(hr *history.Record) { binary.BigEndian.PutUint16(hr.RawValue, 5) }),
			broken(i, func(hr *history.Record) { hr.RawValue = append(hr.RawValue, 0) }))
	}
	// Refused, not undecodable: a GroupMetadata record over the consumer
	// group, which has members, and an offset commit that makes the share
	// group's id a classic group before the share group's next record.
	refused := newLog(l.t, l.p.Version.String())
	refused.recs = append(refused.recs, l.recs...)
	classicGroup(l.t, refused, "c", 9, nil)
	cases = append(cases, refused.recs)
	refused = newLog(l.t, l.p.Version.String())
	refused.recs = append(refused.recs, l.recs...)
	refused.commit("s", "t", 0, 1)
	refused.share(sharegroup.GroupRecord{Type: sharegroup.TypeGroupMetadata, GroupID: "s", Value: &sharegroup.GroupMetadataValue{Epoch: 3}})
	cases = append(cases, refused.recs)

	failed := 0
	for _, recs := range cases {
		_, err := replay.Load(l.p, recs)
		_, werr := slowLoad(t, l.p, "", true, recs)
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("%s: Load fails with %v, the slow load with %v", l.p.Version, err, werr)
		}
		_, err = replay.LoadGroup(l.p, "g", recs)
		_, werr = slowLoad(t, l.p, "g", false, recs)
		if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) {
			t.Fatalf("%s: the replay of group g fails with %v, the slow one with %v", l.p.Version, err, werr)
		}
		if err != nil {
			failed++
		}
	}
	if failed < len(cases)/2 {
		t.Fatalf("%s: only %d of %d broken logs fail to load", l.p.Version, failed, len(cases))
	}
}

// TestLoadOffsetCommitDoesNotAllocate: once its group and partition are
// known, an offset commit replays without allocating.
func TestLoadOffsetCommitDoesNotAllocate(t *testing.T) {
	l := newLog(t, "4.4.0")
	classicGroup(t, l, "g", 1, map[string]map[string][]int32{"a": {"t": {0}}})
	for range 100 {
		l.commit("g", "t", 0, 1)
	}
	if _, err := replay.Load(l.p, l.recs); err != nil {
		t.Fatal(err)
	}
	base := testing.AllocsPerRun(5, func() { _, _ = replay.Load(l.p, l.recs[:2]) })
	all := testing.AllocsPerRun(5, func() { _, _ = replay.Load(l.p, l.recs) })
	if all-base >= 1 {
		t.Errorf("99 more offset commits took %v more allocations, want none", all-base)
	}
}
