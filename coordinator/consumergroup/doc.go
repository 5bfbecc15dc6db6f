// Package consumergroup is the KIP-848 consumer-group state machine of the
// reference group coordinator: what Kafka 4.x's GroupMetadataManager does
// for ConsumerGroupHeartbeat (API 68) and ConsumerGroupDescribe (API 69),
// the replay of the consumer-group records (types 3–8 and 16) and the
// OffsetCommit fencing of consumer groups.
//
// Paths below are relative to
// group-coordinator/src/main/java/org/apache/kafka/coordinator/group/ of the
// Kafka repository ("GMM" = GroupMetadataManager.java, "CAB" =
// modern/consumer/CurrentAssignmentBuilder.java, "TAB" =
// modern/TargetAssignmentBuilder.java, "CG" = modern/consumer/ConsumerGroup.java).
//
// # Contract
//
// Like a Kafka coordinator shard (CoordinatorShard: "basically a replicated
// state machine"), a Manager is changed only by Replay. Heartbeat and Tick
// compute their records from the state before the request, exactly as GMM
// does (the runtime replays a write's records only after the handler has
// returned), then replay them into the Manager and return them. So:
//
//  1. Replaying every record a Manager returned, in order, into a fresh
//     Manager of the same profile gives an equal State. The conformance
//     vectors (coordinator/testdata/consumer, run through the coordinator)
//     check this after every step, and CheckInvariants.
//  2. Timers (session and rebalance timeouts) are not state: they live
//     beside it, as in Kafka's CoordinatorTimer, and Loaded re-arms them
//     after a replay the way GroupMetadataManager.onLoaded does.
//  3. There is no clock, goroutine, IO or randomness: time comes in as
//     `now`, and member ids the coordinator must invent (ConsumerGroupHeartbeat
//     v0 with an empty id) come from Config.NewMemberID.
//
// # For the shell
//
// The coordinator shell routes to a Manager: ConsumerGroupHeartbeat
// (Heartbeat, with RequestContext.Classic so that an Empty classic group
// can be converted), ConsumerGroupDescribe (Describe), records of types 3–8
// and 16 while loading (Replay, then Loaded), timers (Tick, NextDeadline),
// and the questions of the shared APIs: HasGroup, Info, GroupIDs,
// ValidateOffsetCommit, ValidateOffsetFetch, Delete. Records returned by
// Heartbeat, Tick and Delete are shaped with records.AsWrittenBy and
// already applied; the shell writes them and does not Replay them again.
// The shell reaches a Manager through the adapter in
// coordinator/consumer_adapter.go (coordinator.NewConsumerGroups).
//
// # Mixed groups and conversions
//
// Members that speak the classic protocol inside a consumer group (KIP-848's
// online migration) are served here: the shell routes JoinGroup, SyncGroup,
// Heartbeat and LeaveGroup of a consumer group to ClassicJoin, ClassicSync,
// ClassicHeartbeat and ClassicLeave (classic_member.go). A non-empty classic
// group is upgraded when a consumer-protocol member joins it, and a consumer
// group is downgraded when its last consumer-protocol member goes, as
// group.consumer.migration.policy (Config.MigrationPolicy) allows
// (conversion.go); the shell hands classic groups over and takes them back
// through the optional ClassicUpgrader and ClassicDowngrader.
//
// # Regular-expression subscriptions
//
// A member's SubscribedTopicRegex is resolved as GMM does it (regex.go): a
// heartbeat schedules the resolution, and the next Tick (hosts tick right
// after every request) writes the ConsumerGroupRegularExpression records
// and the epoch bump. Topics are listed through the optional TopicLister; a
// host without it resolves every regex to no topics. Patterns where Go's
// regexp and Kafka's RE2/J differ are answered as Kafka answers them or
// refused with UNSUPPORTED_VERSION (checkRE2J). The metadata image version
// a resolution records is the Manager's own count of topic changes, never
// below the versions it replayed: Kafka's is the offset of its KRaft log.
//
// # Not modelled
//
// Group-level config overrides (consumer.session.timeout.ms per group) are
// not read; a regex is resolved without the authorizer's DESCRIBE filter
// (TopicRegexResolver.filterTopicDescribeAuthorizedTopics).
//
// The metadata hash written from 4.1 (metadatahash.go) is Kafka's own,
// XXH3-64 over the bytes Utils.computeTopicHash and computeGroupHash feed
// hash4j, checked against values from Kafka's jar; racks count when the
// host's TopicMetadata implements PartitionRacks.
package consumergroup
