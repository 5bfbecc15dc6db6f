package consumergroup

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/coordinator/records"
)

// ClassicGroups is what a consumer-group heartbeat may ask of the shell
// that owns classic groups (GMM keeps both kinds in one map; here they are
// split). The method set matches coordinator.ClassicGroups, so the shell's
// value serves as is.
type ClassicGroups interface {
	// LookupClassic reports whether groupID is a classic group and whether
	// it is Empty.
	LookupClassic(groupID string) (exists, empty bool)
	// ConvertEmptyClassic deletes an Empty classic group so that a consumer
	// group can take its id, and returns the GroupMetadata tombstone Kafka
	// writes first (GMM.maybeDeleteEmptyClassicGroup).
	ConvertEmptyClassic(groupID string) []records.Record
}

// ClassicUpgrader is an optional extension of ClassicGroups: a shell that
// hands a classic group with members over for an online upgrade
// (GMM.convertToConsumerGroup). Without it such a group blocks the group id
// (GROUP_ID_NOT_FOUND), as if the policy forbade upgrades.
type ClassicUpgrader interface {
	// ClassicForUpgrade returns the classic group as the conversion reads
	// it, ok=false if there is none.
	ClassicForUpgrade(groupID string) (ClassicGroupSnapshot, bool)
	// CompleteClassicFutures answers the group's parked JoinGroup and
	// SyncGroup requests REBALANCE_IN_PROGRESS
	// (ClassicGroup.completeAllJoinFutures, completeAllSyncFutures). Kafka
	// does it as soon as the upgrade is validated, before the group's
	// members are parsed, so also when the upgrade then fails.
	CompleteClassicFutures(groupID string)
	// ConvertClassic deletes the classic group and returns its
	// GroupMetadata tombstone, which Kafka writes first. It is asked only
	// once the request is known to succeed.
	ConvertClassic(groupID string) []records.Record
}

// ClassicDowngrader is an optional extension of ClassicGroups: a shell that
// takes a consumer group back as a classic group when its last
// consumer-protocol member goes (GMM.convertToClassicGroup). Without it the
// group stays a consumer group of classic members, as if the policy
// forbade downgrades.
type ClassicDowngrader interface {
	// DowngradeToClassic creates the classic group of snap
	// (ClassicGroup.fromConsumerGroup: Stable, the group epoch as
	// generation, protocol type "consumer", the protocol its members vote
	// for, each member's target assignment as its assignment, encoded with
	// the version of its metadata for that protocol), writes its
	// GroupMetadata record, arms its members' heartbeats and, when
	// rebalance is set, prepares a rebalance. It returns the records
	// written, already applied. The consumer group is gone by then.
	DowngradeToClassic(snap ClassicGroupSnapshot, rebalance bool) []records.Record
}

// ClassicGroupSnapshot is a classic group as GMM.convertToConsumerGroup
// reads it, or as GMM.convertToClassicGroup builds it.
type ClassicGroupSnapshot struct {
	GroupID string
	// ProtocolType is "" for a group without one.
	ProtocolType string
	// Protocol is the selected protocol name ("" for none).
	Protocol   string
	Generation int32
	Members    []ClassicMemberSnapshot
}

// ClassicMemberSnapshot is one member of a classic group.
type ClassicMemberSnapshot struct {
	ID, InstanceID, ClientID, ClientHost string
	SessionTimeoutMs, RebalanceTimeoutMs int32
	// Protocols are the member's supported protocols, in its order.
	Protocols []records.ClassicProtocol
	// Assignment is the member's last assignment (empty if never synced);
	// for an upgrade.
	Assignment []byte
	// Target is the member's target assignment by topic name, in the order
	// Kafka iterates it; for a downgrade.
	Target []NamedPartitions
}

// NamedPartitions is a topic's partitions by name.
type NamedPartitions struct {
	Topic      string
	Partitions []int32
}

// gate is what classicGate decides for a group id the Manager does not hold.
type gate int8

const (
	// gateNone: no classic group holds the id.
	gateNone gate = iota
	// gateConvertEmpty: an Empty classic group is converted.
	gateConvertEmpty
	// gateUpgrade: a classic group with members is upgraded online.
	gateUpgrade
)

// classicGate is GMM.getOrMaybeCreateConsumerGroup for a group id this
// Manager does not hold: a classic group there blocks it, except on a join,
// where an Empty one is converted and one with members is upgraded online
// when the shell can hand it over (ClassicUpgrader); the caller validates
// the upgrade (GMM.validateOnlineUpgrade). The caller converts once the
// request is known to succeed (the shell deletes the classic group when
// asked, so it is asked last).
func classicGate(c ClassicGroups, groupID string, joining bool) (gate, error) {
	if c == nil {
		return gateNone, nil
	}
	exists, empty := c.LookupClassic(groupID)
	switch {
	case !exists:
		return gateNone, nil
	case !joining:
		return gateNone, errorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", groupID)
	case empty:
		return gateConvertEmpty, nil
	}
	if _, ok := c.(ClassicUpgrader); !ok {
		return gateNone, errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group: the coordinator holding it cannot hand it over.", groupID)
	}
	return gateUpgrade, nil
}

// GroupInfo is what the shared APIs (ListGroups, OffsetDelete, offset
// expiry, DeleteGroups) need to know about a consumer group.
type GroupInfo struct {
	// State is ConsumerGroupState.toString(): Empty, Assigning,
	// Reconciling or Stable.
	State string
	// Members is the number of members; Empty is Members == 0.
	Members int
	// SubscribedTopics is the union of the members' subscriptions
	// (ConsumerGroup.subscribedTopicNames), sorted.
	SubscribedTopics []string
	// Epoch and AssignmentEpoch are the group and target epochs.
	Epoch, AssignmentEpoch int32
}

// Info returns the facts of a consumer group, or ok=false.
func (m *Manager) Info(groupID string) (GroupInfo, bool) {
	g, ok := m.rp.groups[groupID]
	if !ok {
		return GroupInfo{}, false
	}
	return GroupInfo{
		State:            g.state(),
		Members:          len(g.members),
		SubscribedTopics: keys(g.subscribedTopicNames(nil, nil)),
		Epoch:            g.epoch,
		AssignmentEpoch:  g.assignmentEpoch,
	}, true
}

// GroupIDs lists the consumer groups, sorted.
func (m *Manager) GroupIDs() []string {
	ids := make([]string, 0, len(m.rp.groups))
	for id := range m.rp.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ValidateOffsetFetch is ConsumerGroup.validateOffsetFetch (OffsetFetch
// v9+): an admin fetch (no member id, epoch < 0) is accepted; otherwise the
// member must exist and its epoch must match exactly (no KIP-1251 leniency
// for fetches). memberID nil means null. ErrGroupNotFound means the group
// is not a consumer group here.
func (m *Manager) ValidateOffsetFetch(groupID string, memberID *string, memberEpoch int32) error {
	g, ok := m.rp.groups[groupID]
	if !ok {
		return ErrGroupNotFound
	}
	if memberID == nil && memberEpoch < 0 {
		return nil
	}
	id := deref(memberID)
	mb, ok := g.members[id]
	if !ok {
		return errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, groupID)
	}
	if memberEpoch != mb.epoch {
		if mb.useClassicProtocol() {
			// CG.validateMemberEpoch: a classic member fetches with its generation.
			return errorf(kerr.IllegalGeneration, "The received generation id %d does not match the expected member epoch %d.", memberEpoch, mb.epoch)
		}
		return errorf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", memberEpoch, mb.epoch)
	}
	return nil
}

// Delete deletes an Empty consumer group (DeleteGroups, or the shell's
// cleanup of an empty group whose offsets expired): the tombstones of
// ConsumerGroup.createGroupTombstoneRecords in Kafka's order, already
// replayed, or NON_EMPTY_GROUP (validateDeleteGroup). The shell writes the
// offset tombstones itself, before these. Timers of the group go too.
func (m *Manager) Delete(groupID string) ([]records.Record, error) {
	g, ok := m.rp.groups[groupID]
	if !ok {
		return nil, ErrGroupNotFound
	}
	if g.state() != StateEmpty {
		return nil, errorf(kerr.NonEmptyGroup, "The group %s is not empty.", groupID)
	}
	// With no members only the group-level tombstones remain; a target
	// assignment of a member already gone (none is left by Kafka's own
	// writes) is tombstoned too so that replay accepts the deletion.
	var recs []records.Record
	for _, id := range keys(g.target) {
		recs = append(recs, tombstone(records.ConsumerGroupTargetAssignmentMemberKey{GroupID: groupID, MemberID: id}))
	}
	recs = append(recs, tombstone(records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: groupID}))
	recs = append(recs, g.regexTombstones()...)
	recs = append(recs,
		tombstone(records.ConsumerGroupPartitionMetadataKey{GroupID: groupID}),
		tombstone(records.ConsumerGroupMetadataKey{GroupID: groupID}),
	)
	if err := m.applyAll(groupID, recs); err != nil {
		return nil, errorf(kerr.UnknownServerError, "deleting group %s: %v", groupID, err)
	}
	for k := range m.timers {
		if k.group == groupID {
			delete(m.timers, k)
		}
	}
	delete(m.regexTasks, groupID)
	return recs, nil
}
