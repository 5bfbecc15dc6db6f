package coordinator

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// ConsumerGroups is the seam between this shell and the KIP-848 consumer
// group state machine (package consumergroup). Kafka keeps both kinds of
// group in one GroupMetadataManager; here the shell owns classic groups and
// offsets, and hands everything about consumer groups to this dependency:
// ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69), the records of
// types 3–8 and 16, their timers, and the questions the shared APIs
// (OffsetCommit, OffsetFetch, OffsetDelete, ListGroups, DescribeGroups,
// DeleteGroups, JoinGroup) ask of a group.
//
// Rules the implementation keeps, so that the shell stays correct:
//  1. It is as pure as the shell: no goroutines, no clock, no IO; time comes
//     in as now.
//  2. Records it returns (Heartbeat, Tick, Delete, and Loaded of
//     ConsumerGroupsLoader) are already shaped with records.AsWrittenBy and
//     already applied to its own state: the shell appends them to the log
//     and never calls Replay for them; Replay is for loading a log. A
//     GroupMetadata tombstone it got from ClassicGroups.ConvertEmptyClassic
//     is returned among its records, first, and the shell has already
//     removed that classic group (so it is not written twice).
//  3. A group id is either a classic group (the shell's) or a consumer group
//     (its), never both. Before it creates a consumer group where a classic
//     group exists it asks the shell through the ClassicGroups it is given.
//  4. Errors are kerr values.
type ConsumerGroups interface {
	// Heartbeat serves ConsumerGroupHeartbeat (GMM.consumerGroupHeartbeat).
	// classic lets it convert an empty classic group or find that a
	// non-empty one blocks the group id; topics is the metadata image (nil
	// when the coordinator has none).
	Heartbeat(now time.Time, client Client, classic ClassicGroups, topics TopicMetadata, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, []records.Record)
	// Describe serves ConsumerGroupDescribe (GMM.consumerGroupDescribe).
	Describe(now time.Time, topics TopicMetadata, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse
	// Replay applies one record of type 3–8 or 16 while loading.
	Replay(r records.Record) error
	// Tick fires the consumer-group timers (session, rebalance, assignment)
	// due at now and returns the records they write.
	Tick(now time.Time) []records.Record

	// Lookup reports whether groupID is a consumer group and, if so, the
	// facts the shared APIs need.
	Lookup(groupID string) (ConsumerGroupInfo, bool)
	// GroupIDs lists the consumer groups (for ListGroups).
	GroupIDs() []string
	// ValidateOffsetCommit is ConsumerGroup.validateOffsetCommit and, with
	// profile.OffsetCommitAssignmentEpochs (4.3+, KIP-1251), the
	// per-partition createAssignmentEpochValidator: UNKNOWN_MEMBER_ID,
	// STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for classic members),
	// UNSUPPORTED_VERSION for a consumer-protocol member below OffsetCommit
	// v9. Any error fails the whole request. Errors wrap a *kerr.Error
	// (errors.As).
	ValidateOffsetCommit(c OffsetCommitCheck) error
	// ValidateOffsetFetch is ConsumerGroup.validateOffsetFetch.
	ValidateOffsetFetch(groupID string, memberID *string, memberEpoch int32) error
	// Delete returns the tombstones that delete an empty consumer group
	// (ConsumerGroup.createGroupTombstoneRecords, in Kafka's order) and
	// removes it, or NON_EMPTY_GROUP (validateDeleteGroup). The shell
	// writes the offset tombstones itself, before these.
	Delete(groupID string) ([]records.Record, error)
	// State is a canonical rendering of all consumer-group state that the
	// log determines; equal strings mean equal state.
	State() string
}

// ClassicMembers is an optional extension of ConsumerGroups: an engine that
// serves members speaking the classic protocol inside its consumer groups,
// Kafka's online migration path (GMM.classicGroupJoinToConsumerGroup and
// the Sync, Heartbeat and Leave paths beside it). The shell routes JoinGroup
// to a non-empty consumer group, and SyncGroup, Heartbeat and LeaveGroup to
// any consumer group, here; an engine without it leaves those requests
// answered as a broker that does not know the member
// (INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID). Records follow rule 2 of
// ConsumerGroups; SyncGroup and Heartbeat write none.
type ClassicMembers interface {
	// ClassicJoin serves a JoinGroup whose group id and session timeout the
	// shell has checked; RebalanceTimeoutMillis is already the session
	// timeout for v0.
	ClassicJoin(now time.Time, client Client, topics TopicMetadata, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, []records.Record)
	ClassicSync(now time.Time, topics TopicMetadata, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse
	ClassicHeartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse
	ClassicLeave(now time.Time, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, []records.Record)
}

// OffsetCommitCheck is what ConsumerGroups.ValidateOffsetCommit needs from
// an OffsetCommit.
type OffsetCommitCheck struct {
	GroupID    string
	MemberID   string
	InstanceID *string
	// MemberEpoch is GenerationIdOrMemberEpoch.
	MemberEpoch int32
	// APIVersion is the OffsetCommit request version.
	APIVersion int16
	// Partitions are the partitions to be written (those that passed the
	// metadata and size checks); only 4.3+ looks at them.
	Partitions []CommitPartition
}

// CommitPartition is one committed partition.
type CommitPartition struct {
	Topic string
	// TopicID is the topic's id as resolved from the metadata image; zero
	// when unknown.
	TopicID   [16]byte
	Partition int32
}

// TopicMetadata is the part of the broker's metadata image the shared
// APIs read: topic name ↔ id ↔ partition count (KafkaApis checks
// OffsetCommit and OffsetFetch against it). The method set is the one
// package consumergroup uses, so one value serves both.
type TopicMetadata interface {
	TopicByName(name string) (id [16]byte, partitions int, ok bool)
	TopicByID(id [16]byte) (name string, partitions int, ok bool)
}

// ConsumerGroupInfo is what the shared APIs need to know about a consumer
// group.
type ConsumerGroupInfo struct {
	// State is the group state as ListGroups names it
	// (ConsumerGroup.ConsumerGroupState.toString: Empty, Assigning,
	// Reconciling, Stable); state filters match it case-insensitively.
	State string
	// Empty: the group has no members (Group.isEmpty).
	Empty bool
	// SubscribedTopics is the union of the members' subscriptions, for
	// OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC) and offset expiry.
	SubscribedTopics map[string]bool
	// Described is the group in DescribeGroups form
	// (ConsumerGroup.asDescribedGroup); nil where Kafka answers
	// GROUP_ID_NOT_FOUND ("not a classic group").
	Described *kmsg.DescribeGroupsResponseGroup
}

// ClassicGroups is what the consumer-group engine may ask of the shell.
type ClassicGroups interface {
	// LookupClassic reports whether groupID is a classic group and whether it
	// is Empty.
	LookupClassic(groupID string) (exists, empty bool)
	// ConvertEmptyClassic deletes an Empty classic group so a consumer group
	// can take its id, and returns the GroupMetadata tombstone Kafka writes
	// first (GMM.maybeDeleteEmptyClassicGroup). It returns nil if the group
	// is not an Empty classic group.
	ConvertEmptyClassic(groupID string) []records.Record
}

// NoConsumerGroups answers as a broker that holds no consumer group (the
// consumer protocol disabled). New uses consumergroup.Manager unless
// Config.ConsumerGroups names another engine; tests of the classic side
// that want no consumer groups at all set this one.
type NoConsumerGroups struct{}

// Heartbeat answers GROUP_ID_NOT_FOUND for a member that is not joining
// (epoch ≠ 0) and UNSUPPORTED_VERSION for a join, as a broker with the
// consumer protocol disabled does (KafkaApis.handleConsumerGroupHeartbeat).
func (NoConsumerGroups) Heartbeat(_ time.Time, _ Client, _ ClassicGroups, _ TopicMetadata, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, []records.Record) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if req.MemberEpoch == 0 {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	} else {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
	}
	return resp, nil
}

// Describe answers GROUP_ID_NOT_FOUND for every group.
func (NoConsumerGroups) Describe(_ time.Time, _ TopicMetadata, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range req.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = g
		d.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + g + " not found."
		d.ErrorMessage = &msg
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// Replay rejects consumer-group records: with no engine they cannot be
// applied, and skipping them would make the state wrong without a word.
func (NoConsumerGroups) Replay(r records.Record) error {
	return errNoConsumerGroups(r)
}

// Tick does nothing.
func (NoConsumerGroups) Tick(time.Time) []records.Record { return nil }

// Lookup finds nothing.
func (NoConsumerGroups) Lookup(string) (ConsumerGroupInfo, bool) { return ConsumerGroupInfo{}, false }

// GroupIDs lists nothing.
func (NoConsumerGroups) GroupIDs() []string { return nil }

// ValidateOffsetCommit is never reached (Lookup finds nothing).
func (NoConsumerGroups) ValidateOffsetCommit(OffsetCommitCheck) error { return kerr.GroupIDNotFound }

// ValidateOffsetFetch is never reached.
func (NoConsumerGroups) ValidateOffsetFetch(string, *string, int32) error {
	return kerr.GroupIDNotFound
}

// Delete is never reached.
func (NoConsumerGroups) Delete(string) ([]records.Record, error) { return nil, kerr.GroupIDNotFound }

// State is empty.
func (NoConsumerGroups) State() string { return "" }
