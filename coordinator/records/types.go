package records

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Type is the int16 that starts every record key: the apiKey of the
// coordinator-key schema (CoordinatorRecordType in 4.1+).
type Type int16

// The record types this package decodes into typed structs.
const (
	TypeLegacyOffsetCommit                    Type = 0
	TypeOffsetCommit                          Type = 1
	TypeGroupMetadata                         Type = 2
	TypeConsumerGroupMetadata                 Type = 3
	TypeConsumerGroupPartitionMetadata        Type = 4
	TypeConsumerGroupMemberMetadata           Type = 5
	TypeConsumerGroupTargetAssignmentMetadata Type = 6
	TypeConsumerGroupTargetAssignmentMember   Type = 7
	TypeConsumerGroupCurrentMemberAssignment  Type = 8
	TypeConsumerGroupRegularExpression        Type = 16
)

var typeNames = map[Type]string{
	TypeLegacyOffsetCommit:                    "LegacyOffsetCommit",
	TypeOffsetCommit:                          "OffsetCommit",
	TypeGroupMetadata:                         "GroupMetadata",
	TypeConsumerGroupMetadata:                 "ConsumerGroupMetadata",
	TypeConsumerGroupPartitionMetadata:        "ConsumerGroupPartitionMetadata",
	TypeConsumerGroupMemberMetadata:           "ConsumerGroupMemberMetadata",
	TypeConsumerGroupTargetAssignmentMetadata: "ConsumerGroupTargetAssignmentMetadata",
	TypeConsumerGroupTargetAssignmentMember:   "ConsumerGroupTargetAssignmentMember",
	TypeConsumerGroupCurrentMemberAssignment:  "ConsumerGroupCurrentMemberAssignment",
	TypeConsumerGroupRegularExpression:        "ConsumerGroupRegularExpression",
	// Types this package does not decode, named for messages only
	// (CoordinatorRecordType of 4.4; 9 was ShareGroupPartitionMetadata in
	// 4.0 and is unused from 4.1).
	9:  "ShareGroupPartitionMetadata",
	10: "ShareGroupMemberMetadata",
	11: "ShareGroupMetadata",
	12: "ShareGroupTargetAssignmentMetadata",
	13: "ShareGroupTargetAssignmentMember",
	14: "ShareGroupCurrentMemberAssignment",
	15: "ShareGroupStatePartitionMetadata",
	17: "StreamsGroupMetadata",
	19: "StreamsGroupMemberMetadata",
	20: "StreamsGroupTargetAssignmentMetadata",
	21: "StreamsGroupTargetAssignmentMember",
	22: "StreamsGroupCurrentMemberAssignment",
	23: "StreamsGroupTopology",
}

// String returns the schema name without Key/Value, or "type N".
func (t Type) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type %d", int16(t))
}

// Known reports whether this package decodes t into typed structs.
func (t Type) Known() bool {
	return (t >= TypeLegacyOffsetCommit && t <= TypeConsumerGroupCurrentMemberAssignment) ||
		t == TypeConsumerGroupRegularExpression
}

// Record is one __consumer_offsets record: a key and its value, or a
// tombstone when Value is nil.
type Record struct {
	Key Key
	// Value is nil for a tombstone (a record with a null value, which
	// deletes the key on compaction and on replay).
	Value Value
}

// Type returns the record type of the key.
func (r Record) Type() Type { return r.Key.RecordType() }

// IsTombstone reports whether the record deletes its key.
func (r Record) IsTombstone() bool { return r.Value == nil }

// Key is the key of a record. Its concrete type fixes the record type. Key
// types are comparable, so a Key can index a map (for example the latest
// record per key, as compaction keeps it).
type Key interface {
	RecordType() Type
	isKey()
}

// Value is the value of a record. Concrete values are pointers.
type Value interface {
	// ValueVersion is the int16 that starts the encoded value.
	ValueVersion() int16
	isValue()
}

// --- keys (all "flexibleVersions": "none", written at version 0) ---

// OffsetCommitKey is the key of types 1 (OffsetCommitKey.json) and 0
// (LegacyOffsetCommitKey.json, same fields; Kafka 4.x never writes it).
//
// It is not kmsg.OffsetCommitKey because there the record type is the
// Version field, and a zero value would silently be the legacy type 0.
type OffsetCommitKey struct {
	// Legacy selects record type 0 instead of 1.
	Legacy    bool
	Group     string
	Topic     string
	Partition int32
}

// GroupMetadataKey is the key of type 2 (GroupMetadataKey.json).
type GroupMetadataKey struct {
	Group string
}

// ConsumerGroupMetadataKey is the key of type 3 (ConsumerGroupMetadataKey.json).
type ConsumerGroupMetadataKey struct {
	GroupID string
}

// ConsumerGroupPartitionMetadataKey is the key of type 4
// (ConsumerGroupPartitionMetadataKey.json).
type ConsumerGroupPartitionMetadataKey struct {
	GroupID string
}

// ConsumerGroupMemberMetadataKey is the key of type 5
// (ConsumerGroupMemberMetadataKey.json).
type ConsumerGroupMemberMetadataKey struct {
	GroupID  string
	MemberID string
}

// ConsumerGroupTargetAssignmentMetadataKey is the key of type 6
// (ConsumerGroupTargetAssignmentMetadataKey.json).
type ConsumerGroupTargetAssignmentMetadataKey struct {
	GroupID string
}

// ConsumerGroupTargetAssignmentMemberKey is the key of type 7
// (ConsumerGroupTargetAssignmentMemberKey.json).
type ConsumerGroupTargetAssignmentMemberKey struct {
	GroupID  string
	MemberID string
}

// ConsumerGroupCurrentMemberAssignmentKey is the key of type 8
// (ConsumerGroupCurrentMemberAssignmentKey.json).
type ConsumerGroupCurrentMemberAssignmentKey struct {
	GroupID  string
	MemberID string
}

// ConsumerGroupRegularExpressionKey is the key of type 16
// (ConsumerGroupRegularExpressionKey.json).
type ConsumerGroupRegularExpressionKey struct {
	GroupID           string
	RegularExpression string
}

// OtherKey is the key of a record type this package does not decode (share
// and streams groups, or anything newer). Raw holds the key bytes after the
// type, unparsed, as a string so that the key stays comparable.
type OtherKey struct {
	Type Type
	Raw  string
}

// RecordType implements Key.
func (k OffsetCommitKey) RecordType() Type {
	if k.Legacy {
		return TypeLegacyOffsetCommit
	}
	return TypeOffsetCommit
}

// RecordType implements Key.
func (GroupMetadataKey) RecordType() Type { return TypeGroupMetadata }

// RecordType implements Key.
func (ConsumerGroupMetadataKey) RecordType() Type { return TypeConsumerGroupMetadata }

// RecordType implements Key.
func (ConsumerGroupPartitionMetadataKey) RecordType() Type { return TypeConsumerGroupPartitionMetadata }

// RecordType implements Key.
func (ConsumerGroupMemberMetadataKey) RecordType() Type { return TypeConsumerGroupMemberMetadata }

// RecordType implements Key.
func (ConsumerGroupTargetAssignmentMetadataKey) RecordType() Type {
	return TypeConsumerGroupTargetAssignmentMetadata
}

// RecordType implements Key.
func (ConsumerGroupTargetAssignmentMemberKey) RecordType() Type {
	return TypeConsumerGroupTargetAssignmentMember
}

// RecordType implements Key.
func (ConsumerGroupCurrentMemberAssignmentKey) RecordType() Type {
	return TypeConsumerGroupCurrentMemberAssignment
}

// RecordType implements Key.
func (ConsumerGroupRegularExpressionKey) RecordType() Type { return TypeConsumerGroupRegularExpression }

// RecordType implements Key.
func (k OtherKey) RecordType() Type { return k.Type }

func (OffsetCommitKey) isKey()                          {}
func (GroupMetadataKey) isKey()                         {}
func (ConsumerGroupMetadataKey) isKey()                 {}
func (ConsumerGroupPartitionMetadataKey) isKey()        {}
func (ConsumerGroupMemberMetadataKey) isKey()           {}
func (ConsumerGroupTargetAssignmentMetadataKey) isKey() {}
func (ConsumerGroupTargetAssignmentMemberKey) isKey()   {}
func (ConsumerGroupCurrentMemberAssignmentKey) isKey()  {}
func (ConsumerGroupRegularExpressionKey) isKey()        {}
func (OtherKey) isKey()                                 {}

// --- values ---

// OffsetCommitValue is the value of types 1 and 0 (OffsetCommitValue.json
// v0–4; LegacyOffsetCommitValue.json v0 for type 0). kmsg's type matches the
// schema of 4.1+ field for field: leaderEpoch v3+, expireTimestamp v1 only,
// flexible from v4 with the tagged topicId (tag 0). Kafka 4.0's schema has
// no topicId; 4.0 writes v3, so the difference never reaches the wire.
//
// Decoding sets the Java defaults of fields absent from the version
// (LeaderEpoch -1 before v3, ExpireTimestamp -1 except in v1), which
// kmsg.OffsetCommitValue.Default does not. Build new values with
// NewOffsetCommitValue for the same reason.
type OffsetCommitValue struct {
	kmsg.OffsetCommitValue
}

// NewOffsetCommitValue returns a value of the given version with Kafka's
// defaults: LeaderEpoch -1 and ExpireTimestamp -1 (no retention time).
func NewOffsetCommitValue(version int16) *OffsetCommitValue {
	v := &OffsetCommitValue{}
	v.reset(version)
	return v
}

// reset makes v what NewOffsetCommitValue(version) returns.
func (v *OffsetCommitValue) reset(version int16) {
	*v = OffsetCommitValue{}
	v.Version = version
	v.LeaderEpoch = -1
	v.ExpireTimestamp = -1
}

// GroupMetadataValue is the value of type 2 (GroupMetadataValue.json v0–4),
// the state of a classic group. kmsg's type matches the schema: rebalance
// timeout v1+, currentStateTimestamp v2+, groupInstanceId v3+, flexible v4.
// Kafka 4.x writes v3.
type GroupMetadataValue struct {
	kmsg.GroupMetadataValue
}

// ConsumerGroupMetadataValue is the value of type 3
// (ConsumerGroupMetadataValue.json v0, flexible): the group epoch.
type ConsumerGroupMetadataValue struct {
	Epoch int32
	// MetadataHash (tag 0, default 0; KIP-1101, written from 4.1) is the hash
	// of the subscribed topics' metadata.
	MetadataHash int64
	UnknownTags  kmsg.Tags
}

// ConsumerGroupPartitionMetadataValue is the value of type 4
// (ConsumerGroupPartitionMetadataValue.json v0, flexible): the metadata of
// the subscribed topics. Written by 4.0 only; 4.1+ writes its tombstone.
type ConsumerGroupPartitionMetadataValue struct {
	Topics      []PartitionMetadataTopic
	UnknownTags kmsg.Tags
}

// PartitionMetadataTopic is ConsumerGroupPartitionMetadataValue.TopicMetadata.
type PartitionMetadataTopic struct {
	TopicID       [16]byte
	TopicName     string
	NumPartitions int32
	// PartitionMetadata is deprecated in the schema; 4.0 writes it empty.
	PartitionMetadata []PartitionMetadataPartition
	UnknownTags       kmsg.Tags
}

// PartitionMetadataPartition is ConsumerGroupPartitionMetadataValue.PartitionMetadata.
type PartitionMetadataPartition struct {
	Partition   int32
	Racks       []string
	UnknownTags kmsg.Tags
}

// ConsumerGroupMemberMetadataValue is the value of type 5
// (ConsumerGroupMemberMetadataValue.json v0, flexible): a member's
// subscription and client facts.
type ConsumerGroupMemberMetadataValue struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	// RebalanceTimeoutMs defaults to -1 in the schema.
	RebalanceTimeoutMs int32
	ServerAssignor     *string
	// ClassicMemberMetadata (tag 0, nullable struct) is nil for members that
	// use the consumer protocol and set for members that use the classic
	// protocol in a consumer group. Kafka always writes the tag, as an
	// explicit null for consumer-protocol members. Its generated class
	// defaults the field to an empty struct, not null, so a value without
	// the tag decodes to &ClassicMemberMetadata{} (which Kafka's replay
	// would take for a classic member), and an empty struct is not written.
	ClassicMemberMetadata *ClassicMemberMetadata
	UnknownTags           kmsg.Tags
}

// ClassicMemberMetadata is ConsumerGroupMemberMetadataValue.ClassicMemberMetadata.
type ClassicMemberMetadata struct {
	SessionTimeoutMs   int32
	SupportedProtocols []ClassicProtocol
	UnknownTags        kmsg.Tags
}

// isDefault reports whether c equals the generated class's default, an
// empty struct, which Kafka does not write.
func (c *ClassicMemberMetadata) isDefault() bool {
	return c.SessionTimeoutMs == 0 && len(c.SupportedProtocols) == 0 && c.UnknownTags.Len() == 0
}

// ClassicProtocol is ConsumerGroupMemberMetadataValue.ClassicProtocol.
type ClassicProtocol struct {
	Name        string
	Metadata    []byte
	UnknownTags kmsg.Tags
}

// ConsumerGroupTargetAssignmentMetadataValue is the value of type 6
// (ConsumerGroupTargetAssignmentMetadataValue.json v0, flexible).
type ConsumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch int32
	// AssignmentTimestamp (tag 0, default 0; KIP-1263, written from 4.3) is
	// when the assignment computation finished, in ms.
	AssignmentTimestamp int64
	UnknownTags         kmsg.Tags
}

// ConsumerGroupTargetAssignmentMemberValue is the value of type 7
// (ConsumerGroupTargetAssignmentMemberValue.json v0, flexible): a member's
// target assignment.
type ConsumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []TargetAssignmentTopic
	UnknownTags     kmsg.Tags
}

// TargetAssignmentTopic is ConsumerGroupTargetAssignmentMemberValue.TopicPartition.
type TargetAssignmentTopic struct {
	TopicID     [16]byte
	Partitions  []int32
	UnknownTags kmsg.Tags
}

// MemberState is ConsumerGroupCurrentMemberAssignmentValue.State
// (MemberState.java).
type MemberState int8

// Member states as stored.
const (
	MemberStable               MemberState = 0
	MemberUnrevokedPartitions  MemberState = 1
	MemberUnreleasedPartitions MemberState = 2
	MemberUnknown              MemberState = 127
)

// String returns Kafka's name of the state.
func (s MemberState) String() string {
	switch s {
	case MemberStable:
		return "STABLE"
	case MemberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case MemberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	case MemberUnknown:
		return "UNKNOWN"
	}
	return fmt.Sprintf("MemberState(%d)", int8(s))
}

// ConsumerGroupCurrentMemberAssignmentValue is the value of type 8
// (ConsumerGroupCurrentMemberAssignmentValue.json v0, flexible): a member's
// epochs, state and owned partitions.
type ConsumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch                 int32
	PreviousMemberEpoch         int32
	State                       MemberState
	AssignedPartitions          []CurrentAssignmentTopic
	PartitionsPendingRevocation []CurrentAssignmentTopic
	UnknownTags                 kmsg.Tags
}

// CurrentAssignmentTopic is ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions.
type CurrentAssignmentTopic struct {
	TopicID    [16]byte
	Partitions []int32
	// AssignmentEpochs (tag 0; KIP-1251, written from 4.3) holds the epoch at
	// which each partition was assigned, index for index with Partitions.
	// The schema says "default": null, but Kafka's generated class defaults
	// it to an empty list and writes it only when non-empty, so nil and
	// empty both mean absent here, and decoding yields nil for both (and for
	// an explicit null).
	AssignmentEpochs []int32
	UnknownTags      kmsg.Tags
}

// ConsumerGroupRegularExpressionValue is the value of type 16
// (ConsumerGroupRegularExpressionValue.json v0, flexible): the topics a
// regex subscription resolved to.
type ConsumerGroupRegularExpressionValue struct {
	Topics []string
	// Version is the metadata image version the regex was resolved at.
	Version int64
	// Timestamp is when it was resolved, in ms.
	Timestamp   int64
	UnknownTags kmsg.Tags
}

// OtherValue is the value of a record type this package does not decode.
type OtherValue struct {
	// Raw is the whole value as stored, version prefix included, unparsed:
	// Kafka skips unknown record types without reading their values, so even
	// a value too short for a version is kept.
	Raw []byte
}

// ValueVersion implements Value.
func (v *OffsetCommitValue) ValueVersion() int16 { return v.Version }

// ValueVersion implements Value.
func (v *GroupMetadataValue) ValueVersion() int16 { return v.Version }

// ValueVersion implements Value.
func (*ConsumerGroupMetadataValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
func (*ConsumerGroupPartitionMetadataValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
func (*ConsumerGroupMemberMetadataValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
func (*ConsumerGroupTargetAssignmentMetadataValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
func (*ConsumerGroupTargetAssignmentMemberValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
func (*ConsumerGroupCurrentMemberAssignmentValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
func (*ConsumerGroupRegularExpressionValue) ValueVersion() int16 { return 0 }

// ValueVersion implements Value.
// It is -1 when Raw is too short to hold a version.
func (v *OtherValue) ValueVersion() int16 {
	if len(v.Raw) < 2 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(v.Raw))
}

func (*OffsetCommitValue) isValue()                          {}
func (*GroupMetadataValue) isValue()                         {}
func (*ConsumerGroupMetadataValue) isValue()                 {}
func (*ConsumerGroupPartitionMetadataValue) isValue()        {}
func (*ConsumerGroupMemberMetadataValue) isValue()           {}
func (*ConsumerGroupTargetAssignmentMetadataValue) isValue() {}
func (*ConsumerGroupTargetAssignmentMemberValue) isValue()   {}
func (*ConsumerGroupCurrentMemberAssignmentValue) isValue()  {}
func (*ConsumerGroupRegularExpressionValue) isValue()        {}
func (*OtherValue) isValue()                                 {}
