package records

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/version"
)

// AsWrittenBy returns r as the Kafka release of p writes it
// (GroupCoordinatorRecordHelpers of that branch): the value version it
// writes and only the fields that version and release write. The result is
// a fixed point of decoding what EncodeRecord makes of it, so it compares
// equal to what a replay of that broker's log decodes. r is not modified.
//
//   - OffsetCommitValue: v1 when ExpireTimestamp is set (not -1: the commit
//     carried a retention time), else p.OffsetCommitValueVersion (3 in 4.0,
//     4 from 4.1). Fields the version lacks get their defaults, and TopicID
//     is cleared where p does not write it.
//   - GroupMetadataValue: p.GroupMetadataValueVersion (3); tagged fields,
//     which v3 cannot hold, are dropped.
//   - ConsumerGroupMetadataValue: MetadataHash cleared before 4.1.
//   - ConsumerGroupPartitionMetadataValue: 4.0 only, with the deprecated
//     PartitionMetadata left empty as 4.0 writes it; from 4.1 only its
//     tombstone is written, so a value is an error.
//   - ConsumerGroupTargetAssignmentMetadataValue: AssignmentTimestamp
//     cleared before 4.3.
//   - ConsumerGroupCurrentMemberAssignmentValue: AssignmentEpochs cleared
//     before 4.3; from 4.3 every topic must carry one epoch per partition
//     (GroupCoordinatorRecordHelpers.toTopicPartitions).
//
// Record type 0 and record types this package does not decode are errors:
// no 4.x release writes them. Unknown tagged fields of flexible values are
// kept; Kafka 4.x writes none.
func AsWrittenBy(p version.Profile, r Record) (Record, error) {
	if r.Key == nil {
		return Record{}, fmt.Errorf("shape record for Kafka %s: nil key", p.Version)
	}
	t := r.Key.RecordType()
	if t == TypeLegacyOffsetCommit || !t.Known() {
		return Record{}, fmt.Errorf("shape %s record for Kafka %s: Kafka 4.x never writes it", t, p.Version)
	}
	if r.Value == nil {
		return r, nil
	}
	if !valueMatches(t, r.Value) {
		return Record{}, fmt.Errorf("shape %s record for Kafka %s: value is %T, which belongs to another record type", t, p.Version, r.Value)
	}
	out := Record{Key: r.Key}
	switch v := r.Value.(type) {
	case *OffsetCommitValue:
		c := *v
		if c.ExpireTimestamp != -1 {
			c.Version = p.OffsetCommitValueVersionWithExpiry
		} else {
			c.Version = p.OffsetCommitValueVersion
		}
		if c.Version < 3 {
			c.LeaderEpoch = -1
		}
		if c.Version != 1 {
			c.ExpireTimestamp = -1
		}
		if c.Version < 4 || !p.OffsetCommitTopicID {
			c.TopicID = [16]byte{}
		}
		if c.Version < 4 {
			c.UnknownTags = kmsg.Tags{}
		}
		out.Value = &c
	case *GroupMetadataValue:
		c := *v
		c.Version = p.GroupMetadataValueVersion
		if c.Version < 4 {
			c.UnknownTags = kmsg.Tags{}
			c.Members = copiedEach(c.Members, func(m *kmsg.GroupMetadataValueMember) {
				m.UnknownTags = kmsg.Tags{}
				if c.Version < 3 {
					m.InstanceID = nil
				}
			})
		}
		out.Value = &c
	case *ConsumerGroupMetadataValue:
		c := *v
		c.MetadataHash = keptIf(p.MetadataHash, c.MetadataHash)
		out.Value = &c
	case *ConsumerGroupPartitionMetadataValue:
		if !p.WritesPartitionMetadata {
			return Record{}, fmt.Errorf("shape %s record for Kafka %s: from 4.1 (KIP-1101) only its tombstone is written", t, p.Version)
		}
		c := *v
		c.Topics = copiedEach(c.Topics, func(t *PartitionMetadataTopic) { t.PartitionMetadata = nil })
		out.Value = &c
	case *ConsumerGroupTargetAssignmentMetadataValue:
		c := *v
		c.AssignmentTimestamp = keptIf(p.AssignmentTimestamp, c.AssignmentTimestamp)
		out.Value = &c
	case *ConsumerGroupCurrentMemberAssignmentValue:
		c := *v
		var err error
		if c.AssignedPartitions, err = shapeAssignmentEpochs(p, "AssignedPartitions", c.AssignedPartitions); err != nil {
			return Record{}, fmt.Errorf("shape %s record for Kafka %s: %w", t, p.Version, err)
		}
		if c.PartitionsPendingRevocation, err = shapeAssignmentEpochs(p, "PartitionsPendingRevocation", c.PartitionsPendingRevocation); err != nil {
			return Record{}, fmt.Errorf("shape %s record for Kafka %s: %w", t, p.Version, err)
		}
		out.Value = &c
	default:
		// Member metadata, target assignment members and regular
		// expressions are written the same way by every 4.x release.
		out.Value = r.Value
	}
	return out, nil
}

// keptIf is v where the version writes the field (written), else the
// zero Kafka leaves out (a tagged field that version does not know).
func keptIf[T comparable](written bool, v T) T {
	var zero T
	if !written {
		return zero
	}
	return v
}

// copiedEach returns a copy of s with f applied to each element, leaving
// the record being shaped as it was.
func copiedEach[T any](s []T, f func(*T)) []T {
	out := append(s[:0:0], s...)
	for i := range out {
		f(&out[i])
	}
	return out
}

// shapeAssignmentEpochs returns a copy of ts with AssignmentEpochs as p
// writes them.
func shapeAssignmentEpochs(p version.Profile, field string, ts []CurrentAssignmentTopic) ([]CurrentAssignmentTopic, error) {
	out := append(ts[:0:0], ts...)
	for i := range out {
		t := &out[i]
		if !p.AssignmentEpochs {
			t.AssignmentEpochs = nil
			continue
		}
		if len(t.AssignmentEpochs) != len(t.Partitions) {
			return nil, fmt.Errorf("%s[%d]: Kafka %s writes one assignment epoch per partition (KIP-1251), have %d epochs for %d partitions",
				field, i, p.Version, len(t.AssignmentEpochs), len(t.Partitions))
		}
	}
	return out, nil
}
