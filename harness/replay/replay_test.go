package replay_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/observe"
	"github.com/groupquake/groupquake/harness/replay"
)

var (
	topicT = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	topicU = [16]byte{0: 0xff, 15: 1}
	names  = map[[16]byte]string{topicT: "t", topicU: "u"}
)

// log builds a __consumer_offsets partition from records, shaped as
// Kafka v writes them and kept as the observer keeps them (raw bytes and
// the generic rendering).
type log struct {
	t    *testing.T
	p    version.Profile
	recs []history.Record
}

func newLog(t *testing.T, v string) *log {
	return &log{t: t, p: version.MustParse(v).Profile()}
}

func (l *log) add(r records.Record) {
	l.t.Helper()
	shaped, err := records.AsWrittenBy(l.p, r)
	if err != nil {
		l.t.Fatal(err)
	}
	k, v, err := records.EncodeRecord(shaped)
	if err != nil {
		l.t.Fatal(err)
	}
	hr, _, err := observe.HistoryRecord(replay.GroupOf(r.Key), 1, int64(len(l.recs)), k, v)
	if err != nil {
		l.t.Fatal(err)
	}
	l.recs = append(l.recs, hr)
}

func (l *log) commit(group, topic string, partition int32, offset int64) {
	v := records.NewOffsetCommitValue(l.p.OffsetCommitValueVersion)
	v.Offset = offset
	v.CommitTimestamp = 1000
	l.add(records.Record{Key: records.OffsetCommitKey{Group: group, Topic: topic, Partition: partition}, Value: v})
}

func assignmentBytes(t *testing.T, tps map[string][]int32) []byte {
	t.Helper()
	a := kmsg.NewConsumerMemberAssignment()
	for _, topic := range []string{"t", "u"} {
		if ps, ok := tps[topic]; ok {
			at := kmsg.NewConsumerMemberAssignmentTopic()
			at.Topic, at.Partitions = topic, ps
			a.Topics = append(a.Topics, at)
		}
	}
	return a.AppendTo(nil)
}

func classicGroup(t *testing.T, l *log, group string, generation int32, members map[string]map[string][]int32) {
	t.Helper()
	v := &records.GroupMetadataValue{}
	v.ProtocolType = "consumer"
	proto, leader := "cooperative-sticky", ""
	v.Protocol = &proto
	v.Generation = generation
	for _, id := range []string{"a", "b", "c"} {
		tps, ok := members[id]
		if !ok {
			continue
		}
		if leader == "" {
			leader = id
		}
		m := kmsg.NewGroupMetadataValueMember()
		m.MemberID, m.ClientID, m.ClientHost = id, "kgo", "/127.0.0.1"
		m.SessionTimeoutMillis, m.RebalanceTimeoutMillis = 6000, 60000
		m.Subscription = []byte{0, 0, 0, 0, 0, 0}
		m.Assignment = assignmentBytes(t, tps)
		v.Members = append(v.Members, m)
	}
	if leader != "" {
		v.Leader = &leader
	}
	l.add(records.Record{Key: records.GroupMetadataKey{Group: group}, Value: v})
}

func TestClassicGroup(t *testing.T) {
	l := newLog(t, "4.4.0")
	classicGroup(t, l, "g", 1, map[string]map[string][]int32{"a": {"t": {0, 1, 2, 3}}})
	l.commit("g", "t", 0, 10)
	classicGroup(t, l, "other", 7, map[string]map[string][]int32{"c": {"t": {0}}})
	l.commit("other", "t", 0, 99)
	classicGroup(t, l, "g", 2, map[string]map[string][]int32{"a": {"t": {0, 1}}, "b": {"t": {2, 3}, "u": {0}}})
	l.commit("g", "t", 0, 12)
	l.commit("g", "u", 0, 5)

	got := replayed(t, "4.4.0", names, l.recs)
	want := check.GroupState{
		Protocol:   history.ProtocolClassic,
		Generation: 2,
		Members: map[string]check.MemberState{
			"a": {Assignment: history.TPs("t", 0, 1)},
			"b": {Assignment: append(history.TPs("t", 2, 3), history.TP{Topic: "u", Partition: 0})},
		},
		Offsets: map[history.TP]int64{{Topic: "t", Partition: 0}: 12, {Topic: "u", Partition: 0}: 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replayed\n%+v\nwant\n%+v", got, want)
	}

	// The members leave: the group is Empty at the next generation, and
	// its offsets stay.
	classicGroup(t, l, "g", 3, nil)
	got = replayed(t, "4.4.0", names, l.recs)
	if got.Protocol != history.ProtocolClassic || got.Generation != 3 || len(got.Members) != 0 || len(got.Offsets) != 2 {
		t.Errorf("after the members left: %+v", got)
	}
}

// consumerGroup writes a KIP-848 group at epoch 5: member m1 is at epoch 5,
// waiting for t-3 (UNRELEASED_PARTITIONS), which m2, still at epoch 4, has
// to revoke (UNREVOKED_PARTITIONS).
func consumerGroup(l *log, group string) {
	cur := func(id string, epoch int32, state records.MemberState, assigned, pending []int32) {
		at := func(ps []int32) []records.CurrentAssignmentTopic {
			if len(ps) == 0 {
				return nil
			}
			eps := make([]int32, len(ps))
			for i := range eps {
				eps[i] = epoch
			}
			return []records.CurrentAssignmentTopic{{TopicID: topicT, Partitions: ps, AssignmentEpochs: eps}}
		}
		l.add(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: group, MemberID: id}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: state, AssignedPartitions: at(assigned), PartitionsPendingRevocation: at(pending),
		}})
	}
	for _, id := range []string{"m1", "m2"} {
		l.add(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: group, MemberID: id}, Value: &records.ConsumerGroupMemberMetadataValue{
			ClientID: "kgo", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t"}, RebalanceTimeoutMs: 60000,
		}})
	}
	l.add(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: group}, Value: &records.ConsumerGroupMetadataValue{Epoch: 4}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: group, MemberID: "m1"}, Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: topicT, Partitions: []int32{0, 1}}}}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: group, MemberID: "m2"}, Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: topicT, Partitions: []int32{2, 3}}}}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: group}, Value: &records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 4}})
	cur("m1", 4, records.MemberStable, []int32{0, 1}, nil)
	cur("m2", 4, records.MemberStable, []int32{2, 3}, nil)
	l.commit(group, "t", 3, 40)
	// A rebalance at epoch 5 moves t-3 from m2 to m1.
	l.add(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: group}, Value: &records.ConsumerGroupMetadataValue{Epoch: 5}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: group, MemberID: "m1"}, Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: topicT, Partitions: []int32{0, 1, 3}}}}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: group, MemberID: "m2"}, Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: topicT, Partitions: []int32{2}}}}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: group}, Value: &records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 5}})
	cur("m2", 4, records.MemberUnrevokedPartitions, []int32{2}, []int32{3})
	cur("m1", 5, records.MemberUnreleasedPartitions, []int32{0, 1}, nil)
}

// TestConsumerGroup replays the same records as the releases before and
// after KAFKA-20431: from 4.3 ConsumerGroupDescribe shows the partition m2
// still has to revoke in its assignment, before it does not.
func TestConsumerGroup(t *testing.T) {
	for _, tc := range []struct {
		version string
		m2      []history.TP
	}{
		{"4.0.0", history.TPs("t", 2)},
		{"4.2.1", history.TPs("t", 2)},
		{"4.3.0", history.TPs("t", 2, 3)},
		{"4.4.0", history.TPs("t", 2, 3)},
	} {
		t.Run(tc.version, func(t *testing.T) {
			l := newLog(t, tc.version)
			consumerGroup(l, "g")
			consumerGroup(l, "other")
			got := replayed(t, tc.version, names, l.recs)
			want := check.GroupState{
				Protocol: history.ProtocolConsumer, GroupEpoch: 5, AssignmentEpoch: 5,
				Members: map[string]check.MemberState{
					"m1": {MemberEpoch: 5, Assignment: history.TPs("t", 0, 1)},
					"m2": {MemberEpoch: 4, Assignment: tc.m2},
				},
				Offsets: map[history.TP]int64{{Topic: "t", Partition: 3}: 40},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("replayed\n%+v\nwant\n%+v", got, want)
			}

			// Without the topic's id, the assignment cannot be named, and
			// is left out as Kafka's describe leaves out unknown topics.
			fn, err := replay.Func(tc.version, "g", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := fn(l.recs); err != nil || len(got.Members["m1"].Assignment) != 0 {
				t.Errorf("without topic ids: %+v, %v", got, err)
			}
		})
	}
}

// TestCheckerCatchesDisagreement feeds the replay of a consumer group to
// RecoveredStateMatchesLog with a description that agrees, then with ones
// that disagree in each compared field: every disagreement must be reported.
func TestCheckerCatchesDisagreement(t *testing.T) {
	l := newLog(t, "4.4.0")
	consumerGroup(l, "g")
	fn, err := replay.Func("4.4.0", "g", names)
	if err != nil {
		t.Fatal(err)
	}
	describe := func(edit func(*history.GroupDescription, *[]history.OffsetAt)) *history.Observations {
		g := &history.GroupDescription{GroupID: "g", Protocol: history.ProtocolConsumer, State: "Reconciling", GroupEpoch: 5, AssignmentEpoch: 5, Members: []history.MemberDescription{
			{MemberID: "m1", MemberEpoch: 5, Assignment: history.TPs("t", 0, 1)},
			{MemberID: "m2", MemberEpoch: 4, Assignment: history.TPs("t", 2, 3)},
		}}
		offs := []history.OffsetAt{{Topic: "t", Partition: 3, Offset: 40}}
		if edit != nil {
			edit(g, &offs)
		}
		return &history.Observations{Group: "g", Final: history.Snapshot{Label: "final", HistoryLen: 1, Group: g, Committed: offs, HasCommitted: true, Records: l.recs, HasRecords: true}}
	}
	if v := check.RecoveredStateMatchesLog(describe(nil), fn); !v.Holds || v.Skipped != "" {
		t.Fatalf("an agreeing description: %+v", v)
	}
	for _, tc := range []struct {
		name string
		edit func(*history.GroupDescription, *[]history.OffsetAt)
		want string
	}{
		{"group epoch", func(g *history.GroupDescription, _ *[]history.OffsetAt) { g.GroupEpoch = 6 }, "group epoch: replay 5, described 6"},
		{"member epoch", func(g *history.GroupDescription, _ *[]history.OffsetAt) { g.Members[0].MemberEpoch = 3 }, "member m1 epoch: replay 5, described 3"},
		{"pending revocation left out (the 4.2 describe)", func(g *history.GroupDescription, _ *[]history.OffsetAt) {
			g.Members[1].Assignment = history.TPs("t", 2)
		},
			"member m2 assignment: replay [t-2 t-3], described [t-2]"},
		{"member missing from the log", func(g *history.GroupDescription, _ *[]history.OffsetAt) {
			g.Members = append(g.Members, history.MemberDescription{MemberID: "m3", MemberEpoch: 5})
		}, "member m3 is described (epoch 5) but not in the replayed state"},
		{"offset", func(_ *history.GroupDescription, o *[]history.OffsetAt) { (*o)[0].Offset = 41 }, "offset of t-3: replay 40, described 41"},
		{"protocol", func(g *history.GroupDescription, _ *[]history.OffsetAt) { g.Protocol = history.ProtocolClassic }, "replay says a consumer group, the broker describes a classic group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := check.RecoveredStateMatchesLog(describe(tc.edit), fn)
			if v.Holds {
				t.Fatalf("a disagreeing description passes: %+v", v)
			}
			var msgs []string
			for _, x := range v.Violations {
				msgs = append(msgs, x.Message)
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
				t.Errorf("violations %q do not say %q", msgs, tc.want)
			}
		})
	}
}

func TestErrorsNameTheRecord(t *testing.T) {
	l := newLog(t, "4.4.0")
	l.commit("g", "t", 0, 1)
	l.commit("g", "t", 1, 2)
	fn, err := replay.Func("4.4.0", "g", names)
	if err != nil {
		t.Fatal(err)
	}

	broken := append([]history.Record(nil), l.recs...)
	broken[1].RawValue = broken[1].RawValue[:5]
	_, err = fn(broken)
	if err == nil || !strings.Contains(err.Error(), "__consumer_offsets-1 offset 1 (OffsetCommit record): does not decode") {
		t.Errorf("a truncated value: error %v, want it to name __consumer_offsets-1 offset 1 and say it does not decode", err)
	}

	noRaw := append([]history.Record(nil), l.recs...)
	noRaw[0].RawKey, noRaw[0].RawValue = nil, nil
	if _, err := fn(noRaw); err == nil || !strings.Contains(err.Error(), "offset 0 (OffsetCommit record): no raw key bytes") {
		t.Errorf("a record without raw bytes: error %v", err)
	}

	// A classic member whose assignment bytes are not a consumer
	// assignment is named with the GroupMetadata record that holds it.
	bad := newLog(t, "4.4.0")
	v := &records.GroupMetadataValue{}
	v.ProtocolType, v.Generation = "consumer", 1
	m := kmsg.NewGroupMetadataValueMember()
	m.MemberID, m.Assignment = "a", []byte{0, 0, 0, 0, 0, 9}
	v.Members = append(v.Members, m)
	bad.add(records.Record{Key: records.GroupMetadataKey{Group: "g"}, Value: v})
	if _, err := fn(bad.recs); err == nil || !strings.Contains(err.Error(), "offset 0 (GroupMetadata record): member a of group g: assignment bytes") {
		t.Errorf("undecodable assignment: error %v", err)
	}

	if _, err := replay.Func("4.9.1", "g", nil); err == nil || !strings.Contains(err.Error(), `unknown Kafka version "4.9.1"`) {
		t.Errorf("unknown version: %v", err)
	}
}

func TestTopicNames(t *testing.T) {
	id := base64.RawURLEncoding.EncodeToString(topicT[:])
	got, err := replay.TopicNames(map[string]string{"t": id})
	if err != nil || got[topicT] != "t" || len(got) != 1 {
		t.Errorf("TopicNames: %v, %v", got, err)
	}
	if id != observe.FormatTopicID(topicT) {
		t.Errorf("observe writes %s, replay reads %s", observe.FormatTopicID(topicT), id)
	}
	for _, bad := range []map[string]string{{"t": "short"}, {"t": id, "u": id}} {
		if _, err := replay.TopicNames(bad); err == nil {
			t.Errorf("TopicNames(%v) accepted", bad)
		}
	}
}

// TestRegexGroup replays a consumer group whose member subscribes with a
// regex, as a broker writes it: the member's metadata carries the regex,
// the ConsumerGroupRegularExpression value its resolved topics (its
// version a KRaft offset), and the tombstone removes it. Another group's
// regex does not count.
func TestRegexGroup(t *testing.T) {
	l := newLog(t, "4.4.0")
	re := "t.*"
	regex := func(group string) records.Record {
		return records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: group, RegularExpression: re}, Value: &records.ConsumerGroupRegularExpressionValue{Topics: []string{"t"}, Version: 4711, Timestamp: 1700000000000}}
	}
	l.add(regex("other"))
	l.add(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m1"}, Value: &records.ConsumerGroupMemberMetadataValue{
		ClientID: "kgo", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{}, SubscribedTopicRegex: &re, RebalanceTimeoutMs: 60000,
	}})
	l.add(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupMetadataValue{Epoch: 1}})
	l.add(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m1"}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 1, State: records.MemberStable}})
	l.add(regex("g"))
	l.add(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupMetadataValue{Epoch: 2, MetadataHash: 7}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: "m1"}, Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: topicT, Partitions: []int32{0, 1}}}}})
	l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 2}})
	l.add(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m1"}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{
		MemberEpoch: 2, PreviousMemberEpoch: 1, State: records.MemberStable,
		AssignedPartitions: []records.CurrentAssignmentTopic{{TopicID: topicT, Partitions: []int32{0, 1}, AssignmentEpochs: []int32{2, 2}}},
	}})
	fn, err := replay.Func("4.4.0", "g", names)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fn(l.recs)
	if err != nil {
		t.Fatalf("replay of a regex group: %v", err)
	}
	want := check.GroupState{
		Protocol: history.ProtocolConsumer, GroupEpoch: 2, AssignmentEpoch: 2,
		Members: map[string]check.MemberState{"m1": {MemberEpoch: 2, Assignment: history.TPs("t", 0, 1)}},
		Offsets: map[history.TP]int64{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("replayed\n%+v\nwant\n%+v", got, want)
	}
	// The regex's tombstone, then the member's: the group keeps its epochs.
	l.add(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: re}})
	if _, err := fn(l.recs); err != nil {
		t.Errorf("replay with the regex tombstone: %v", err)
	}
}

// classicMemberRecord is the ConsumerGroupMemberMetadata value Kafka writes
// for a classic-protocol member of a consumer group
// (GMM.classicGroupJoinToConsumerGroup, ConsumerGroup.fromClassicGroup):
// the ClassicMemberMetadata tag carries its session timeout and protocols.
func classicMemberRecord(group, id string, sessionTimeoutMs int32) records.Record {
	regex := ""
	return records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: group, MemberID: id}, Value: &records.ConsumerGroupMemberMetadataValue{
		ClientID: "kgo", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t"}, SubscribedTopicRegex: &regex, RebalanceTimeoutMs: 60000,
		ClassicMemberMetadata: &records.ClassicMemberMetadata{SessionTimeoutMs: sessionTimeoutMs, SupportedProtocols: []records.ClassicProtocol{
			{Name: "cooperative-sticky", Metadata: []byte{0, 3, 0, 0, 0, 1, 0, 1, 't', 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		}},
	}}
}

// TestMixedGroup replays the records Kafka writes when a classic group is
// upgraded online (GMM.convertToConsumerGroup: the GroupMetadata tombstone,
// then ConsumerGroup.createConsumerGroupRecords with every member STABLE at
// the classic generation), a consumer-protocol member joining it, and the
// downgrade back when that member leaves (GMM.convertToClassicGroup: the
// consumer group's tombstones, then GroupMetadata). The mixed group is
// described as a consumer group whose classic members carry their epochs;
// every record re-encodes byte for byte.
func TestMixedGroup(t *testing.T) {
	for _, v := range []string{"4.1.2", "4.4.0"} {
		t.Run(v, func(t *testing.T) {
			l := newLog(t, v)
			classicGroup(t, l, "g", 3, map[string]map[string][]int32{"a": {"t": {0, 1}}, "b": {"t": {2, 3}}})
			l.commit("g", "t", 0, 10)

			// The upgrade.
			target := func(id string, ps ...int32) {
				l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: id}, Value: &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{{TopicID: topicT, Partitions: ps}}}})
			}
			current := func(id string, epoch, prev int32, state records.MemberState, ps ...int32) {
				var at []records.CurrentAssignmentTopic
				if len(ps) > 0 {
					eps := make([]int32, len(ps))
					for i := range eps {
						eps[i] = epoch
					}
					at = []records.CurrentAssignmentTopic{{TopicID: topicT, Partitions: ps, AssignmentEpochs: eps}}
				}
				l.add(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: id}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{
					MemberEpoch: epoch, PreviousMemberEpoch: prev, State: state, AssignedPartitions: at,
				}})
			}
			epoch := func(e int32) {
				l.add(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupMetadataValue{Epoch: e, MetadataHash: 77}})
			}
			targetEpoch := func(e int32) {
				l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}, Value: &records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: e}})
			}
			l.add(records.Record{Key: records.GroupMetadataKey{Group: "g"}})
			l.add(classicMemberRecord("g", "a", 6000))
			l.add(classicMemberRecord("g", "b", 6000))
			epoch(3)
			target("a", 0, 1)
			target("b", 2, 3)
			targetEpoch(3)
			current("a", 3, 3, records.MemberStable, 0, 1)
			current("b", 3, 3, records.MemberStable, 2, 3)

			// A consumer-protocol member joins; a gives up t-1 to it.
			regex := ""
			l.add(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m1"}, Value: &records.ConsumerGroupMemberMetadataValue{
				ClientID: "kgo", ClientHost: "/127.0.0.1", SubscribedTopicNames: []string{"t"}, SubscribedTopicRegex: &regex, RebalanceTimeoutMs: 60000,
			}})
			epoch(4)
			target("a", 0)
			target("m1", 1)
			targetEpoch(4)
			current("m1", 4, 0, records.MemberUnreleasedPartitions)
			l.add(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "a"}, Value: &records.ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch: 3, PreviousMemberEpoch: 3, State: records.MemberUnrevokedPartitions,
				AssignedPartitions:          []records.CurrentAssignmentTopic{{TopicID: topicT, Partitions: []int32{0}, AssignmentEpochs: []int32{3}}},
				PartitionsPendingRevocation: []records.CurrentAssignmentTopic{{TopicID: topicT, Partitions: []int32{1}, AssignmentEpochs: []int32{3}}},
			}})

			fn, err := replay.Func(v, "g", names)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fn(l.recs)
			if err != nil {
				t.Fatal(err)
			}
			aOwns := history.TPs("t", 0)
			if version.MustParse(v).Profile().DescribeShowsPendingRevocation {
				aOwns = history.TPs("t", 0, 1)
			}
			want := check.GroupState{
				Protocol: history.ProtocolConsumer, GroupEpoch: 4, AssignmentEpoch: 4,
				Members: map[string]check.MemberState{
					"a":  {MemberEpoch: 3, Assignment: aOwns},
					"b":  {MemberEpoch: 3, Assignment: history.TPs("t", 2, 3)},
					"m1": {MemberEpoch: 4, Assignment: []history.TP{}},
				},
				Offsets: map[history.TP]int64{{Topic: "t", Partition: 0}: 10},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("mixed group replayed\n%+v\nwant\n%+v", got, want)
			}

			// m1 leaves and the group is downgraded: tombstones in the
			// order replay requires, then the classic group at the group
			// epoch.
			for _, id := range []string{"a", "b", "m1"} {
				l.add(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: id}})
			}
			for _, id := range []string{"a", "b", "m1"} {
				l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: id}})
			}
			l.add(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}})
			for _, id := range []string{"a", "b", "m1"} {
				l.add(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: id}})
			}
			l.add(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: "g"}})
			classicGroup(t, l, "g", 5, map[string]map[string][]int32{"a": {"t": {0, 1}}, "b": {"t": {2, 3}}})
			got, err = fn(l.recs)
			if err != nil {
				t.Fatal(err)
			}
			if got.Protocol != history.ProtocolClassic || got.Generation != 5 || len(got.Members) != 2 || got.Offsets[history.TP{Topic: "t", Partition: 0}] != 10 {
				t.Errorf("after the downgrade: %+v", got)
			}

			// The broker's bytes re-encode byte for byte.
			for _, hr := range l.recs {
				dec, err := replay.Decode(hr)
				if err != nil {
					t.Fatal(err)
				}
				k, val, err := records.EncodeRecord(dec)
				if err != nil {
					t.Fatalf("%s: %v", replay.Where(hr), err)
				}
				if !bytes.Equal(k, hr.RawKey) || !bytes.Equal(val, hr.RawValue) {
					t.Errorf("%s: re-encodes as %x/%x, written %x/%x", replay.Where(hr), k, val, hr.RawKey, hr.RawValue)
				}
			}
		})
	}
}

// TestLoadReplaysEveryGroup loads a partition that holds two groups and a
// deleted one: Load keeps every group's offsets and classic state, as the
// broker's load does, where State keeps one group.
func TestLoadReplaysEveryGroup(t *testing.T) {
	l := newLog(t, "4.4.0")
	classicGroup(t, l, "g", 2, map[string]map[string][]int32{"a": {"t": {0, 1}}})
	l.commit("g", "t", 0, 10)
	l.commit("h", "t", 1, 20)
	l.commit("g", "t", 0, 11)
	classicGroup(t, l, "gone", 1, map[string]map[string][]int32{"c": {"t": {0}}})
	l.add(records.Record{Key: records.GroupMetadataKey{Group: "gone"}})
	c, err := replay.Load(l.p, l.recs)
	if err != nil {
		t.Fatal(err)
	}
	st := c.State()
	got := map[string]int64{}
	for _, o := range st.Offsets {
		got[fmt.Sprintf("%s/%s/%d", o.Group, o.Topic, o.Partition)] = o.Offset
	}
	if want := map[string]int64{"g/t/0": 11, "h/t/1": 20}; !reflect.DeepEqual(got, want) {
		t.Errorf("offsets after Load: %v, want %v", got, want)
	}
	// h has offsets only: Kafka keeps it as an Empty classic group.
	var groups []string
	for _, g := range st.Classic {
		groups = append(groups, fmt.Sprintf("%s %s %d", g.Group, g.State, g.Generation))
	}
	if want := []string{"g Stable 2", "h Empty 0"}; !reflect.DeepEqual(groups, want) {
		t.Errorf("classic groups after Load: %q, want %q", groups, want)
	}

	bad := append(slices.Clone(l.recs), history.Record{Partition: 1, Offset: 99, KeyType: 1})
	if _, err := replay.Load(l.p, bad); err == nil || !strings.Contains(err.Error(), "offset 99") {
		t.Errorf("Load of a record without bytes: %v, want an error naming offset 99", err)
	}
}

// replayed is group g's state that the replay of version makes of recs
// (names: the topics' names by id).
func replayed(t *testing.T, version string, names map[[16]byte]string, recs []history.Record) check.GroupState {
	t.Helper()
	fn, err := replay.Func(version, "g", names)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fn(recs)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
