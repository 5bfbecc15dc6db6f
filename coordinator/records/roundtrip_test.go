package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describe renders a record for failure messages (pointers followed).
func describe(r Record) string {
	k, _ := json.Marshal(r.Key)
	v, _ := json.Marshal(r.Value)
	short := func(b []byte) string {
		if len(b) > 400 {
			return string(b[:400]) + "…"
		}
		return string(b)
	}
	return fmt.Sprintf("%T%s / %T%s", r.Key, short(k), r.Value, short(v))
}

// checkRoundTrip asserts the codec invariants on r, which must be in the
// form DecodeRecord produces: decode(encode(r)) == r, and encoding the
// decoded record gives the same bytes again.
func checkRoundTrip(t *testing.T, r Record) {
	t.Helper()
	key, value, err := EncodeRecord(r)
	if err != nil {
		t.Fatalf("EncodeRecord(%s): %v", describe(r), err)
	}
	got, err := DecodeRecord(key, value)
	if err != nil {
		t.Fatalf("DecodeRecord(%x, %x) of %s: %v", key, value, describe(r), err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip changed the record\n got %s\nwant %s", describe(got), describe(r))
	}
	key2, value2, err := EncodeRecord(got)
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	if !bytes.Equal(key, key2) || !bytes.Equal(value, value2) || (value == nil) != (value2 == nil) {
		t.Fatalf("encoding is not stable: %x/%x then %x/%x", key, value, key2, value2)
	}
}

// gen builds random records in decoded (canonical) form: fields a version
// lacks hold their defaults, empty non-nullable slices are nil, and unknown
// tags sit above the tags each schema defines.
type gen struct{ rng *rand.Rand }

func (g gen) str() string {
	const alphabet = "abcxyz-_.*/é中😀"
	rs := []rune(alphabet)
	n := g.rng.IntN(6)
	out := make([]rune, n)
	for i := range out {
		out[i] = rs[g.rng.IntN(len(rs))]
	}
	return string(out)
}

func (g gen) nstr() *string {
	if g.rng.IntN(3) == 0 {
		return nil
	}
	s := g.str()
	return &s
}

// genList is a list of up to limit-1 elements that one makes, nil for none.
func genList[T any](g gen, limit int, one func() T) []T {
	n := g.rng.IntN(limit)
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = one()
	}
	return out
}

func (g gen) strs() []string { return genList(g, 4, g.str) }

func (g gen) bytes() []byte {
	return genList(g, 5, func() byte { return byte(g.rng.UintN(256)) })
}

func (g gen) i32() int32 {
	switch g.rng.IntN(4) {
	case 0:
		return -1
	case 1:
		return int32(g.rng.Uint32())
	}
	return int32(g.rng.IntN(100))
}

func (g gen) i64() int64 {
	if g.rng.IntN(3) == 0 {
		return int64(g.rng.Uint64())
	}
	return int64(g.rng.IntN(100000))
}

func (g gen) i32s() []int32 { return genList(g, 4, g.i32) }

func (g gen) uuid() (u [16]byte) {
	if g.rng.IntN(4) == 0 {
		return u
	}
	for i := range u {
		u[i] = byte(g.rng.UintN(256))
	}
	return u
}

// tags returns unknown tagged fields with tags above maxKnown.
func (g gen) tags(maxKnown int) kmsg.Tags {
	var t kmsg.Tags
	if g.rng.IntN(4) != 0 {
		return t
	}
	for i := g.rng.IntN(3); i >= 0; i-- {
		b := g.bytes()
		if b == nil {
			b = []byte{}
		}
		t.Set(uint32(maxKnown+1+g.rng.IntN(5)), b)
	}
	return t
}

// keyed is a record of key k: a tombstone one time in odds, else with the
// value that value makes.
func (g gen) keyed(k Key, odds int, value func() Value) Record {
	if g.rng.IntN(odds) == 0 {
		return Record{Key: k}
	}
	return Record{Key: k, Value: value()}
}

func (g gen) record() Record {
	key := func() string { return g.str() }
	switch g.rng.IntN(11) {
	case 0, 1:
		legacy := g.rng.IntN(4) == 0
		k := OffsetCommitKey{Legacy: legacy, Group: key(), Topic: key(), Partition: g.i32()}
		return g.keyed(k, 5, func() Value {
			ver := int16(g.rng.IntN(5))
			if legacy {
				ver = 0
			}
			v := NewOffsetCommitValue(ver)
			v.Offset, v.Metadata, v.CommitTimestamp = g.i64(), g.str(), g.i64()
			if ver >= 3 {
				v.LeaderEpoch = g.i32()
			}
			if ver == 1 {
				v.ExpireTimestamp = g.i64()
			}
			if ver >= 4 {
				v.TopicID = g.uuid()
				v.UnknownTags = g.tags(0)
			}
			return v
		})
	case 2:
		k := GroupMetadataKey{Group: key()}
		return g.keyed(k, 5, func() Value {
			ver := int16(g.rng.IntN(5))
			v := &GroupMetadataValue{}
			v.Version = ver
			v.ProtocolType, v.Generation, v.Protocol, v.Leader = g.str(), g.i32(), g.nstr(), g.nstr()
			v.CurrentStateTimestamp = -1
			if ver >= 2 {
				v.CurrentStateTimestamp = g.i64()
			}
			for i := g.rng.IntN(3); i > 0; i-- {
				m := kmsg.GroupMetadataValueMember{MemberID: g.str(), ClientID: g.str(), ClientHost: g.str(),
					RebalanceTimeoutMillis: -1, SessionTimeoutMillis: g.i32(), Subscription: g.bytes(), Assignment: g.bytes()}
				if ver >= 3 {
					m.InstanceID = g.nstr()
				}
				if ver >= 1 {
					m.RebalanceTimeoutMillis = g.i32()
				}
				if ver >= 4 {
					m.UnknownTags = g.tags(-1)
				}
				v.Members = append(v.Members, m)
			}
			if ver >= 4 {
				v.UnknownTags = g.tags(-1)
			}
			return v
		})
	case 3:
		return g.keyed(ConsumerGroupMetadataKey{GroupID: key()}, 5, func() Value {
			return &ConsumerGroupMetadataValue{Epoch: g.i32(), MetadataHash: g.i64(), UnknownTags: g.tags(0)}
		})
	case 4:
		k := ConsumerGroupPartitionMetadataKey{GroupID: key()}
		return g.keyed(k, 5, func() Value {
			v := &ConsumerGroupPartitionMetadataValue{UnknownTags: g.tags(-1)}
			for i := g.rng.IntN(3); i > 0; i-- {
				t := PartitionMetadataTopic{TopicID: g.uuid(), TopicName: g.str(), NumPartitions: g.i32(), UnknownTags: g.tags(-1)}
				for j := g.rng.IntN(3); j > 0; j-- {
					t.PartitionMetadata = append(t.PartitionMetadata, PartitionMetadataPartition{Partition: g.i32(), Racks: g.strs(), UnknownTags: g.tags(-1)})
				}
				v.Topics = append(v.Topics, t)
			}
			return v
		})
	case 5:
		k := ConsumerGroupMemberMetadataKey{GroupID: key(), MemberID: key()}
		return g.keyed(k, 5, func() Value {
			v := &ConsumerGroupMemberMetadataValue{InstanceID: g.nstr(), RackID: g.nstr(), ClientID: g.str(), ClientHost: g.str(),
				SubscribedTopicNames: g.strs(), SubscribedTopicRegex: g.nstr(), RebalanceTimeoutMs: g.i32(), ServerAssignor: g.nstr(),
				UnknownTags: g.tags(0)}
			switch g.rng.IntN(3) {
			case 0: // consumer protocol: explicit null
			case 1: // absent tag: the generated class's default
				v.ClassicMemberMetadata = &ClassicMemberMetadata{}
			default:
				c := &ClassicMemberMetadata{SessionTimeoutMs: 1 + int32(g.rng.IntN(1000)), UnknownTags: g.tags(-1)}
				for i := g.rng.IntN(3); i > 0; i-- {
					c.SupportedProtocols = append(c.SupportedProtocols, ClassicProtocol{Name: g.str(), Metadata: g.bytes(), UnknownTags: g.tags(-1)})
				}
				v.ClassicMemberMetadata = c
			}
			return v
		})
	case 6:
		return g.keyed(ConsumerGroupTargetAssignmentMetadataKey{GroupID: key()}, 5, func() Value {
			return &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: g.i32(), AssignmentTimestamp: g.i64(), UnknownTags: g.tags(0)}
		})
	case 7:
		k := ConsumerGroupTargetAssignmentMemberKey{GroupID: key(), MemberID: key()}
		return g.keyed(k, 5, func() Value {
			v := &ConsumerGroupTargetAssignmentMemberValue{UnknownTags: g.tags(-1)}
			for i := g.rng.IntN(3); i > 0; i-- {
				v.TopicPartitions = append(v.TopicPartitions, TargetAssignmentTopic{TopicID: g.uuid(), Partitions: g.i32s(), UnknownTags: g.tags(-1)})
			}
			return v
		})
	case 8:
		k := ConsumerGroupCurrentMemberAssignmentKey{GroupID: key(), MemberID: key()}
		return g.keyed(k, 5, func() Value {
			topics := func() []CurrentAssignmentTopic {
				var ts []CurrentAssignmentTopic
				for i := g.rng.IntN(3); i > 0; i-- {
					ts = append(ts, CurrentAssignmentTopic{TopicID: g.uuid(), Partitions: g.i32s(), AssignmentEpochs: g.i32s(), UnknownTags: g.tags(0)})
				}
				return ts
			}
			return &ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: g.i32(), PreviousMemberEpoch: g.i32(),
				State: MemberState(g.rng.IntN(3)), AssignedPartitions: topics(), PartitionsPendingRevocation: topics(), UnknownTags: g.tags(-1)}
		})
	case 9:
		return g.keyed(ConsumerGroupRegularExpressionKey{GroupID: key(), RegularExpression: key()}, 5, func() Value {
			return &ConsumerGroupRegularExpressionValue{Topics: g.strs(), Version: g.i64(), Timestamp: g.i64(), UnknownTags: g.tags(-1)}
		})
	default:
		types := []Type{9, 10, 11, 12, 13, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 1000, -1}
		k := OtherKey{Type: types[g.rng.IntN(len(types))], Raw: string(g.bytes())}
		return g.keyed(k, 3, func() Value {
			raw := g.bytes()
			if raw == nil {
				raw = []byte{}
			}
			return &OtherValue{Raw: raw}
		})
	}
}

// TestRoundTripEveryTypeAndVersion round-trips random records of every
// record type, every value version and tombstones, and checks that each
// type/version was covered.
func TestRoundTripEveryTypeAndVersion(t *testing.T) {
	g := gen{rng: rand.New(rand.NewPCG(1, 2))}
	seen := map[string]bool{}
	for range 20000 {
		r := g.record()
		checkRoundTrip(t, r)
		name := r.Type().String()
		if r.Value == nil {
			name += "/tombstone"
		} else if r.Type().Known() {
			name += fmt.Sprintf("/v%d", r.Value.ValueVersion())
		}
		seen[name] = true
	}
	var want []string
	for ver := range 5 {
		want = append(want, fmt.Sprintf("OffsetCommit/v%d", ver), fmt.Sprintf("GroupMetadata/v%d", ver))
	}
	for _, typ := range []Type{0, 3, 4, 5, 6, 7, 8, 16} {
		want = append(want, typ.String()+"/v0")
	}
	for _, typ := range []Type{0, 1, 2, 3, 4, 5, 6, 7, 8, 16} {
		want = append(want, typ.String()+"/tombstone")
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no round trip of %s", w)
		}
	}
}

// TestRoundTripEdgeValues covers values the random generator may miss.
func TestRoundTripEdgeValues(t *testing.T) {
	long := string(bytes.Repeat([]byte{'x'}, 0x7fff))
	var tags kmsg.Tags
	tags.Set(1, []byte{})
	tags.Set(300, []byte{1, 2, 3})
	for _, r := range []Record{
		{Key: OffsetCommitKey{Group: long, Topic: "", Partition: -1 << 31}},
		{Key: GroupMetadataKey{Group: ""}},
		{Key: ConsumerGroupMetadataKey{GroupID: long}, Value: &ConsumerGroupMetadataValue{Epoch: -1 << 31, MetadataHash: -1, UnknownTags: tags}},
		{Key: ConsumerGroupTargetAssignmentMetadataKey{GroupID: "g"}, Value: &ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: -1, AssignmentTimestamp: 1<<63 - 1}},
		{Key: ConsumerGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m"}, Value: &ConsumerGroupCurrentMemberAssignmentValue{
			MemberEpoch: -1, PreviousMemberEpoch: -1, State: MemberUnknown,
			AssignedPartitions: []CurrentAssignmentTopic{{TopicID: topicA, Partitions: make([]int32, 200), AssignmentEpochs: make([]int32, 200), UnknownTags: tags}},
		}},
		{Key: ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: long}, Value: &ConsumerGroupMemberMetadataValue{
			InstanceID: sp(""), RackID: sp(""), ClientID: long, ServerAssignor: sp(""), SubscribedTopicRegex: sp(""),
			ClassicMemberMetadata: &ClassicMemberMetadata{SupportedProtocols: []ClassicProtocol{{}}},
		}},
	} {
		checkRoundTrip(t, r)
	}
}
