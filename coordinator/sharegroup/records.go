// Package sharegroup is the reference model of Kafka's share groups
// (KIP-932) for the recovery oracle: the records the group coordinator
// writes to __consumer_offsets for a share group (record types 10–15) and
// the records the share coordinator writes to __share_group_state
// (ShareSnapshot, ShareUpdate), their replay into the state they describe,
// and the share assignor's bounds.
//
// # Wire format
//
// As for every coordinator record (CoordinatorRecordSerde): the key is an
// int16 record type then the key struct at version 0, never flexible; the
// value is an int16 version (0) then the value struct, flexible: compact
// strings and arrays, and a tagged-field section at the end of every
// struct. A null value is a tombstone. Schemas, from the 4.2–4.4 branches
// of the Kafka source (identical in those releases except that 4.4 adds
// the tagged AssignmentTimestamp to ShareGroupTargetAssignmentMetadataValue,
// which 4.2 readers skip):
//
//	__consumer_offsets (group-coordinator/src/main/resources/common/message/)
//	10 ShareGroupMemberMetadata          key GroupId, MemberId; value RackId (nullable), ClientId, ClientHost, SubscribedTopicNames
//	11 ShareGroupMetadata                key GroupId; value Epoch, MetadataHash
//	12 ShareGroupTargetAssignmentMetadata key GroupId; value AssignmentEpoch, tag 0 AssignmentTimestamp (4.4)
//	13 ShareGroupTargetAssignmentMember  key GroupId, MemberId; value TopicPartitions [TopicId, Partitions]
//	14 ShareGroupCurrentMemberAssignment key GroupId, MemberId; value MemberEpoch, PreviousMemberEpoch, State, AssignedPartitions [TopicId, Partitions]
//	15 ShareGroupStatePartitionMetadata  key GroupId; value InitializingTopics, InitializedTopics [TopicId, TopicName, Partitions], DeletingTopics [TopicId, TopicName]
//
//	__share_group_state (share-coordinator/src/main/resources/common/message/)
//	0  ShareSnapshot  key GroupId, TopicId, Partition; value SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset, tag 0 DeliveryCompleteCount (default -1), CreateTimestamp, WriteTimestamp, StateBatches
//	1  ShareUpdate    key GroupId, TopicId, Partition; value SnapshotEpoch, LeaderEpoch, StartOffset, tag 0 DeliveryCompleteCount (default -1), StateBatches
//
// A StateBatch is FirstOffset, LastOffset, DeliveryState (0 available,
// 2 acknowledged, 4 archived), DeliveryCount.
package sharegroup

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
)

// The record types of a share group in __consumer_offsets.
const (
	TypeMemberMetadata           int16 = 10
	TypeGroupMetadata            int16 = 11
	TypeTargetAssignmentMetadata int16 = 12
	TypeTargetAssignmentMember   int16 = 13
	TypeCurrentMemberAssignment  int16 = 14
	TypeStatePartitionMetadata   int16 = 15
)

// The record types of __share_group_state.
const (
	TypeShareSnapshot int16 = 0
	TypeShareUpdate   int16 = 1
)

// The delivery states a state batch records.
const (
	StateAvailable    int8 = 0
	StateAcknowledged int8 = 2
	StateArchived     int8 = 4
)

// TopicPartitions is a topic id and partitions of it.
type TopicPartitions struct {
	TopicID    [16]byte
	Partitions []int32
}

// TopicInfo names a topic of ShareGroupStatePartitionMetadata.
type TopicInfo struct {
	TopicID    [16]byte
	TopicName  string
	Partitions []int32 // nil for DeletingTopics
}

// GroupRecord is one share-group record of __consumer_offsets. Value is
// nil for a tombstone; otherwise one of the *Value types.
type GroupRecord struct {
	Type     int16
	GroupID  string
	MemberID string // of types 10, 13, 14
	Value    any
}

// MemberMetadataValue is ShareGroupMemberMetadataValue.
type MemberMetadataValue struct {
	RackID               *string
	ClientID, ClientHost string
	SubscribedTopicNames []string
}

// GroupMetadataValue is ShareGroupMetadataValue.
type GroupMetadataValue struct {
	Epoch        int32
	MetadataHash int64
}

// TargetAssignmentMetadataValue is ShareGroupTargetAssignmentMetadataValue.
type TargetAssignmentMetadataValue struct {
	AssignmentEpoch     int32
	AssignmentTimestamp int64 // tag 0, 4.4; 0 when absent
}

// TargetAssignmentMemberValue is ShareGroupTargetAssignmentMemberValue.
type TargetAssignmentMemberValue struct {
	TopicPartitions []TopicPartitions
}

// CurrentMemberAssignmentValue is ShareGroupCurrentMemberAssignmentValue.
type CurrentMemberAssignmentValue struct {
	MemberEpoch, PreviousMemberEpoch int32
	State                            int8
	AssignedPartitions               []TopicPartitions
}

// StatePartitionMetadataValue is ShareGroupStatePartitionMetadataValue.
type StatePartitionMetadataValue struct {
	InitializingTopics, InitializedTopics []TopicInfo
	DeletingTopics                        []TopicInfo
}

// StateBatch is a range of offsets in one delivery state.
type StateBatch struct {
	FirstOffset, LastOffset int64
	DeliveryState           int8
	DeliveryCount           int16
}

// StateKey names a share-partition: the key of both __share_group_state
// record types.
type StateKey struct {
	GroupID   string
	TopicID   [16]byte
	Partition int32
}

// StateRecord is one record of __share_group_state. Value is nil for a
// tombstone; otherwise *SnapshotValue or *UpdateValue.
type StateRecord struct {
	Type  int16
	Key   StateKey
	Value any
}

// SnapshotValue is ShareSnapshotValue.
type SnapshotValue struct {
	SnapshotEpoch, StateEpoch, LeaderEpoch int32
	StartOffset                            int64
	DeliveryCompleteCount                  int32 // tag 0; -1 when absent
	CreateTimestamp, WriteTimestamp        int64
	StateBatches                           []StateBatch
}

// UpdateValue is ShareUpdateValue.
type UpdateValue struct {
	SnapshotEpoch, LeaderEpoch int32
	StartOffset                int64 // -1: not updated
	DeliveryCompleteCount      int32 // tag 0; -1 when absent
	StateBatches               []StateBatch
}

// ErrNotShare is returned by DecodeGroupRecord for a record of
// __consumer_offsets that is not a share group's.
var ErrNotShare = errors.New("not a share-group record")

// DecodeGroupRecord decodes a record of __consumer_offsets of a share
// group; ErrNotShare for another record type.
func DecodeGroupRecord(key, value []byte) (GroupRecord, error) {
	rd := kbin.Reader{Src: key}
	t := rd.Int16()
	if !rd.Ok() {
		return GroupRecord{}, fmt.Errorf("key of %d bytes: too short for a record type", len(key))
	}
	if t < TypeMemberMetadata || t > TypeStatePartitionMetadata {
		return GroupRecord{}, ErrNotShare
	}
	r := GroupRecord{Type: t, GroupID: rd.String()}
	if t == TypeMemberMetadata || t == TypeTargetAssignmentMember || t == TypeCurrentMemberAssignment {
		r.MemberID = rd.String()
	}
	if err := rd.Complete(); err != nil || len(rd.Src) != 0 {
		return r, fmt.Errorf("share-group record type %d: a key of %d bytes is not GroupId[, MemberId]", t, len(key))
	}
	if value == nil {
		return r, nil
	}
	vr := kbin.Reader{Src: value}
	if err := valueVersion0(&vr, "share-group record", t); err != nil {
		return r, err
	}
	switch t {
	case TypeMemberMetadata:
		v := &MemberMetadataValue{RackID: vr.CompactNullableString(), ClientID: vr.CompactString(), ClientHost: vr.CompactString()}
		for n := compactLen(&vr); n > 0; n-- {
			v.SubscribedTopicNames = append(v.SubscribedTopicNames, vr.CompactString())
		}
		skipTags(&vr)
		r.Value = v
	case TypeGroupMetadata:
		r.Value = &GroupMetadataValue{Epoch: vr.Int32(), MetadataHash: vr.Int64()}
		skipTags(&vr)
	case TypeTargetAssignmentMetadata:
		v := &TargetAssignmentMetadataValue{AssignmentEpoch: vr.Int32()}
		readTags(&vr, func(tag uint32, b []byte) {
			if tag == 0 && len(b) == 8 {
				v.AssignmentTimestamp = (&kbin.Reader{Src: b}).Int64()
			}
		})
		r.Value = v
	case TypeTargetAssignmentMember:
		r.Value = &TargetAssignmentMemberValue{TopicPartitions: readTopicPartitions(&vr)}
		skipTags(&vr)
	case TypeCurrentMemberAssignment:
		v := &CurrentMemberAssignmentValue{MemberEpoch: vr.Int32(), PreviousMemberEpoch: vr.Int32(), State: vr.Int8()}
		v.AssignedPartitions = readTopicPartitions(&vr)
		skipTags(&vr)
		r.Value = v
	case TypeStatePartitionMetadata:
		v := &StatePartitionMetadataValue{}
		v.InitializingTopics = readTopicInfos(&vr, true)
		v.InitializedTopics = readTopicInfos(&vr, true)
		v.DeletingTopics = readTopicInfos(&vr, false)
		skipTags(&vr)
		r.Value = v
	}
	return r, valueEnd(&vr, "share-group record", t)
}

// valueVersion0 reads the version of a value of record type t (what:
// "share-group record", "share state record"); only 0 is known.
func valueVersion0(vr *kbin.Reader, what string, t int16) error {
	if v := vr.Int16(); v != 0 {
		return fmt.Errorf("%s type %d: value version %d, only 0 is known", what, t, v)
	}
	return nil
}

// valueEnd reports a value of record type t that ran short or has bytes
// after it.
func valueEnd(vr *kbin.Reader, what string, t int16) error {
	if err := vr.Complete(); err != nil {
		return fmt.Errorf("%s type %d: value: %w", what, t, err)
	}
	if len(vr.Src) != 0 {
		return fmt.Errorf("%s type %d: %d bytes after the value", what, t, len(vr.Src))
	}
	return nil
}

// EncodeGroupRecord encodes r as Kafka writes it (key, value; a nil value
// for a tombstone).
func EncodeGroupRecord(r GroupRecord) (key, value []byte, err error) {
	key = kbin.AppendInt16(nil, r.Type)
	key = kbin.AppendString(key, r.GroupID)
	if r.Type == TypeMemberMetadata || r.Type == TypeTargetAssignmentMember || r.Type == TypeCurrentMemberAssignment {
		key = kbin.AppendString(key, r.MemberID)
	}
	if r.Value == nil {
		return key, nil, nil
	}
	value = kbin.AppendInt16(nil, 0)
	switch v := r.Value.(type) {
	case *MemberMetadataValue:
		value = kbin.AppendCompactNullableString(value, v.RackID)
		value = kbin.AppendCompactString(value, v.ClientID)
		value = kbin.AppendCompactString(value, v.ClientHost)
		value = kbin.AppendCompactArrayLen(value, len(v.SubscribedTopicNames))
		for _, s := range v.SubscribedTopicNames {
			value = kbin.AppendCompactString(value, s)
		}
		value = kbin.AppendUvarint(value, 0)
	case *GroupMetadataValue:
		value = kbin.AppendInt32(value, v.Epoch)
		value = kbin.AppendInt64(value, v.MetadataHash)
		value = kbin.AppendUvarint(value, 0)
	case *TargetAssignmentMetadataValue:
		value = kbin.AppendInt32(value, v.AssignmentEpoch)
		if v.AssignmentTimestamp != 0 {
			value = kbin.AppendUvarint(value, 1)
			value = kbin.AppendUvarint(value, 0)
			value = kbin.AppendUvarint(value, 8)
			value = kbin.AppendInt64(value, v.AssignmentTimestamp)
		} else {
			value = kbin.AppendUvarint(value, 0)
		}
	case *TargetAssignmentMemberValue:
		value = appendTopicPartitions(value, v.TopicPartitions)
		value = kbin.AppendUvarint(value, 0)
	case *CurrentMemberAssignmentValue:
		value = kbin.AppendInt32(value, v.MemberEpoch)
		value = kbin.AppendInt32(value, v.PreviousMemberEpoch)
		value = kbin.AppendInt8(value, v.State)
		value = appendTopicPartitions(value, v.AssignedPartitions)
		value = kbin.AppendUvarint(value, 0)
	case *StatePartitionMetadataValue:
		value = appendTopicInfos(value, v.InitializingTopics, true)
		value = appendTopicInfos(value, v.InitializedTopics, true)
		value = appendTopicInfos(value, v.DeletingTopics, false)
		value = kbin.AppendUvarint(value, 0)
	default:
		return nil, nil, fmt.Errorf("share-group record type %d: value %T is not one of its types", r.Type, r.Value)
	}
	return key, value, nil
}

// DecodeStateRecord decodes a record of __share_group_state.
func DecodeStateRecord(key, value []byte) (StateRecord, error) {
	rd := kbin.Reader{Src: key}
	t := rd.Int16()
	r := StateRecord{Type: t, Key: StateKey{GroupID: rd.String(), TopicID: rd.Uuid(), Partition: rd.Int32()}}
	if err := rd.Complete(); err != nil || len(rd.Src) != 0 {
		return r, fmt.Errorf("share state record: a key of %d bytes is not GroupId, TopicId, Partition", len(key))
	}
	if t != TypeShareSnapshot && t != TypeShareUpdate {
		return r, fmt.Errorf("share state record type %d: only ShareSnapshot (0) and ShareUpdate (1) are known", t)
	}
	if value == nil {
		return r, nil
	}
	vr := kbin.Reader{Src: value}
	if err := valueVersion0(&vr, "share state record", t); err != nil {
		return r, err
	}
	dcc := func(v *int32) func(uint32, []byte) {
		*v = -1
		return func(tag uint32, b []byte) {
			if tag == 0 && len(b) == 4 {
				*v = (&kbin.Reader{Src: b}).Int32()
			}
		}
	}
	if t == TypeShareSnapshot {
		v := &SnapshotValue{SnapshotEpoch: vr.Int32(), StateEpoch: vr.Int32(), LeaderEpoch: vr.Int32(), StartOffset: vr.Int64()}
		v.CreateTimestamp, v.WriteTimestamp = vr.Int64(), vr.Int64()
		v.StateBatches = readBatches(&vr)
		readTags(&vr, dcc(&v.DeliveryCompleteCount))
		r.Value = v
	} else {
		v := &UpdateValue{SnapshotEpoch: vr.Int32(), LeaderEpoch: vr.Int32(), StartOffset: vr.Int64()}
		v.StateBatches = readBatches(&vr)
		readTags(&vr, dcc(&v.DeliveryCompleteCount))
		r.Value = v
	}
	return r, valueEnd(&vr, "share state record", t)
}

// EncodeStateRecord encodes r as Kafka writes it.
func EncodeStateRecord(r StateRecord) (key, value []byte, err error) {
	key = kbin.AppendInt16(nil, r.Type)
	key = kbin.AppendString(key, r.Key.GroupID)
	key = kbin.AppendUuid(key, r.Key.TopicID)
	key = kbin.AppendInt32(key, r.Key.Partition)
	if r.Value == nil {
		return key, nil, nil
	}
	value = kbin.AppendInt16(nil, 0)
	tags := func(dst []byte, dcc int32) []byte {
		if dcc == -1 {
			return kbin.AppendUvarint(dst, 0)
		}
		dst = kbin.AppendUvarint(dst, 1)
		dst = kbin.AppendUvarint(dst, 0)
		dst = kbin.AppendUvarint(dst, 4)
		return kbin.AppendInt32(dst, dcc)
	}
	switch v := r.Value.(type) {
	case *SnapshotValue:
		value = kbin.AppendInt32(value, v.SnapshotEpoch)
		value = kbin.AppendInt32(value, v.StateEpoch)
		value = kbin.AppendInt32(value, v.LeaderEpoch)
		value = kbin.AppendInt64(value, v.StartOffset)
		value = kbin.AppendInt64(value, v.CreateTimestamp)
		value = kbin.AppendInt64(value, v.WriteTimestamp)
		value = appendBatches(value, v.StateBatches)
		value = tags(value, v.DeliveryCompleteCount)
	case *UpdateValue:
		value = kbin.AppendInt32(value, v.SnapshotEpoch)
		value = kbin.AppendInt32(value, v.LeaderEpoch)
		value = kbin.AppendInt64(value, v.StartOffset)
		value = appendBatches(value, v.StateBatches)
		value = tags(value, v.DeliveryCompleteCount)
	default:
		return nil, nil, fmt.Errorf("share state record type %d: value %T is not one of its types", r.Type, r.Value)
	}
	return key, value, nil
}

func compactLen(rd *kbin.Reader) int {
	n := rd.CompactArrayLen()
	if n < 0 {
		return 0
	}
	return int(n)
}

func readTopicPartitions(rd *kbin.Reader) []TopicPartitions {
	return readStructs(rd, func() TopicPartitions {
		return TopicPartitions{TopicID: rd.Uuid(), Partitions: readInt32s(rd)}
	})
}

func appendTopicPartitions(dst []byte, tps []TopicPartitions) []byte {
	return appendStructs(dst, tps, func(dst []byte, tp TopicPartitions) []byte {
		dst = kbin.AppendUuid(dst, tp.TopicID)
		return appendInt32s(dst, tp.Partitions)
	})
}

func readTopicInfos(rd *kbin.Reader, withPartitions bool) []TopicInfo {
	return readStructs(rd, func() TopicInfo {
		ti := TopicInfo{TopicID: rd.Uuid(), TopicName: rd.CompactString()}
		if withPartitions {
			ti.Partitions = readInt32s(rd)
		}
		return ti
	})
}

func appendTopicInfos(dst []byte, tis []TopicInfo, withPartitions bool) []byte {
	return appendStructs(dst, tis, func(dst []byte, ti TopicInfo) []byte {
		dst = kbin.AppendUuid(dst, ti.TopicID)
		dst = kbin.AppendCompactString(dst, ti.TopicName)
		if withPartitions {
			dst = appendInt32s(dst, ti.Partitions)
		}
		return dst
	})
}

func readBatches(rd *kbin.Reader) []StateBatch {
	return readStructs(rd, func() StateBatch {
		return StateBatch{FirstOffset: rd.Int64(), LastOffset: rd.Int64(), DeliveryState: rd.Int8(), DeliveryCount: rd.Int16()}
	})
}

func appendBatches(dst []byte, bs []StateBatch) []byte {
	return appendStructs(dst, bs, func(dst []byte, b StateBatch) []byte {
		dst = kbin.AppendInt64(dst, b.FirstOffset)
		dst = kbin.AppendInt64(dst, b.LastOffset)
		dst = kbin.AppendInt8(dst, b.DeliveryState)
		return kbin.AppendInt16(dst, b.DeliveryCount)
	})
}

// readStructs reads a compact array of structs that one reads, each
// followed by tagged fields, which are skipped.
func readStructs[T any](rd *kbin.Reader, one func() T) []T {
	var out []T
	for n := compactLen(rd); n > 0 && rd.Ok(); n-- {
		x := one()
		skipTags(rd)
		out = append(out, x)
	}
	return out
}

// appendStructs writes xs as a compact array of structs that one writes,
// each with no tagged fields.
func appendStructs[T any](dst []byte, xs []T, one func([]byte, T) []byte) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(xs))
	for _, x := range xs {
		dst = one(dst, x)
		dst = kbin.AppendUvarint(dst, 0)
	}
	return dst
}

// readInt32s reads a compact array of int32 (nil when empty).
func readInt32s(rd *kbin.Reader) []int32 {
	var out []int32
	for m := compactLen(rd); m > 0 && rd.Ok(); m-- {
		out = append(out, rd.Int32())
	}
	return out
}

func appendInt32s(dst []byte, ps []int32) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(ps))
	for _, p := range ps {
		dst = kbin.AppendInt32(dst, p)
	}
	return dst
}

func skipTags(rd *kbin.Reader) { readTags(rd, nil) }

func readTags(rd *kbin.Reader, f func(tag uint32, b []byte)) {
	for n := rd.Uvarint(); n > 0 && rd.Ok(); n-- {
		tag := rd.Uvarint()
		b := rd.Span(int(rd.Uvarint()))
		if f != nil {
			f(tag, b)
		}
	}
}
