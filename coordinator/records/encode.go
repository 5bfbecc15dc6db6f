package records

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// EncodeRecord encodes r as Kafka writes it: the key at version 0 after its
// record type, the value at the version it carries (ValueVersion), and a nil
// value for a tombstone. To write what a given Kafka release writes, shape
// the record with AsWrittenBy first.
//
// It fails where Kafka's generated writers fail: a value version the schema
// does not define, a string longer than 32767 bytes, tagged fields on a
// non-flexible version, and an unknown tag that the schema defines. A
// value's type must match the key's.
func EncodeRecord(r Record) (key, value []byte, err error) {
	if r.Key == nil {
		return nil, nil, errors.New("encode record: nil key")
	}
	key, err = encodeKey(r.Key)
	if err != nil {
		return nil, nil, err
	}
	if r.Value == nil {
		return key, nil, nil
	}
	value, err = encodeValue(r.Key.RecordType(), r.Value)
	if err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// enc accumulates one encoded struct and the first error. Invariant: once
// err is set, buf is no longer meaningful and is discarded by the caller.
type enc struct {
	buf []byte
	err error
}

func (e *enc) failf(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf(format, args...)
	}
}

func (e *enc) int8(v int8)      { e.buf = kbin.AppendInt8(e.buf, v) }
func (e *enc) int32(v int32)    { e.buf = kbin.AppendInt32(e.buf, v) }
func (e *enc) int64(v int64)    { e.buf = kbin.AppendInt64(e.buf, v) }
func (e *enc) uuid(v [16]byte)  { e.buf = kbin.AppendUuid(e.buf, v) }
func (e *enc) uvarint(v uint32) { e.buf = kbin.AppendUvarint(e.buf, v) }

func (e *enc) checkLen(field string, s string) bool {
	if len(s) > 0x7fff {
		e.failf("string %s is %d bytes, more than 32767", field, len(s))
		return false
	}
	return true
}

func (e *enc) string(field, s string, flexible bool) {
	if !e.checkLen(field, s) {
		return
	}
	if flexible {
		e.buf = kbin.AppendCompactString(e.buf, s)
	} else {
		e.buf = kbin.AppendString(e.buf, s)
	}
}

func (e *enc) nullableString(field string, s *string, flexible bool) {
	if s != nil && !e.checkLen(field, *s) {
		return
	}
	if flexible {
		e.buf = kbin.AppendCompactNullableString(e.buf, s)
	} else {
		e.buf = kbin.AppendNullableString(e.buf, s)
	}
}

func (e *enc) compactBytes(b []byte) { e.buf = kbin.AppendCompactBytes(e.buf, b) }
func (e *enc) compactArrayLen(n int) { e.buf = kbin.AppendCompactArrayLen(e.buf, n) }
func (e *enc) compactStrings(field string, ss []string) {
	e.compactArrayLen(len(ss))
	for _, s := range ss {
		e.string(field, s, true)
	}
}

func (e *enc) compactInt32s(vs []int32) {
	e.compactArrayLen(len(vs))
	for _, v := range vs {
		e.int32(v)
	}
}

// tags writes a tagged-field section: the schema's fields present in known
// (written in ascending tag order, here at most tag 0), then the unknown
// ones, which kmsg.Tags yields sorted. Invariant: every unknown tag is above
// every tag the schema defines for the struct (maxKnown), so the section is
// in ascending order as Kafka writes it; a collision is an error.
func (e *enc) tags(structName string, maxKnown int, known []taggedField, unknown *kmsg.Tags) {
	unknown.Each(func(tag uint32, _ []byte) {
		if int64(tag) <= int64(maxKnown) {
			e.failf("%s: unknown tagged field %d is defined by the schema; set the field instead", structName, tag)
		}
	})
	e.uvarint(uint32(len(known) + unknown.Len()))
	for _, f := range known {
		e.uvarint(f.tag)
		e.uvarint(uint32(len(f.data)))
		e.buf = append(e.buf, f.data...)
	}
	e.buf = unknown.AppendEach(e.buf)
}

// taggedField is a known tagged field, encoded, for enc.tags.
type taggedField struct {
	tag  uint32
	data []byte
}

func encodeKey(k Key) ([]byte, error) {
	t := k.RecordType()
	e := &enc{buf: kbin.AppendInt16(nil, int16(t))}
	switch k := k.(type) {
	case OffsetCommitKey:
		e.string("group", k.Group, false)
		e.string("topic", k.Topic, false)
		e.int32(k.Partition)
	case GroupMetadataKey:
		e.string("group", k.Group, false)
	case ConsumerGroupMetadataKey:
		e.string("GroupId", k.GroupID, false)
	case ConsumerGroupPartitionMetadataKey:
		e.string("GroupId", k.GroupID, false)
	case ConsumerGroupMemberMetadataKey:
		e.string("GroupId", k.GroupID, false)
		e.string("MemberId", k.MemberID, false)
	case ConsumerGroupTargetAssignmentMetadataKey:
		e.string("GroupId", k.GroupID, false)
	case ConsumerGroupTargetAssignmentMemberKey:
		e.string("GroupId", k.GroupID, false)
		e.string("MemberId", k.MemberID, false)
	case ConsumerGroupCurrentMemberAssignmentKey:
		e.string("GroupId", k.GroupID, false)
		e.string("MemberId", k.MemberID, false)
	case ConsumerGroupRegularExpressionKey:
		e.string("GroupId", k.GroupID, false)
		e.string("RegularExpression", k.RegularExpression, false)
	case OtherKey:
		if k.Type.Known() {
			return nil, fmt.Errorf("encode OtherKey: %s is a known record type; use its key type", k.Type)
		}
		e.buf = append(e.buf, k.Raw...)
	default:
		return nil, fmt.Errorf("encode record key: unsupported key type %T", k)
	}
	if e.err != nil {
		return nil, fmt.Errorf("encode %s: %w", keyName(t), e.err)
	}
	return e.buf, nil
}

func encodeValue(t Type, v Value) ([]byte, error) {
	if ov, ok := v.(*OtherValue); ok {
		if t.Known() {
			return nil, fmt.Errorf("encode %s: OtherValue given for a known record type", valueName(t))
		}
		return append([]byte{}, ov.Raw...), nil
	}
	if !t.Known() {
		return nil, fmt.Errorf("encode record value: %T given for unknown %s; use OtherValue", v, t)
	}
	if !valueMatches(t, v) {
		return nil, fmt.Errorf("encode %s: value is %T, which belongs to another record type", valueName(t), v)
	}
	ver := v.ValueVersion()
	if lo, hi := valueVersions(t); ver < lo || ver > hi {
		return nil, fmt.Errorf("encode %s: unknown value version %d (Kafka defines v%d–v%d)", valueName(t), ver, lo, hi)
	}
	e := &enc{buf: kbin.AppendInt16(nil, ver)}
	switch v := v.(type) {
	case *OffsetCommitValue:
		writeOffsetCommitValue(e, v)
	case *GroupMetadataValue:
		writeGroupMetadataValue(e, v)
	case *ConsumerGroupMetadataValue:
		e.int32Tag0Int64("ConsumerGroupMetadataValue", v.Epoch, v.MetadataHash, &v.UnknownTags)
	case *ConsumerGroupPartitionMetadataValue:
		writeConsumerGroupPartitionMetadataValue(e, v)
	case *ConsumerGroupMemberMetadataValue:
		writeConsumerGroupMemberMetadataValue(e, v)
	case *ConsumerGroupTargetAssignmentMetadataValue:
		e.int32Tag0Int64("ConsumerGroupTargetAssignmentMetadataValue", v.AssignmentEpoch, v.AssignmentTimestamp, &v.UnknownTags)
	case *ConsumerGroupTargetAssignmentMemberValue:
		writeArray(e, v.TopicPartitions, func(tp *TargetAssignmentTopic) {
			e.uuid(tp.TopicID)
			e.compactInt32s(tp.Partitions)
			e.tags("TopicPartition", -1, nil, &tp.UnknownTags)
		})
		e.tags("ConsumerGroupTargetAssignmentMemberValue", -1, nil, &v.UnknownTags)
	case *ConsumerGroupCurrentMemberAssignmentValue:
		e.int32(v.MemberEpoch)
		e.int32(v.PreviousMemberEpoch)
		e.int8(int8(v.State))
		writeCurrentAssignmentTopics(e, v.AssignedPartitions)
		writeCurrentAssignmentTopics(e, v.PartitionsPendingRevocation)
		e.tags("ConsumerGroupCurrentMemberAssignmentValue", -1, nil, &v.UnknownTags)
	case *ConsumerGroupRegularExpressionValue:
		e.compactStrings("Topics", v.Topics)
		e.int64(v.Version)
		e.int64(v.Timestamp)
		e.tags("ConsumerGroupRegularExpressionValue", -1, nil, &v.UnknownTags)
	default:
		return nil, fmt.Errorf("encode %s: unsupported value type %T", valueName(t), v)
	}
	if e.err != nil {
		return nil, fmt.Errorf("encode %s v%d: %w", valueName(t), ver, e.err)
	}
	return e.buf, nil
}

// valueMatches reports whether v is the value type of record type t.
func valueMatches(t Type, v Value) bool {
	switch v.(type) {
	case *OffsetCommitValue:
		return t == TypeOffsetCommit || t == TypeLegacyOffsetCommit
	case *GroupMetadataValue:
		return t == TypeGroupMetadata
	case *ConsumerGroupMetadataValue:
		return t == TypeConsumerGroupMetadata
	case *ConsumerGroupPartitionMetadataValue:
		return t == TypeConsumerGroupPartitionMetadata
	case *ConsumerGroupMemberMetadataValue:
		return t == TypeConsumerGroupMemberMetadata
	case *ConsumerGroupTargetAssignmentMetadataValue:
		return t == TypeConsumerGroupTargetAssignmentMetadata
	case *ConsumerGroupTargetAssignmentMemberValue:
		return t == TypeConsumerGroupTargetAssignmentMember
	case *ConsumerGroupCurrentMemberAssignmentValue:
		return t == TypeConsumerGroupCurrentMemberAssignment
	case *ConsumerGroupRegularExpressionValue:
		return t == TypeConsumerGroupRegularExpression
	}
	return false
}

// writeOffsetCommitValue checks what kmsg's writer does not, then lets it
// write (kmsg.OffsetCommitValue.AppendTo follows OffsetCommitValue.json).
func writeOffsetCommitValue(e *enc, v *OffsetCommitValue) {
	e.checkLen("metadata", v.Metadata)
	if v.Version < 4 && v.UnknownTags.Len() > 0 {
		e.failf("tagged fields set, but v%d is not flexible", v.Version)
	}
	v.UnknownTags.Each(func(tag uint32, _ []byte) {
		if tag == 0 {
			e.failf("OffsetCommitValue: unknown tagged field 0 is topicId; set TopicID instead")
		}
	})
	if e.err != nil {
		return
	}
	// AppendTo writes the version itself.
	e.buf = v.OffsetCommitValue.AppendTo(e.buf[:0])
}

// writeGroupMetadataValue checks what kmsg's writer does not, then lets it
// write (kmsg.GroupMetadataValue.AppendTo follows GroupMetadataValue.json).
func writeGroupMetadataValue(e *enc, v *GroupMetadataValue) {
	flexible := v.Version >= 4
	e.checkLen("protocolType", v.ProtocolType)
	if v.Protocol != nil {
		e.checkLen("protocol", *v.Protocol)
	}
	if v.Leader != nil {
		e.checkLen("leader", *v.Leader)
	}
	tagged := v.UnknownTags.Len() > 0
	for i := range v.Members {
		m := &v.Members[i]
		e.checkLen("memberId", m.MemberID)
		if m.InstanceID != nil {
			e.checkLen("groupInstanceId", *m.InstanceID)
		}
		e.checkLen("clientId", m.ClientID)
		e.checkLen("clientHost", m.ClientHost)
		tagged = tagged || m.UnknownTags.Len() > 0
	}
	if !flexible && tagged {
		e.failf("tagged fields set, but v%d is not flexible", v.Version)
	}
	if e.err != nil {
		return
	}
	e.buf = v.GroupMetadataValue.AppendTo(e.buf[:0])
}

func writeConsumerGroupPartitionMetadataValue(e *enc, v *ConsumerGroupPartitionMetadataValue) {
	writeArray(e, v.Topics, func(t *PartitionMetadataTopic) {
		e.uuid(t.TopicID)
		e.string("TopicName", t.TopicName, true)
		e.int32(t.NumPartitions)
		writeArray(e, t.PartitionMetadata, func(p *PartitionMetadataPartition) {
			e.int32(p.Partition)
			e.compactStrings("Racks", p.Racks)
			e.tags("PartitionMetadata", -1, nil, &p.UnknownTags)
		})
		e.tags("TopicMetadata", -1, nil, &t.UnknownTags)
	})
	e.tags("ConsumerGroupPartitionMetadataValue", -1, nil, &v.UnknownTags)
}

func writeConsumerGroupMemberMetadataValue(e *enc, v *ConsumerGroupMemberMetadataValue) {
	e.nullableString("InstanceId", v.InstanceID, true)
	e.nullableString("RackId", v.RackID, true)
	e.string("ClientId", v.ClientID, true)
	e.string("ClientHost", v.ClientHost, true)
	e.compactStrings("SubscribedTopicNames", v.SubscribedTopicNames)
	e.nullableString("SubscribedTopicRegex", v.SubscribedTopicRegex, true)
	e.int32(v.RebalanceTimeoutMs)
	e.nullableString("ServerAssignor", v.ServerAssignor, true)
	// ClassicMemberMetadata is written as Kafka's generated writer does it
	// (ConsumerGroupMemberMetadataValue.write in the 4.0.0 and 4.4.0 jars):
	//   - null (a consumer-protocol member): tag 0, size 1, marker 0;
	//   - equal to the default, an empty struct: not written;
	//   - otherwise: tag 0, size, marker 1, then the struct; the marker counts
	//     in the size.
	var known []taggedField
	switch c := v.ClassicMemberMetadata; {
	case c == nil:
		known = append(known, taggedField{0, []byte{0}})
	case c.isDefault():
	default:
		s := &enc{buf: []byte{1}}
		s.int32(c.SessionTimeoutMs)
		writeArray(s, c.SupportedProtocols, func(p *ClassicProtocol) {
			s.string("Name", p.Name, true)
			s.compactBytes(p.Metadata)
			s.tags("ClassicProtocol", -1, nil, &p.UnknownTags)
		})
		s.tags("ClassicMemberMetadata", -1, nil, &c.UnknownTags)
		if s.err != nil {
			e.failf("%w", s.err)
			return
		}
		known = append(known, taggedField{0, s.buf})
	}
	e.tags("ConsumerGroupMemberMetadataValue", 0, known, &v.UnknownTags)
}

func writeCurrentAssignmentTopics(e *enc, ts []CurrentAssignmentTopic) {
	writeArray(e, ts, func(t *CurrentAssignmentTopic) {
		e.uuid(t.TopicID)
		e.compactInt32s(t.Partitions)
		var known []taggedField
		// Java's default for AssignmentEpochs is an empty list, and an empty
		// list is not written (ConsumerGroupCurrentMemberAssignmentValue
		// .TopicPartitions.write in the 4.4.0 jar).
		if len(t.AssignmentEpochs) > 0 {
			s := &enc{}
			s.compactInt32s(t.AssignmentEpochs)
			known = append(known, taggedField{0, s.buf})
		}
		e.tags("TopicPartitions", 0, known, &t.UnknownTags)
	})
}

// writeArray writes xs as a compact array, each element by one.
func writeArray[T any](e *enc, xs []T, one func(*T)) {
	e.compactArrayLen(len(xs))
	for i := range xs {
		one(&xs[i])
	}
}

// int32Tag0Int64 writes the layout of ConsumerGroupMetadataValue and
// ConsumerGroupTargetAssignmentMetadataValue: v, then the tagged fields
// with tag0 as tag 0 unless it is 0 (Kafka's default, not written).
func (e *enc) int32Tag0Int64(typ string, v int32, tag0 int64, unknown *kmsg.Tags) {
	var known []taggedField
	e.int32(v)
	if tag0 != 0 {
		known = append(known, taggedField{0, kbin.AppendInt64(nil, tag0)})
	}
	e.tags(typ, 0, known, unknown)
}
