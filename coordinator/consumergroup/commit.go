package consumergroup

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetCommitCheck is what ValidateOffsetCommit needs from an OffsetCommit
// or TxnOffsetCommit request.
type OffsetCommitCheck struct {
	GroupID  string
	MemberID string
	// InstanceID is the request's GroupInstanceId; "" means null.
	InstanceID string
	// MemberEpoch is GenerationIdOrMemberEpoch.
	MemberEpoch int32
	// Transactional: the request is a TxnOffsetCommit.
	Transactional bool
	// APIVersion is the OffsetCommit version: a consumer-protocol member
	// must use v9+. Ignored for transactional commits.
	APIVersion int16
	// Partitions are the partitions committed; only 4.3+ (KIP-1251) looks
	// at them, for commits with an older member epoch.
	Partitions []CommitPartition
}

// CommitPartition is one committed partition.
type CommitPartition struct {
	Topic string
	// TopicID is the topic's id as resolved from the metadata image; the
	// zero id means the topic is unknown.
	TopicID   TopicID
	Partition int32
}

// ValidateOffsetCommit applies the fencing rules of a consumer group to an
// offset commit (CG.validateOffsetCommit and, 4.3+,
// CG.createAssignmentEpochValidator; OffsetMetadataManager turns
// STALE_MEMBER_EPOCH into ILLEGAL_GENERATION for TxnOffsetCommit). Any error
// fails the whole request, as in Kafka. ErrGroupNotFound means the group is
// not a consumer group here: the shell decides (simple group, or
// GROUP_ID_NOT_FOUND / ILLEGAL_GENERATION by version).
//
// Offset metadata size limits and topic authorization are the shell's.
func (m *Manager) ValidateOffsetCommit(c OffsetCommitCheck) error {
	err := m.validateOffsetCommit(c)
	if e, ok := err.(*Error); ok && c.Transactional && e.Code == kerr.StaleMemberEpoch {
		return errorf(kerr.IllegalGeneration, "%s", e.Message)
	}
	return err
}

func (m *Manager) validateOffsetCommit(c OffsetCommitCheck) error {
	g, ok := m.rp.groups[c.GroupID]
	if !ok {
		return ErrGroupNotFound
	}
	// The admin client, or a consumer without group management, may commit
	// to an empty group.
	if c.MemberEpoch < 0 && len(g.members) == 0 {
		return nil
	}
	// TxnOffsetCommit does not require member id, generation and instance id.
	if c.Transactional && c.MemberEpoch == -1 && c.MemberID == "" && c.InstanceID == "" {
		return nil
	}
	mb, ok := g.members[c.MemberID]
	if !ok {
		return errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", c.MemberID, g.id)
	}
	// A classic member of the group commits with its generation (its
	// member epoch) through any OffsetCommit version, and is told
	// ILLEGAL_GENERATION where a consumer-protocol member is told
	// STALE_MEMBER_EPOCH (CG.validateOffsetCommit, validateMemberEpoch).
	stale := kerr.StaleMemberEpoch
	if mb.useClassicProtocol() {
		stale = kerr.IllegalGeneration
	}
	if !c.Transactional && !mb.useClassicProtocol() && c.APIVersion < 9 {
		return errorf(kerr.UnsupportedVersion, "OffsetCommit version 9 or above must be used by members using the consumer group protocol")
	}
	if c.MemberEpoch == mb.epoch {
		return nil
	}
	if !m.profile.OffsetCommitAssignmentEpochs {
		if mb.useClassicProtocol() {
			return errorf(stale, "The received generation id %d does not match the expected member epoch %d.", c.MemberEpoch, mb.epoch)
		}
		return errorf(stale, "The received member epoch %d does not match the expected member epoch %d.", c.MemberEpoch, mb.epoch)
	}
	if c.MemberEpoch > mb.epoch {
		if mb.useClassicProtocol() {
			return errorf(stale, "Received generation id %d is newer than current member epoch %d.", c.MemberEpoch, mb.epoch)
		}
		return errorf(stale, "Received member epoch %d is newer than current member epoch %d.", c.MemberEpoch, mb.epoch)
	}
	// KIP-1251 (4.3+): an older epoch may still commit the partitions the
	// member holds (assigned or pending revocation) since that epoch.
	what := "member epoch"
	if mb.useClassicProtocol() {
		what = "generation id"
	}
	for _, p := range c.Partitions {
		e, ok := mb.assigned[p.TopicID][p.Partition]
		if !ok {
			e, ok = mb.pending[p.TopicID][p.Partition]
		}
		if !ok {
			return errorf(stale, "Partition %s-%d is not assigned or pending revocation for member.", p.Topic, p.Partition)
		}
		if c.MemberEpoch < e {
			return errorf(stale, "Received %s %d is older than assignment epoch %d for partition %s-%d.", what, c.MemberEpoch, e, p.Topic, p.Partition)
		}
	}
	return nil
}
