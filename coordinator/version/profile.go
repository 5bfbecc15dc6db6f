package version

// Profile is what one Kafka release does differently in the group
// coordinator: the __consumer_offsets records it writes and the protocol
// behaviours the reference coordinator and the conformance vectors must
// match. Fields are plain values so a profile can be printed, compared and
// saved in a run's plan.
//
// How the facts were established: the record facts (value versions, which
// tagged fields are set, whether partition metadata is written) from the
// source of each branch and from javap of the released
// kafka-group-coordinator 4.0.0, 4.1.0, 4.2.0, 4.3.0 and 4.4.0 jars; the
// patch-level facts up to 4.2.1 and 4.3.1 from `git merge-base
// --is-ancestor <fix> <release commit>` on the 4.0–4.3 branches ("Bump
// version to X" commits; the commitId in kafka/kafka-version.properties of
// the release's kafka-clients jar names it: 92f61c4486 for 4.2.1,
// 26b251a451 for 4.3.1). The release commits of 4.2.2 (c5e9428595, jar
// built 2026-09-22) and 4.3.2 (0a6c96d3b6, 2026-10-11) are past the stored
// copy of the branches (2026-08-21), so their facts come from javap of the
// 4.2.1/4.2.2 and 4.3.1/4.3.2 kafka-group-coordinator,
// kafka-share-coordinator, kafka-coordinator-common, kafka-server and
// kafka_2.13 jars, method by method, each change matched to its commit
// on the branch where the branch has it.
//
// Paths below are relative to the Kafka repository root; "GCRH" is
// group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupCoordinatorRecordHelpers.java
// and the record schemas are in group-coordinator/src/main/resources/common/message/.
type Profile struct {
	// Version is the release this profile describes.
	Version Version

	// --- __consumer_offsets records ---

	// OffsetCommitValueVersion is the OffsetCommitValue version written for a
	// commit without a retention time: 3 in 4.0, 4 (flexible) from 4.1
	// (GCRH.offsetCommitValueVersion; KAFKA-19141 on the 4.1 branch).
	OffsetCommitValueVersion int16
	// OffsetCommitValueVersionWithExpiry is the version written when the
	// OffsetCommit request carried a retention time (OffsetCommit v2–v4): 1,
	// the only version with expireTimestamp, in every 4.x release.
	OffsetCommitValueVersionWithExpiry int16
	// OffsetCommitTopicID: OffsetCommitValue v4 carries the tagged topicId
	// (tag 0). The field exists in OffsetCommitValue.json from 4.1 only.
	OffsetCommitTopicID bool
	// GroupMetadataValueVersion is the GroupMetadataValue version written for
	// classic groups: 3 in every 4.x release (GCRH.GROUP_METADATA_VALUE_VERSION).
	GroupMetadataValueVersion int16
	// ConsumerGroupValueVersion is the value version of record types 3–8 and
	// 16 (KIP-848 records): 0 everywhere; they grow through tagged fields only.
	ConsumerGroupValueVersion int16
	// WritesPartitionMetadata: ConsumerGroupPartitionMetadata (type 4) values
	// are written (4.0, GCRH.newConsumerGroupSubscriptionMetadataRecord). From
	// 4.1 (KIP-1101) only its tombstone is written, and the subscribed topics
	// are tracked by ConsumerGroupMetadataValue.MetadataHash instead.
	WritesPartitionMetadata bool
	// MetadataHash: ConsumerGroupMetadataValue carries the tagged MetadataHash
	// (tag 0, KIP-1101), 4.1+.
	MetadataHash bool
	// AssignmentTimestamp: ConsumerGroupTargetAssignmentMetadataValue carries
	// the tagged AssignmentTimestamp (tag 0, KIP-1263), 4.3+.
	AssignmentTimestamp bool
	// AssignmentEpochs: every TopicPartitions entry of
	// ConsumerGroupCurrentMemberAssignmentValue carries the tagged
	// AssignmentEpochs (tag 0, KIP-1251), 4.3+; GCRH.toTopicPartitions always
	// sets it, also to an empty list.
	AssignmentEpochs bool

	// --- consumer protocol behaviour ---

	// InitialGroupEpoch is the epoch of a newly created consumer group and of
	// its initial target assignment: 0 before 4.3, 1 from 4.3 (KAFKA-20268,
	// ModernGroup constructor sets groupEpoch 1 and
	// TargetAssignmentMetadata.INITIAL). The first member's epoch is
	// FirstMemberEpoch. ShareGroup is a ModernGroup too: a share group's
	// first member also gets epoch 2 from 4.3.
	InitialGroupEpoch int32
	// FirstMemberEpoch is the member epoch the first member of a new group
	// gets: 1 before 4.3, 2 from 4.3.
	FirstMemberEpoch int32
	// OffsetCommitAssignmentEpochs (KIP-1251, 4.3+): an OffsetCommit whose
	// member epoch is older than the member's current epoch is accepted per
	// partition when the partition is still assigned (or pending revocation)
	// to the member and the epoch is at least the partition's assignment
	// epoch (ConsumerGroup.createAssignmentEpochValidator). Before 4.3 any
	// mismatch is STALE_MEMBER_EPOCH (ILLEGAL_GENERATION for classic members).
	OffsetCommitAssignmentEpochs bool
	// RejoinWithEpochZero (KAFKA-19233, 4.2.0+): a heartbeat with member epoch
	// 0 from a member id the coordinator still holds is a rejoin. Before, a
	// fenced member that kept its member id got FENCED_MEMBER_EPOCH until the
	// coordinator had removed it.
	RejoinWithEpochZero bool
	// AssignmentInterval (KIP-1263, 4.3+): group.consumer.assignment.interval.ms
	// (and its min/max bounds) exist, and the target assignment is recomputed
	// at most once per interval. Older brokers reject the config.
	AssignmentInterval bool
	// DefaultAssignmentIntervalMs is the default of
	// group.consumer.assignment.interval.ms (1000), or 0 where the config
	// does not exist.
	DefaultAssignmentIntervalMs int32
	// SubscriptionBoundsAssignment (KAFKA-19431, 4.2.0+): a member's current
	// assignment is trimmed to its subscription even while it still has
	// partitions to revoke.
	SubscriptionBoundsAssignment bool
	// OwnPendingRevocationNotUnreleased (KAFKA-19449; 4.0.2, 4.1.2, 4.2.0+):
	// partitions the member itself still has to revoke are not treated as
	// unreleased, so they do not hold it in UNRELEASED_PARTITIONS.
	OwnPendingRevocationNotUnreleased bool
	// RevocationAckKeepsEpoch (KAFKA-19974, 4.2.0+; not on the 4.0 and 4.1
	// branches): a member leaving UNREVOKED_PARTITIONS is reconciled at its
	// current epoch (CurrentAssignmentBuilder.build calls
	// computeNextAssignment(member.memberEpoch(), …)). Before, it stepped to
	// memberEpoch + 1 first, an epoch the group may never have had. Commit
	// 4fb27146af on the 4.2 branch (before its first "Bump version to
	// 4.2.1"), 8ff7addcec on trunk (4.3+).
	RevocationAckKeepsEpoch bool
	// UnsubscribeUpdatesPreviousEpoch (4.3.0+, "MINOR: Update previous member
	// epoch when members unsubscribe from topic", #21325, commit b8692f3158,
	// not on the 4.2 branch): CurrentAssignmentBuilder.updateCurrentAssignment
	// (the KAFKA-19431 shortcut for a member whose subscription shrank) calls
	// Builder.updateMemberEpoch(memberEpoch), so the previous member epoch
	// becomes the current one. 4.2 leaves both epochs as they were.
	UnsubscribeUpdatesPreviousEpoch bool
	// LoadToleratesCompaction (KAFKA-19862; 4.0.2, 4.1.2, 4.2.0+): loading a
	// partition compacted concurrently logs missing unassignment records
	// instead of failing the load.
	LoadToleratesCompaction bool
	// DescribeShowsPendingRevocation (KAFKA-20431, 4.3.0+):
	// ConsumerGroupDescribe includes partitions pending revocation in a
	// member's assignment.
	DescribeShowsPendingRevocation bool
	// AssignorChangeRecomputes (KAFKA-20434; 4.3.2, 4.4.0): a heartbeat that
	// changes the group's effective preferred server assignor (for example a
	// static member rejoining with another one) bumps the group epoch, so
	// the target assignment is recomputed
	// (GMM.hasPreferredServerAssignorChanged; in the 4.4.0 and 4.3.2 jars,
	// byte-for-byte the same method and the same call in
	// consumerGroupHeartbeat; not in the 4.3.0, 4.3.1 or 4.2.2 jars).
	AssignorChangeRecomputes bool
	// StaticRejoinFullGroup (KAFKA-20601; 4.3.2, 4.4.0): a static member may
	// rejoin a group at group.consumer.max.size
	// (GMM.throwIfConsumerGroupIsFull takes the instance id in the 4.4.0 and
	// 4.3.2 jars, from consumerGroupHeartbeat and
	// classicGroupJoinToConsumerGroup). On the 4.3 branch it is fec5c19c37,
	// after "Bump version to 4.3.1"; not on the 4.2 branch, nor in the 4.2.2
	// jar.
	StaticRejoinFullGroup bool
	// StaticRejoinOwnInstance (apache/kafka PR #23542, "Fix static members
	// being fenced by their own instance id", open; no served release has
	// it): a static member's ConsumerGroupHeartbeat at epoch 0 with the
	// member id that owns its instance id is the member itself coming back,
	// handled in place (its state back like a dynamic member's; after a
	// leave with epoch -2 its epoch reset and reconciled), and a join that
	// changes an existing member's instance id is INVALID_REQUEST. Without
	// it (the 4.0–4.4 branches and trunk),
	// GMM.getOrMaybeSubscribeStaticConsumerGroupMember takes every join at
	// epoch 0 of a known instance id for a replacement and calls
	// throwIfInstanceIdIsUnreleased without comparing member ids, so the
	// retry of a join whose answer was lost, or the rejoin after
	// FENCED_MEMBER_EPOCH, is answered UNRELEASED_INSTANCE_ID naming the
	// member itself (finding kafka-static-rejoin-own-instance).
	StaticRejoinOwnInstance bool
	// ClassicRejoinOnNewAssignment (KAFKA-20272, 4.3.0+; 4.3 branch source
	// and the 4.4.0 jar): a classic member of a consumer group is told to
	// rejoin (REBALANCE_IN_PROGRESS to its Heartbeat and SyncGroup) when its
	// epoch is behind the group's assignment epoch, that is once a new target
	// exists. Before (the 4.1.2 jar, 4.0–4.2 sources) it is compared with the
	// group epoch, so it rejoins before the new target is computed
	// (GMM.classicGroupHeartbeatToConsumerGroup, throwIfRebalanceInProgress).
	ClassicRejoinOnNewAssignment bool
	// ClassicJoinRefusedWhenMigrationDisabled (KAFKA-20640; 4.2.2, 4.3.1,
	// 4.3.2, 4.4.0): with group.consumer.migration.policy=disabled a
	// JoinGroup to a non-empty consumer group gets INCONSISTENT_GROUP_PROTOCOL
	// (GMM.throwIfClassicMemberCannotJoinConsumerGroup, called first in
	// classicGroupJoinToConsumerGroup). Before, the classic member joined
	// whatever the policy. On the 4.3 branch it is 9c9ecfa36b, an ancestor
	// of 4.3.1's release commit 26b251a451 (and the 4.3.1 jar has the
	// method); on the 4.2 branch ece2b96447, after 4.2.1's 92f61c4486 (the
	// 4.2.2 jar has it, the 4.2.1 jar not); the 4.0 and 4.1 branches have
	// it after their last served releases (not in the 4.1.2 jar).
	ClassicJoinRefusedWhenMigrationDisabled bool
	// MalformedJoinSubscriptionInconsistent (KAFKA-20662; 4.2.2, 4.3.2,
	// 4.4.0): a JoinGroup to a non-empty consumer group whose embedded
	// ConsumerProtocolSubscription cannot be read (for example metadata
	// shorter than its version) gets INCONSISTENT_GROUP_PROTOCOL.
	// Before, GMM.deserializeSubscription threw an IllegalStateException,
	// which the coordinator answers UNKNOWN_SERVER_ERROR; either way
	// nothing is written. On the 4.2 branch it is 61a7601d16 (#22674), on
	// the 4.3 branch c7af7e5aca and on the 4.4 branch ec004fd80f (#22580),
	// none an ancestor of 4.2.1's 92f61c4486 or 4.3.1's 26b251a451; the
	// method throws Errors.INCONSISTENT_GROUP_PROTOCOL.exception in the
	// 4.2.2, 4.3.2 and 4.4.0 jars and new IllegalStateException in the
	// 4.1.2, 4.2.1 and 4.3.1 ones; not on the 4.0 or 4.1 branches.
	MalformedJoinSubscriptionInconsistent bool
	// DowngradeRebalancesOnStaleAssignment (KAFKA-20273, 4.3.0+; 4.3 and
	// 4.4 branch sources): when a classic static member replacing the last
	// consumer-protocol member downgrades the group, the classic group
	// rebalances if the group epoch is ahead of the assignment epoch (the
	// member's assignment is stale). Before, it rebalanced only if the
	// member's subscribed topics changed (GMM.classicGroupJoinToConsumerGroup).
	DowngradeRebalancesOnStaleAssignment bool
	// LastLeaveResetsAssignmentEpoch (KAFKA-20442; 4.3.2, 4.4.0): when the
	// last members of a consumer group are fenced, a
	// ConsumerGroupTargetAssignmentMetadata record with the new group epoch
	// and timestamp 0 follows the epoch bump, so the empty group is not left
	// Assigning (GMM.consumerGroupFenceMembers). The same issue does it for
	// a share group's last member (GMM.shareGroupFenceMember,
	// apache/kafka#22046: a 4.4.0 broker describes the emptied share group
	// at the new epoch, 4.2.1 at the last assignment's). Both are in the
	// 4.4.0 jar and, backported after the stored copy of the 4.3 branch, in
	// the 4.3.2 jar (the fence methods write
	// newConsumerGroupTargetAssignmentMetadataRecord and
	// newShareGroupTargetAssignmentMetadataRecord with timestamp 0 when the
	// group empties); not in the 4.3.1 or 4.2.2 jars.
	LastLeaveResetsAssignmentEpoch bool
	// OffsetCommitResolvesTopicIDs (apache/kafka PR #21809, "Revise Topic
	// Resolving Logic in OffsetCommit Request", 4.3.0+): an OffsetCommit
	// below v10 (topics by name) has the topic id of the metadata image
	// stored with its offsets (KafkaApis resolves it). Before, only a v10
	// request's own ids are stored.
	OffsetCommitResolvesTopicIDs bool

	// --- regular-expression subscriptions (KIP-848 SubscribedTopicRegex) ---

	// RE2J is the version of com.google.re2j the broker resolves
	// SubscribedTopicRegex with (gradle/dependencies.gradle): "1.7" on the
	// 4.0 branch, "1.8" from 4.1.0 (commit 948a91dfdf). 1.8 added the
	// (?<name>expr) form of named groups (re2j commit 9b3f052); 1.7 refuses
	// it as "invalid or unsupported Perl syntax".
	RE2J string
	// RegexPeriodicRefresh (KAFKA-18961, 4.1.0+): a group's regexes are
	// resolved again once group.consumer.regex.refresh.interval.ms (10
	// minutes) passed since the last resolution, even if no topic was
	// created (GMM.maybeUpdateRegularExpressions, condition 3.3). 4.0 has
	// neither the config nor the refresh.
	RegexPeriodicRefresh bool
	// RegexDropBumpsEpoch (KAFKA-19891 on trunk, 4.2.0+; KAFKA-19899 on the
	// 4.1 branch, 4.1.2; not on the 4.0 branch): a consumer-protocol member
	// that replaces its regex by an empty one bumps the group epoch
	// (REGEX_UPDATED_AND_RESOLVED), so its regex's topics leave its target
	// at once. Before, the epoch stayed and the member kept them until
	// something else bumped it.
	RegexDropBumpsEpoch bool

	// --- request versions (APIVersions) ---

	// JoinGroupV0 (KAFKA-19444, 4.0.1+): JoinGroup v0 and v1 are served
	// again; 4.0.0 had removed them (KIP-896).
	JoinGroupV0 bool
	// OffsetsTopicIDs (KAFKA-19186, 4.2+): OffsetCommit and OffsetFetch v10,
	// which name topics by id, are served (unstable, so refused, in 4.1).
	OffsetsTopicIDs bool

	// --- server-side assignors ---

	// UniformHomogeneousStable (KAFKA-18688, apache/kafka#19677, 4.0.1+):
	// the homogeneous uniform builder lets any member keep the "extra"
	// partition instead of reserving it for the first members in iteration
	// order. The one change of the server-side assignors in 4.x.
	UniformHomogeneousStable bool

	// StreamsInDefaultProtocols: group.coordinator.rebalance.protocols
	// defaults to classic,consumer,streams (4.1+) instead of classic,consumer.
	StreamsInDefaultProtocols bool

	// --- share groups (KIP-932, Kafka's queues) ---
	//
	// Read from the 4.0–4.4 branches: ShareVersion.java (server-common),
	// ShareGroupConfig.java and GroupCoordinatorConfig.java
	// (group-coordinator), KafkaApis.isShareGroupProtocolEnabled, the
	// request schemas ShareGroupHeartbeat/ShareGroupDescribe/ShareFetch/
	// ShareAcknowledge/DescribeShareGroupOffsetsRequest.json, and the
	// upgrade notes (docs/getting-started/upgrade.md). ShareSupport says
	// what a cluster needs for share groups (CheckShareGroups).

	// ShareGroups is the release state of share groups: ShareEarlyAccess
	// (4.0), SharePreview (4.1), ShareProduction (4.2+).
	ShareGroups ShareStage
	// ShareVersionLevel is the share.version a cluster formatted by the
	// release starts at: the highest ShareVersion whose bootstrap
	// metadata.version is at most MetadataVersionLevel. SV_1 bootstraps
	// at 4.2-IV0 (28) and SV_2 (KIP-1191's dead-letter queue, 4.4) at
	// 4.4-IV0 (31), so 0 in 4.0 (no share.version feature) and 4.1 (27),
	// 1 in 4.2 and 4.3, 2 in 4.4.
	ShareVersionLevel int16
	// ShareEnableConfig: the internal broker config group.share.enable
	// exists (4.0–4.2; removed in 4.3, where share.version alone decides).
	ShareEnableConfig bool
	// ShareFetchV2 (KIP-1206 and KIP-1222, 4.2.0+, "KAFKA-19814: Protocol
	// and API changes for KIP-1222" on the 4.2 branch before its first
	// "Bump version to 4.2.0"): ShareFetch and ShareAcknowledge v2, which
	// carry IsRenewAck and the RENEW acknowledgement (type 4), ShareFetch's
	// ShareAcquireMode, and ShareAcknowledge's AcquisitionLockTimeoutMs.
	ShareFetchV2 bool
	// ShareAssignmentInterval (KIP-1263, 4.3+): group.share.assignment.interval.ms
	// and its min/max bounds exist (GroupCoordinatorConfig).
	ShareAssignmentInterval bool
	// ShareDeliveryCountBounds (KIP-1240, 4.3+): the group config
	// share.delivery.count.limit and the broker bounds
	// group.share.min.delivery.count.limit (2) and
	// group.share.max.delivery.count.limit (10) exist; before, the broker's
	// group.share.delivery.count.limit (2–10, default 5) is the only one.
	ShareDeliveryCountBounds bool
	// ShareRenewGroupConfig (4.3+): RENEW is answered only where the group
	// config share.renew.acknowledge.enable (default true) allows it
	// (SharePartition.acknowledge* asks ShareGroupConfigProvider.
	// isRenewAcknowledgeEnabled, INVALID_RECORD_STATE otherwise); 4.2
	// renews whenever the request carries RENEW.
	ShareRenewGroupConfig bool
	// ShareStartOffsetNoRegress (4.4+): the share coordinator never lets a
	// share-partition's start offset go back (ShareCoordinatorShard.
	// generateShareStateRecord takes the larger of the write's and the
	// current start offset, and clips the batches at it); 4.2 and 4.3
	// write the leader's start offset as it comes.
	ShareStartOffsetNoRegress bool

	// --- finalized features (KIP-584) ---

	// MetadataVersionLevel is the feature level of the release's latest
	// production metadata.version (MetadataVersion.LATEST_PRODUCTION): what
	// a cluster formatted by the release starts at, and what finalizing an
	// upgrade to the release sets. 25 (4.0-IV3) in 4.0, 27 (4.1-IV1) in
	// 4.1, 29 (4.2-IV1) in 4.2, 30 (4.3-IV0) in 4.3, 33 (4.4-IV2) in 4.4.0,
	// read from the released kafka-server-common jar of every served
	// version (see features.go). Patch releases never moved it.
	MetadataVersionLevel int16
	// GroupVersionLevel is the release's latest production group.version
	// (GroupVersion.LATEST_PRODUCTION): 1 (KIP-848's consumer protocol) in
	// every 4.x release; a cluster formatted at 4.0+ starts with it.
	GroupVersionLevel int16
}

// Profile returns the behaviour profile of v. It is meant for served
// versions (Parse first); for any other value the same thresholds apply by
// number.
func (v Version) Profile() Profile {
	p := Profile{
		Version:                            v,
		OffsetCommitValueVersion:           3,
		OffsetCommitValueVersionWithExpiry: 1,
		GroupMetadataValueVersion:          3,
		ConsumerGroupValueVersion:          0,
		WritesPartitionMetadata:            true,
		InitialGroupEpoch:                  0,
		FirstMemberEpoch:                   1,
		MetadataVersionLevel:               25,
		GroupVersionLevel:                  1,
		RE2J:                               "1.7",
	}
	// Invariant: each rule below switches a behaviour on at the first release
	// that has it and never off again, except WritesPartitionMetadata, which
	// 4.1 retires, and ShareEnableConfig, which 4.3 retires. Patch-level
	// rules name every release line they reached, established with `git
	// merge-base --is-ancestor <fix> <release commit>` or, for 4.2.2 and
	// 4.3.2, from their jars (see Profile).
	if v >= V4_1_0 {
		p.OffsetCommitValueVersion = 4
		p.OffsetCommitTopicID = true
		p.WritesPartitionMetadata = false
		p.MetadataHash = true
		p.StreamsInDefaultProtocols = true
		p.MetadataVersionLevel = 27
		p.RE2J = "1.8"
		p.RegexPeriodicRefresh = true
	}
	if v >= V4_0_1 {
		p.JoinGroupV0 = true
		p.UniformHomogeneousStable = true
	}
	if (v >= V4_0_2 && v < V4_1_0) || v >= V4_1_2 {
		p.OwnPendingRevocationNotUnreleased = true
		p.LoadToleratesCompaction = true
	}
	if v >= V4_1_2 {
		p.RegexDropBumpsEpoch = true
	}
	// KAFKA-20640 reached 4.2.2 and 4.3.1, not 4.3.0.
	if (v >= V4_2_2 && v < V4_3_0) || v >= V4_3_1 {
		p.ClassicJoinRefusedWhenMigrationDisabled = true
	}
	// KAFKA-20662 reached 4.2.2 and 4.3.2, not 4.3.0 or 4.3.1.
	if (v >= V4_2_2 && v < V4_3_0) || v >= V4_3_2 {
		p.MalformedJoinSubscriptionInconsistent = true
	}
	// KAFKA-20434, KAFKA-20601 and KAFKA-20442 reached 4.3.2 (not 4.2.2).
	if v >= V4_3_2 {
		p.AssignorChangeRecomputes = true
		p.StaticRejoinFullGroup = true
		p.LastLeaveResetsAssignmentEpoch = true
	}
	switch {
	case v >= V4_2_0:
		p.ShareGroups = ShareProduction
	case v >= V4_1_0:
		p.ShareGroups = SharePreview
	default:
		p.ShareGroups = ShareEarlyAccess
	}
	p.ShareEnableConfig = v < V4_3_0
	if v >= V4_2_0 {
		p.ShareVersionLevel = 1
		p.ShareFetchV2 = true
		p.RejoinWithEpochZero = true
		p.SubscriptionBoundsAssignment = true
		p.RevocationAckKeepsEpoch = true
		p.OffsetsTopicIDs = true
		p.MetadataVersionLevel = 29
	}
	if v >= V4_3_0 {
		p.AssignmentTimestamp = true
		p.AssignmentEpochs = true
		p.InitialGroupEpoch = 1
		p.FirstMemberEpoch = 2
		p.OffsetCommitAssignmentEpochs = true
		p.AssignmentInterval = true
		p.DefaultAssignmentIntervalMs = 1000
		p.DescribeShowsPendingRevocation = true
		p.UnsubscribeUpdatesPreviousEpoch = true
		p.ClassicRejoinOnNewAssignment = true
		p.DowngradeRebalancesOnStaleAssignment = true
		p.OffsetCommitResolvesTopicIDs = true
		p.ShareAssignmentInterval = true
		p.ShareDeliveryCountBounds = true
		p.ShareRenewGroupConfig = true
		p.MetadataVersionLevel = 30
	}
	if v >= V4_4_0 {
		p.ShareVersionLevel = 2
		p.ShareStartOffsetNoRegress = true
		p.MetadataVersionLevel = 33
	}
	return p
}
