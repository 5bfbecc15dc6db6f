package records

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
)

func TestAsWrittenByValueVersions(t *testing.T) {
	commit := offsetCommitValue(0, func(v *OffsetCommitValue) {
		v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp, v.TopicID = 100, 5, "m", 1000, topicA
	})
	commitWithExpiry := offsetCommitValue(0, func(v *OffsetCommitValue) {
		v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp, v.ExpireTimestamp, v.TopicID = 100, 5, "m", 1000, 2000, topicA
	})
	for _, v := range version.Served() {
		p := v.Profile()
		t.Run(v.String(), func(t *testing.T) {
			// OffsetCommit without a retention time: v3 in 4.0, v4 with topicId from 4.1.
			got, err := AsWrittenBy(p, Record{Key: OffsetCommitKey{Group: "g", Topic: "t", Partition: 3}, Value: commit})
			if err != nil {
				t.Fatal(err)
			}
			_, value, err := EncodeRecord(got)
			if err != nil {
				t.Fatal(err)
			}
			want := "0003 | 0000000000000064 | 00000005 | 0001 6d | 00000000000003e8"
			if v >= version.V4_1_0 {
				want = "0004 | 0000000000000064 | 00000005 | 02 6d | 00000000000003e8 | 01 | 00 10 " + hexTopicA
			}
			if !bytes.Equal(value, hx(t, want)) {
				t.Errorf("OffsetCommitValue written as %x, want %s", value, want)
			}

			// With a retention time: v1 everywhere, no leader epoch, no topic id.
			got, err = AsWrittenBy(p, Record{Key: OffsetCommitKey{Group: "g", Topic: "t", Partition: 3}, Value: commitWithExpiry})
			if err != nil {
				t.Fatal(err)
			}
			if _, value, _ = EncodeRecord(got); !bytes.Equal(value, hx(t, "0001 | 0000000000000064 | 0001 6d | 00000000000003e8 | 00000000000007d0")) {
				t.Errorf("OffsetCommitValue with expiry written as %x", value)
			}

			// Classic groups: GroupMetadataValue v3 everywhere.
			got, err = AsWrittenBy(p, Record{Key: GroupMetadataKey{Group: "g"}, Value: groupMetadataValue(4)})
			if err != nil {
				t.Fatal(err)
			}
			if ver := got.Value.ValueVersion(); ver != 3 {
				t.Errorf("GroupMetadataValue written as v%d, want v3", ver)
			}
		})
	}
}

func TestAsWrittenByFields(t *testing.T) {
	partitionMetadata := &ConsumerGroupPartitionMetadataValue{Topics: []PartitionMetadataTopic{{
		TopicID: topicA, TopicName: "t", NumPartitions: 2,
		PartitionMetadata: []PartitionMetadataPartition{{Partition: 0, Racks: []string{"r"}}},
	}}}
	current := func(epochs []int32) *ConsumerGroupCurrentMemberAssignmentValue {
		return &ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: 2, PreviousMemberEpoch: 1,
			AssignedPartitions: []CurrentAssignmentTopic{{TopicID: topicA, Partitions: []int32{0, 1}, AssignmentEpochs: epochs}}}
	}
	// Each record below is shaped by a release that drops a field and by
	// one that keeps it.
	meta := Record{Key: ConsumerGroupMetadataKey{GroupID: "g"}, Value: &ConsumerGroupMetadataValue{Epoch: 3, MetadataHash: 42}}
	partitions := Record{Key: ConsumerGroupPartitionMetadataKey{GroupID: "g"}, Value: partitionMetadata}
	target := Record{Key: ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}, Value: &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 2, AssignmentTimestamp: 9}}
	currentKey := ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m"}
	withEpochs := Record{Key: currentKey, Value: current([]int32{1, 2})}
	for _, tc := range []struct {
		name    string
		v       version.Version
		in      Record
		want    Value  // nil with wantErr
		wantErr string // substring
	}{
		{"4.0 drops MetadataHash", version.V4_0_2, meta, &ConsumerGroupMetadataValue{Epoch: 3}, ""},
		{"4.1 keeps MetadataHash", version.V4_1_0, meta, &ConsumerGroupMetadataValue{Epoch: 3, MetadataHash: 42}, ""},
		{"4.0 writes partition metadata without the deprecated racks", version.V4_0_0, partitions,
			&ConsumerGroupPartitionMetadataValue{Topics: []PartitionMetadataTopic{{TopicID: topicA, TopicName: "t", NumPartitions: 2}}}, ""},
		{"4.1 writes no partition metadata", version.V4_1_0, partitions, nil, "from 4.1 (KIP-1101) only its tombstone is written"},
		{"4.2 drops AssignmentTimestamp", version.V4_2_1, target, &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 2}, ""},
		{"4.3 keeps AssignmentTimestamp", version.V4_3_0, target, &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: 2, AssignmentTimestamp: 9}, ""},
		{"4.2 drops AssignmentEpochs", version.V4_2_0, withEpochs, current(nil), ""},
		{"4.4 keeps AssignmentEpochs", version.V4_4_0, withEpochs, current([]int32{1, 2}), ""},
		{"4.3 needs one epoch per partition", version.V4_3_1, Record{Key: currentKey, Value: current(nil)},
			nil, "AssignedPartitions[0]: Kafka 4.3.1 writes one assignment epoch per partition (KIP-1251), have 0 epochs for 2 partitions"},
		{"record type 0 is never written", version.V4_0_0,
			Record{Key: OffsetCommitKey{Legacy: true}, Value: NewOffsetCommitValue(0)},
			nil, "shape LegacyOffsetCommit record for Kafka 4.0.0: Kafka 4.x never writes it"},
		{"share group records are not shaped", version.V4_4_0,
			Record{Key: OtherKey{Type: 11}}, nil, "shape ShareGroupMetadata record for Kafka 4.4.0: Kafka 4.x never writes it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AsWrittenBy(tc.v.Profile(), tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Value, tc.want) {
				t.Errorf("got %s, want %s", describe(got), describe(Record{Key: got.Key, Value: tc.want}))
			}
		})
	}
}

// TestAsWrittenByIsAFixedPoint: for every served version, a shaped record
// survives encode and decode unchanged, tombstones stay tombstones, and the
// input is not modified.
func TestAsWrittenByIsAFixedPoint(t *testing.T) {
	g := gen{rng: rand.New(rand.NewPCG(3, 4))}
	shaped := 0
	for range 3000 {
		r := g.record()
		before, beforeValue, err := EncodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range version.Served() {
			out, err := AsWrittenBy(v.Profile(), r)
			if err != nil {
				continue // record types or shapes that release does not write
			}
			shaped++
			if out.IsTombstone() != r.IsTombstone() {
				t.Fatalf("%s: tombstone-ness changed", v)
			}
			checkRoundTrip(t, out)
		}
		after, afterValue, _ := EncodeRecord(r)
		if !bytes.Equal(before, after) || !bytes.Equal(beforeValue, afterValue) {
			t.Fatalf("AsWrittenBy modified its input %s", describe(r))
		}
	}
	if shaped < 10000 {
		t.Errorf("only %d records shaped; the generator no longer exercises AsWrittenBy", shaped)
	}
}

// TestAsWrittenByLeavesItsInput: shaping copies what it clears. The members
// of a GroupMetadataValue written below v4 lose their tagged fields, and
// below v3 their instance ids, and the topics of a partition metadata value
// written by 4.0 lose their partitions, in the result only: the record
// given keeps them.
func TestAsWrittenByLeavesItsInput(t *testing.T) {
	p := version.V4_4_0.Profile()
	p.GroupMetadataValueVersion = 2
	in := groupMetadataValue(4)
	in.Members[0].UnknownTags.Set(7, []byte{1})
	got, err := AsWrittenBy(p, Record{Key: GroupMetadataKey{Group: "g"}, Value: in})
	if err != nil {
		t.Fatal(err)
	}
	m := got.Value.(*GroupMetadataValue).Members[0]
	if m.InstanceID != nil || m.UnknownTags.Len() != 0 {
		t.Errorf("v2 member written with instance id %v and %d tags, want neither", m.InstanceID, m.UnknownTags.Len())
	}
	if in.Members[0].InstanceID == nil || in.Members[0].UnknownTags.Len() != 1 {
		t.Errorf("shaping changed its input's member: %+v", in.Members[0])
	}

	pm := &ConsumerGroupPartitionMetadataValue{Topics: []PartitionMetadataTopic{{
		TopicID: topicA, TopicName: "t", NumPartitions: 1,
		PartitionMetadata: []PartitionMetadataPartition{{Partition: 0}},
	}}}
	if _, err := AsWrittenBy(version.V4_0_0.Profile(), Record{Key: ConsumerGroupPartitionMetadataKey{GroupID: "g"}, Value: pm}); err != nil {
		t.Fatal(err)
	}
	if len(pm.Topics[0].PartitionMetadata) != 1 {
		t.Errorf("shaping changed its input's topic: %+v", pm.Topics[0])
	}
}
