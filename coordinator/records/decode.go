package records

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DecodeRecord decodes one __consumer_offsets record. A nil value is a
// tombstone (Record.Value is nil); an empty non-nil value is not, and fails
// for the known types as it does in Kafka. Record types this package does
// not know decode to OtherKey and OtherValue without error, whatever their
// value holds, so a replay can skip them.
//
// The key and value slices are not retained.
func DecodeRecord(key, value []byte) (Record, error) {
	return decodeRecord(key, value, nil)
}

// Decoder decodes records as DecodeRecord does, for a run of them (a
// partition's load): it keeps the strings it decoded (group ids, topic
// names, member ids, commit metadata, up to a bound) and hands the same
// string back when the bytes repeat, as a partition names the same few
// groups and topics in record after record. A Decoder is not safe for
// concurrent use.
type Decoder struct {
	strings *interner
}

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder { return &Decoder{strings: newInterner()} }

// Decode is DecodeRecord.
func (d *Decoder) Decode(key, value []byte) (Record, error) {
	return decodeRecord(key, value, d.strings)
}

// KeyType returns the record type a key starts with, and false for a key
// too short to hold one (which Decode refuses).
func KeyType(key []byte) (Type, bool) {
	if len(key) < 2 {
		return 0, false
	}
	return Type(binary.BigEndian.Uint16(key)), true
}

// DecodeOffsetCommit decodes an offset commit record (a key of type 0 or 1,
// KeyType) as Decode does, without allocating for the record: the key is
// returned by value and the value decoded into *v, which it overwrites
// whole, so one v can serve record after record (a partition's load, where
// nearly every record is an offset commit). tombstone reports a nil value
// (Decode's nil Record.Value); *v is then left as it was. Where Decode
// returns Record{Key: k, Value: w}, this returns k and sets *v to *w; where
// Decode fails, this fails with the same error and leaves *v in no
// particular state. A key of another type is an error.
func (d *Decoder) DecodeOffsetCommit(key, value []byte, v *OffsetCommitValue) (k OffsetCommitKey, tombstone bool, err error) {
	t, ok := KeyType(key)
	if !ok {
		return OffsetCommitKey{}, false, fmt.Errorf("decode offset commit: a key of %d bytes holds no record type", len(key))
	}
	if t != TypeLegacyOffsetCommit && t != TypeOffsetCommit {
		return OffsetCommitKey{}, false, fmt.Errorf("decode offset commit: a key of %s, not of type 0 or 1", t)
	}
	if group, topic, partition, ok := splitOffsetCommitKey(key); ok {
		k = OffsetCommitKey{Legacy: t == TypeLegacyOffsetCommit, Group: d.strings.get(group), Topic: d.strings.get(topic), Partition: partition}
	} else if k, err = decodeOffsetCommitKey(t, key, d.strings); err != nil {
		return OffsetCommitKey{}, false, err
	}
	if value == nil {
		return k, true, nil
	}
	if readOffsetCommitValueFast(t, value, d.strings, v) {
		return k, false, nil
	}
	if err := decodeOffsetCommitValue(t, value, d.strings, v); err != nil {
		return OffsetCommitKey{}, false, err
	}
	return k, false, nil
}

func decodeRecord(key, value []byte, strings *interner) (Record, error) {
	if len(key) < 2 {
		r := newReader(key)
		r.int16("record type")
		return Record{}, fmt.Errorf("decode record key: %w", r.err)
	}
	t := Type(binary.BigEndian.Uint16(key))
	if !t.Known() {
		rec := Record{Key: OtherKey{Type: t, Raw: string(key[2:])}}
		if value != nil {
			rec.Value = &OtherValue{Raw: append([]byte{}, value...)}
		}
		return rec, nil
	}
	k, err := decodeKey(t, key, strings)
	if err != nil {
		return Record{}, err
	}
	if value == nil {
		return Record{Key: k}, nil
	}
	v, err := decodeValue(t, value, strings)
	if err != nil {
		return Record{}, err
	}
	return Record{Key: k, Value: v}, nil
}

// keyName is the schema name of the key of a known type.
func keyName(t Type) string { return t.String() + "Key" }

// valueName is the schema name of the value of a known type.
func valueName(t Type) string { return t.String() + "Value" }

// decodeKey decodes a key of a known type; keys are never flexible.
func decodeKey(t Type, key []byte, strings *interner) (Key, error) {
	if t == TypeLegacyOffsetCommit || t == TypeOffsetCommit {
		k, err := decodeOffsetCommitKey(t, key, strings)
		if err != nil {
			return nil, err
		}
		return k, nil
	}
	r := newReader(key)
	r.strings = strings
	r.int16("record type")
	var k Key
	switch t {
	case TypeGroupMetadata:
		k = GroupMetadataKey{Group: r.string("group", false)}
	case TypeConsumerGroupMetadata:
		k = ConsumerGroupMetadataKey{GroupID: r.string("GroupId", false)}
	case TypeConsumerGroupPartitionMetadata:
		k = ConsumerGroupPartitionMetadataKey{GroupID: r.string("GroupId", false)}
	case TypeConsumerGroupMemberMetadata:
		k = ConsumerGroupMemberMetadataKey{GroupID: r.string("GroupId", false), MemberID: r.string("MemberId", false)}
	case TypeConsumerGroupTargetAssignmentMetadata:
		k = ConsumerGroupTargetAssignmentMetadataKey{GroupID: r.string("GroupId", false)}
	case TypeConsumerGroupTargetAssignmentMember:
		k = ConsumerGroupTargetAssignmentMemberKey{GroupID: r.string("GroupId", false), MemberID: r.string("MemberId", false)}
	case TypeConsumerGroupCurrentMemberAssignment:
		k = ConsumerGroupCurrentMemberAssignmentKey{GroupID: r.string("GroupId", false), MemberID: r.string("MemberId", false)}
	case TypeConsumerGroupRegularExpression:
		k = ConsumerGroupRegularExpressionKey{GroupID: r.string("GroupId", false), RegularExpression: r.string("RegularExpression", false)}
	default:
		return nil, fmt.Errorf("decode record key: no decoder for %s", t)
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("decode %s: %w", keyName(t), err)
	}
	return k, nil
}

// decodeOffsetCommitKey is decodeKey for types 0 and 1, by value.
func decodeOffsetCommitKey(t Type, key []byte, strings *interner) (OffsetCommitKey, error) {
	r := newReader(key)
	r.strings = strings
	r.int16("record type")
	k := OffsetCommitKey{
		Legacy:    t == TypeLegacyOffsetCommit,
		Group:     r.string("group", false),
		Topic:     r.string("topic", false),
		Partition: r.int32("partition"),
	}
	if err := r.done(); err != nil {
		return OffsetCommitKey{}, fmt.Errorf("decode %s: %w", keyName(t), err)
	}
	return k, nil
}

// valueVersions is the range of value versions Kafka reads per known type
// (validVersions of the value schema in 4.1–4.4).
func valueVersions(t Type) (lo, hi int16) {
	switch t {
	case TypeOffsetCommit, TypeGroupMetadata:
		return 0, 4
	}
	// LegacyOffsetCommitValue and every KIP-848 value: v0 only.
	return 0, 0
}

// valueVersion reads the version a value of type t starts with and checks
// that Kafka reads it.
func valueVersion(r *reader, t Type) (int16, error) {
	ver := r.int16("value version")
	if r.err != nil {
		return 0, fmt.Errorf("decode %s: %w", valueName(t), r.err)
	}
	if lo, hi := valueVersions(t); ver < lo || ver > hi {
		// Kafka: UnknownRecordVersionException. 4.0 read type 0 as
		// OffsetCommitValue v0–4; 4.1+ reads it as LegacyOffsetCommitValue v0.
		return 0, fmt.Errorf("decode %s: unknown value version %d (Kafka reads v%d–v%d)", valueName(t), ver, lo, hi)
	}
	return ver, nil
}

// valueDone checks that the value of type t at version ver was read whole.
func valueDone(r *reader, t Type, ver int16) error {
	if err := r.done(); err != nil {
		return fmt.Errorf("decode %s v%d: %w", valueName(t), ver, err)
	}
	return nil
}

// decodeOffsetCommitValue is decodeValue for types 0 and 1, into v.
func decodeOffsetCommitValue(t Type, value []byte, strings *interner, v *OffsetCommitValue) error {
	r := newReader(value)
	r.strings = strings
	ver, err := valueVersion(r, t)
	if err != nil {
		return err
	}
	readOffsetCommitValue(r, ver, v)
	return valueDone(r, t, ver)
}

func decodeValue(t Type, value []byte, strings *interner) (Value, error) {
	if t == TypeLegacyOffsetCommit || t == TypeOffsetCommit {
		v := new(OffsetCommitValue)
		if err := decodeOffsetCommitValue(t, value, strings, v); err != nil {
			return nil, err
		}
		return v, nil
	}
	r := newReader(value)
	r.strings = strings
	ver, err := valueVersion(r, t)
	if err != nil {
		return nil, err
	}
	var v Value
	switch t {
	case TypeGroupMetadata:
		v = readGroupMetadataValue(r, ver)
	case TypeConsumerGroupMetadata:
		v = readConsumerGroupMetadataValue(r)
	case TypeConsumerGroupPartitionMetadata:
		v = readConsumerGroupPartitionMetadataValue(r)
	case TypeConsumerGroupMemberMetadata:
		v = readConsumerGroupMemberMetadataValue(r)
	case TypeConsumerGroupTargetAssignmentMetadata:
		v = readConsumerGroupTargetAssignmentMetadataValue(r)
	case TypeConsumerGroupTargetAssignmentMember:
		v = readConsumerGroupTargetAssignmentMemberValue(r)
	case TypeConsumerGroupCurrentMemberAssignment:
		v = readConsumerGroupCurrentMemberAssignmentValue(r)
	case TypeConsumerGroupRegularExpression:
		v = readConsumerGroupRegularExpressionValue(r)
	default:
		return nil, fmt.Errorf("decode %s: no decoder", valueName(t))
	}
	if err := valueDone(r, t, ver); err != nil {
		return nil, err
	}
	return v, nil
}

// readOffsetCommitValue follows OffsetCommitValue.json into v, which it
// overwrites whole; fields absent from the version get the schema defaults
// (leaderEpoch -1, expireTimestamp -1).
func readOffsetCommitValue(r *reader, ver int16, v *OffsetCommitValue) {
	flexible := ver >= 4
	v.reset(ver)
	v.Offset = r.int64("offset")
	if ver >= 3 {
		v.LeaderEpoch = r.int32("leaderEpoch")
	}
	v.Metadata = r.string("metadata", flexible)
	v.CommitTimestamp = r.int64("commitTimestamp")
	if ver == 1 {
		v.ExpireTimestamp = r.int64("expireTimestamp")
	}
	if flexible {
		r.tagged("OffsetCommitValue", &v.UnknownTags, func(tag uint32, f *reader) bool {
			if tag != 0 {
				return false
			}
			v.TopicID = f.uuid("topicId")
			return true
		})
	}
}

// readGroupMetadataValue follows GroupMetadataValue.json.
func readGroupMetadataValue(r *reader, ver int16) *GroupMetadataValue {
	flexible := ver >= 4
	v := &GroupMetadataValue{}
	v.Version = ver
	v.ProtocolType = r.string("protocolType", flexible)
	v.Generation = r.int32("generation")
	v.Protocol = r.nullableString("protocol", flexible)
	v.Leader = r.nullableString("leader", flexible)
	v.CurrentStateTimestamp = -1
	if ver >= 2 {
		v.CurrentStateTimestamp = r.int64("currentStateTimestamp")
	}
	// Smallest encoded member per version, to bound the array before
	// allocating it.
	minMember := [...]int{0: 18, 1: 22, 2: 22, 3: 24, 4: 15}[ver]
	v.Members = readArray(r, "members", flexible, minMember, func(m *kmsg.GroupMetadataValueMember) {
		m.MemberID = r.string("memberId", flexible)
		if ver >= 3 {
			m.InstanceID = r.nullableString("groupInstanceId", flexible)
		}
		m.ClientID = r.string("clientId", flexible)
		m.ClientHost = r.string("clientHost", flexible)
		m.RebalanceTimeoutMillis = -1
		if ver >= 1 {
			m.RebalanceTimeoutMillis = r.int32("rebalanceTimeout")
		}
		m.SessionTimeoutMillis = r.int32("sessionTimeout")
		m.Subscription = r.bytes("subscription", flexible)
		m.Assignment = r.bytes("assignment", flexible)
		if flexible {
			r.tagged("MemberMetadata", &m.UnknownTags, nil)
		}
	})
	if flexible {
		r.tagged("GroupMetadataValue", &v.UnknownTags, nil)
	}
	return v
}

func readConsumerGroupMetadataValue(r *reader) *ConsumerGroupMetadataValue {
	v := &ConsumerGroupMetadataValue{}
	v.Epoch, v.MetadataHash = readInt32Tag0Int64(r, "ConsumerGroupMetadataValue", "Epoch", "MetadataHash", &v.UnknownTags)
	return v
}

func readConsumerGroupPartitionMetadataValue(r *reader) *ConsumerGroupPartitionMetadataValue {
	v := &ConsumerGroupPartitionMetadataValue{}
	// TopicMetadata: uuid 16 + name 1 + int32 4 + array 1 + tags 1.
	v.Topics = readArray(r, "Topics", true, 23, func(t *PartitionMetadataTopic) {
		t.TopicID = r.uuid("TopicId")
		t.TopicName = r.string("TopicName", true)
		t.NumPartitions = r.int32("NumPartitions")
		// PartitionMetadata: int32 4 + array 1 + tags 1.
		t.PartitionMetadata = readArray(r, "PartitionMetadata", true, 6, func(p *PartitionMetadataPartition) {
			p.Partition = r.int32("Partition")
			p.Racks = r.stringArray("Racks", true)
			r.tagged("PartitionMetadata", &p.UnknownTags, nil)
		})
		r.tagged("TopicMetadata", &t.UnknownTags, nil)
	})
	r.tagged("ConsumerGroupPartitionMetadataValue", &v.UnknownTags, nil)
	return v
}

func readConsumerGroupMemberMetadataValue(r *reader) *ConsumerGroupMemberMetadataValue {
	v := &ConsumerGroupMemberMetadataValue{}
	v.InstanceID = r.nullableString("InstanceId", true)
	v.RackID = r.nullableString("RackId", true)
	v.ClientID = r.string("ClientId", true)
	v.ClientHost = r.string("ClientHost", true)
	v.SubscribedTopicNames = r.stringArray("SubscribedTopicNames", true)
	v.SubscribedTopicRegex = r.nullableString("SubscribedTopicRegex", true)
	v.RebalanceTimeoutMs = r.int32("RebalanceTimeoutMs")
	v.ServerAssignor = r.nullableString("ServerAssignor", true)
	// Kafka's generated class defaults ClassicMemberMetadata to an empty
	// struct, not null, so an absent tag reads as that empty struct. Kafka
	// itself always writes the tag: null for consumer-protocol members.
	v.ClassicMemberMetadata = &ClassicMemberMetadata{}
	r.tagged("ConsumerGroupMemberMetadataValue", &v.UnknownTags, func(tag uint32, f *reader) bool {
		if tag != 0 {
			return false
		}
		v.ClassicMemberMetadata = readClassicMemberMetadata(f)
		return true
	})
	return v
}

// readClassicMemberMetadata reads the tagged nullable struct: a uvarint
// presence marker, then the struct. The generated reader
// (MessageDataGenerator.generateStructReader) takes the marker as a Java int
// and reads null when it is <= 0, so markers of 2^31 and above are null too.
func readClassicMemberMetadata(f *reader) *ClassicMemberMetadata {
	if m := f.uvarint("ClassicMemberMetadata presence"); m == 0 || m >= 1<<31 {
		return nil
	}
	c := &ClassicMemberMetadata{}
	c.SessionTimeoutMs = f.int32("SessionTimeoutMs")
	// ClassicProtocol: name 1 + bytes 1 + tags 1.
	c.SupportedProtocols = readArray(f, "SupportedProtocols", true, 3, func(p *ClassicProtocol) {
		p.Name = f.string("Name", true)
		p.Metadata = f.bytes("Metadata", true)
		f.tagged("ClassicProtocol", &p.UnknownTags, nil)
	})
	f.tagged("ClassicMemberMetadata", &c.UnknownTags, nil)
	return c
}

func readConsumerGroupTargetAssignmentMetadataValue(r *reader) *ConsumerGroupTargetAssignmentMetadataValue {
	v := &ConsumerGroupTargetAssignmentMetadataValue{}
	v.AssignmentEpoch, v.AssignmentTimestamp = readInt32Tag0Int64(r, "ConsumerGroupTargetAssignmentMetadataValue", "AssignmentEpoch", "AssignmentTimestamp", &v.UnknownTags)
	return v
}

func readConsumerGroupTargetAssignmentMemberValue(r *reader) *ConsumerGroupTargetAssignmentMemberValue {
	v := &ConsumerGroupTargetAssignmentMemberValue{}
	// TopicPartition: uuid 16 + array 1 + tags 1.
	v.TopicPartitions = readArray(r, "TopicPartitions", true, 18, func(t *TargetAssignmentTopic) {
		t.TopicID = r.uuid("TopicId")
		t.Partitions = r.int32Array("Partitions", true, false)
		r.tagged("TopicPartition", &t.UnknownTags, nil)
	})
	r.tagged("ConsumerGroupTargetAssignmentMemberValue", &v.UnknownTags, nil)
	return v
}

func readConsumerGroupCurrentMemberAssignmentValue(r *reader) *ConsumerGroupCurrentMemberAssignmentValue {
	v := &ConsumerGroupCurrentMemberAssignmentValue{}
	v.MemberEpoch = r.int32("MemberEpoch")
	v.PreviousMemberEpoch = r.int32("PreviousMemberEpoch")
	v.State = MemberState(r.int8("State"))
	v.AssignedPartitions = readCurrentAssignmentTopics(r, "AssignedPartitions")
	v.PartitionsPendingRevocation = readCurrentAssignmentTopics(r, "PartitionsPendingRevocation")
	r.tagged("ConsumerGroupCurrentMemberAssignmentValue", &v.UnknownTags, nil)
	return v
}

func readCurrentAssignmentTopics(r *reader, field string) []CurrentAssignmentTopic {
	// TopicPartitions: uuid 16 + array 1 + tags 1.
	return readArray(r, field, true, 18, func(t *CurrentAssignmentTopic) {
		t.TopicID = r.uuid("TopicId")
		t.Partitions = r.int32Array("Partitions", true, false)
		r.tagged("TopicPartitions", &t.UnknownTags, func(tag uint32, f *reader) bool {
			if tag != 0 {
				return false
			}
			// Null (which Kafka writes only if a caller set null) and empty
			// both mean "no epochs", like the absent field.
			if e := f.int32Array("AssignmentEpochs", true, true); len(e) > 0 {
				t.AssignmentEpochs = e
			}
			return true
		})
	})
}

func readConsumerGroupRegularExpressionValue(r *reader) *ConsumerGroupRegularExpressionValue {
	v := &ConsumerGroupRegularExpressionValue{}
	v.Topics = r.stringArray("Topics", true)
	v.Version = r.int64("Version")
	v.Timestamp = r.int64("Timestamp")
	r.tagged("ConsumerGroupRegularExpressionValue", &v.UnknownTags, nil)
	return v
}

// readArray reads a non-nullable array of structs that one reads in place,
// minElem bytes each at the least (arrayLen). It stops at the first error;
// an empty array is nil.
func readArray[T any](r *reader, name string, flexible bool, minElem int, one func(*T)) []T {
	n := r.arrayLen(name, flexible, false, minElem)
	if n <= 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		one(&out[i])
		if r.err != nil {
			break
		}
	}
	return out
}

// readInt32Tag0Int64 reads the layout of ConsumerGroupMetadataValue and
// ConsumerGroupTargetAssignmentMetadataValue: an int32, then tagged fields
// of which tag 0 is an int64 (0 when absent).
func readInt32Tag0Int64(r *reader, typ, int32Name, tagName string, unknown *kmsg.Tags) (v int32, tag0 int64) {
	v = r.int32(int32Name)
	r.tagged(typ, unknown, func(tag uint32, f *reader) bool {
		if tag != 0 {
			return false
		}
		tag0 = f.int64(tagName)
		return true
	})
	return v, tag0
}
