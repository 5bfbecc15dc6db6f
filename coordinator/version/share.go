package version

import (
	"fmt"
	"strings"
)

// ShareStage is how far a release carries KIP-932's share groups.
type ShareStage int8

const (
	// ShareEarlyAccess (4.0): the share RPCs exist at v0, marked
	// latestVersionUnstable, so a broker serves them only with the internal
	// unstable.api.versions.enable; share groups are on when the internal
	// group.share.enable is true or group.coordinator.rebalance.protocols
	// names "share" (ShareGroupConfig of the 4.0 branch). v0 was removed in
	// 4.1: no released client speaks it.
	ShareEarlyAccess ShareStage = iota + 1
	// SharePreview (4.1): the RPCs at v1, served once share.version=1 is
	// finalized (`kafka-features.sh upgrade --feature share.version=1`,
	// 4.1.0's upgrade notes) or group.share.enable is set; a cluster the
	// release formats starts at share.version 0 (KafkaApis
	// isShareGroupProtocolEnabled: shareGroupConfig.isShareGroupEnabled ||
	// shareVersion().supportsShareGroups).
	SharePreview
	// ShareProduction (4.2+): production-ready (4.2.0's upgrade notes); a
	// cluster the release formats starts at share.version 1 or later, so
	// share groups are on without any setting. From 4.3 share.version alone
	// decides (group.share.enable is gone; 4.4's isShareGroupProtocolEnabled
	// is shareVersion().supportsShareGroups).
	ShareProduction
)

func (s ShareStage) String() string {
	switch s {
	case ShareEarlyAccess:
		return "early access"
	case SharePreview:
		return "preview"
	case ShareProduction:
		return "production"
	}
	return fmt.Sprintf("ShareStage(%d)", int8(s))
}

// MarshalText names the stage in saved plans and profiles.
func (s ShareStage) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// FeatureShareVersion is ShareVersion.FEATURE_NAME (server-common).
const FeatureShareVersion = "share.version"

// API keys of the share-group requests (clients/src/main/resources/common/message).
const (
	APIShareGroupHeartbeat       int16 = 76
	APIShareGroupDescribe        int16 = 77
	APIShareFetch                int16 = 78
	APIShareAcknowledge          int16 = 79
	APIDescribeShareGroupOffsets int16 = 90
)

// Acknowledge types of ShareFetch and ShareAcknowledge
// (AcknowledgeType.java; 0 is a gap in the offsets, RENEW needs v2).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// Share-group broker defaults of every 4.x release (ShareGroupConfig and
// GroupCoordinatorConfig of the 4.0–4.4 branches): the acquisition lock of
// a record, the delivery count limit (a record acquired that many times is
// archived when its lock lapses or it is released), and the share member
// session timeout and heartbeat interval with their lower bounds.
const (
	ShareRecordLockDurationMsDefault    = 30000 // group.share.record.lock.duration.ms
	ShareMinRecordLockDurationMsDefault = 15000 // group.share.min.record.lock.duration.ms (1000–30000)
	ShareDeliveryCountLimitDefault      = 5     // group.share.delivery.count.limit (2–10)
	ShareSessionTimeoutMsDefault        = 45000 // group.share.session.timeout.ms (min 45000 by default)
	ShareHeartbeatIntervalMsDefault     = 5000  // group.share.heartbeat.interval.ms (min 5000 by default)
	// ShareAssignmentIntervalMsDefault is group.share.assignment.interval.ms
	// (KIP-1263, where Profile.ShareAssignmentInterval: 4.3+): a share
	// group's target assignment is computed at most that often.
	ShareAssignmentIntervalMsDefault = 1000
	// ShareInitializeRetryIntervalMsDefault is
	// group.share.initialize.retry.interval.ms (4.2–4.4): a share-partition
	// initializing for longer is asked for again by the next heartbeat.
	ShareInitializeRetryIntervalMsDefault = 30000
)

// ShareAPIVersions returns the request versions of the share-group APIs
// p's release serves when share groups are on, or nil where it serves
// none without unstable versions (4.0: v0 only, latestVersionUnstable).
// ShareGroupHeartbeat and ShareGroupDescribe are v1 from 4.1;
// ShareFetch and ShareAcknowledge v1, v1–v2 from 4.2 (ShareFetchV2);
// DescribeShareGroupOffsets v0, v0–v1 from 4.2. They are kept apart from
// APIVersions, which lists what the reference coordinator and the embedded
// broker serve: of these, only ShareGroupHeartbeat and ShareGroupDescribe,
// and only where share groups are production-ready (ShareCoordinatorAPIs).
func (p Profile) ShareAPIVersions() map[int16]APIRange {
	if p.ShareGroups < SharePreview {
		return nil
	}
	out := map[int16]APIRange{
		APIShareGroupHeartbeat:       {1, 1},
		APIShareGroupDescribe:        {1, 1},
		APIShareFetch:                {1, 1},
		APIShareAcknowledge:          {1, 1},
		APIDescribeShareGroupOffsets: {0, 0},
	}
	if p.ShareFetchV2 {
		out[APIShareFetch] = APIRange{1, 2}
		out[APIShareAcknowledge] = APIRange{1, 2}
		out[APIDescribeShareGroupOffsets] = APIRange{0, 1}
	}
	return out
}

// APIIncrementalAlterConfigs is the key of IncrementalAlterConfigs, which
// sets a share group's configs (share.auto.offset.reset), and
// IncrementalAlterConfigsVersions the versions 4.2–4.4 serve
// (IncrementalAlterConfigsRequest.json, "validVersions": "0-1" on the
// 4.2 and 4.4 branches).
const APIIncrementalAlterConfigs int16 = 44

var IncrementalAlterConfigsVersions = APIRange{0, 1}

// ShareAutoOffsetResetConfig is the group config that says where a
// share-partition starts (GroupConfig.SHARE_AUTO_OFFSET_RESET_CONFIG),
// and ShareAutoOffsetResetDefault its default ("latest").
const (
	ShareAutoOffsetResetConfig  = "share.auto.offset.reset"
	ShareAutoOffsetResetDefault = "latest"
)

// ShareCoordinatorAPIs are the share-group APIs the reference group
// coordinator serves (where p.ShareGroups is ShareProduction): the group
// coordinator's own, ShareGroupHeartbeat and ShareGroupDescribe. The
// share-partition leader's (ShareFetch, ShareAcknowledge) and the share
// coordinator's (DescribeShareGroupOffsets) are not modelled.
var ShareCoordinatorAPIs = [...]int16{APIShareGroupHeartbeat, APIShareGroupDescribe}

// ShareServed returns the served releases on which groupquake runs share
// groups (ShareProduction), oldest first.
func ShareServed() []Version {
	var out []Version
	for _, v := range served {
		if v.Profile().ShareGroups == ShareProduction {
			out = append(out, v)
		}
	}
	return out
}

// CheckShareGroups says whether groupquake runs share groups on v: only
// where they are production-ready and on in a freshly formatted cluster
// (4.2.0+). The error names what an older release would need, so that a
// user who asks for share members on it learns why not and what to pick.
func CheckShareGroups(v Version) error {
	p := v.Profile()
	if p.ShareGroups == ShareProduction {
		return nil
	}
	var ok []string
	for _, s := range ShareServed() {
		ok = append(ok, s.String())
	}
	var why string
	switch p.ShareGroups {
	case SharePreview:
		why = fmt.Sprintf("Kafka %s has share groups as a preview only (RPCs v1, off until share.version=1 is finalized with kafka-features.sh or the internal group.share.enable=true is set; a cluster %s formats starts at share.version 0)", v, v.Line())
	default:
		why = fmt.Sprintf("Kafka %s has share groups as early access only (RPCs v0, served only with the internal unstable.api.versions.enable=true, and on only with group.share.enable=true or \"share\" in group.coordinator.rebalance.protocols; no released client speaks v0)", v)
	}
	return fmt.Errorf("share members need Kafka 4.2.0 or later, where share groups are production-ready and share.version=1 is on in every cluster the release formats: %s; pick one of %s", why, strings.Join(ok, ", "))
}

// A share group's size (GroupCoordinatorConfig, group.share.max.size):
// 200 members unless the brokers set it, at most 1000. A member that would
// make the group larger is answered GROUP_MAX_SIZE_REACHED and never joins.
const (
	ShareGroupMaxSizeDefault = 200
	ShareGroupMaxSizeCap     = 1000
)

// ShareAckMayHaveApplied reports whether a share-partition leader's
// per-partition error answering an acknowledgement (ShareAcknowledge, or
// one piggybacked on ShareFetch) leaves its outcome unknown: the state
// write may have landed in __share_group_state although the answer says it
// failed. Read from the 4.2 and 4.4 branches (alike in all of this):
//
//   - SharePartition.rollbackOrProcessStateUpdates sends the state batches
//     through writeShareGroupState, and the acknowledgement's answer is the
//     outcome of that one persister call; fetchPersisterError maps the
//     write's error: FENCED_LEADER_EPOCH and FENCED_STATE_EPOCH to
//     NotLeaderOrFollowerException, NOT_COORDINATOR,
//     COORDINATOR_NOT_AVAILABLE and COORDINATOR_LOAD_IN_PROGRESS to
//     CoordinatorNotAvailableException, GROUP_ID_NOT_FOUND and
//     UNKNOWN_TOPIC_OR_PARTITION to themselves, anything else to
//     UnknownServerException; a failed persister future becomes an
//     IllegalStateException (UNKNOWN_SERVER_ERROR).
//   - PersisterStateManager.WriteStateHandler retries the write, to the
//     share coordinator found again, on NOT_COORDINATOR,
//     COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
//     UNKNOWN_TOPIC_OR_PARTITION and on a lost or timed-out request
//     (NETWORK_EXCEPTION, REQUEST_TIMED_OUT), and answers with the last
//     attempt's error.
//   - An earlier attempt may have landed: CoordinatorRuntime's unload fails
//     the writes waiting for the high watermark with NOT_COORDINATOR
//     (deferredEventQueue.failAll) while their records stay in the log; the
//     share coordinator answers a write that timed out waiting for
//     replication COORDINATOR_NOT_AVAILABLE, one whose partition lost its
//     leader NOT_COORDINATOR (CoordinatorOperationExceptionHelper.
//     handleOperationException), its records possibly in the log; and a
//     request whose answer was lost may have been applied.
//   - The retry then meets the new share-partition leader's leader epoch
//     (ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch writes it
//     when the new leader loads the state, after the landed attempt) and is
//     refused FENCED_LEADER_EPOCH (maybeGetWriteStateError), so the old
//     leader answers NOT_LEADER_OR_FOLLOWER for a write that is in
//     __share_group_state. A 4.2.1 → 4.4.0 rolling upgrade showed it.
//
// The errors answered before any write (INVALID_RECORD_STATE,
// INVALID_REQUEST from SharePartition.acknowledge's checks,
// TOPIC_AUTHORIZATION_FAILED, the share session errors) mean the
// acknowledgement was not applied. UNKNOWN_TOPIC_OR_PARTITION is also
// what SharePartitionManager answers for a share-partition it no longer
// has (nothing applied), but the history cannot tell it from the
// persister's, so it is unknown too. name is Kafka's error name or
// franz-go's (NOT_LEADER_FOR_PARTITION for NOT_LEADER_OR_FOLLOWER).
func ShareAckMayHaveApplied(name string) bool {
	switch name {
	case "NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION",
		"COORDINATOR_NOT_AVAILABLE", "GROUP_ID_NOT_FOUND",
		"UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_SERVER_ERROR":
		return true
	}
	return false
}

// ShareErrorDropsPartition reports whether a share-partition leader's
// per-partition error answering an acknowledgement (ShareAcknowledge, or
// one piggybacked on ShareFetch) means it no longer has the share-partition
// in its cache. SharePartitionManager.acknowledge hands the acknowledgement
// to the cached SharePartition, and when it fails runs
// fencedSharePartitionHandler, which removes the share-partition (and marks
// it fenced) on NotLeaderOrFollowerException, FencedStateEpochException,
// GroupIdNotFoundException and UnknownTopicOrPartitionException: the
// errors SharePartition.fetchPersisterError makes of a failed state write;
// a partition not cached is answered UNKNOWN_TOPIC_OR_PARTITION there, and
// KafkaApis.handleAcknowledgements answers it so for a partition its
// metadata cache does not hold (4.2 and 4.4 alike). A share-partition
// loaded again on that broker knows only the persisted state
// (SharePartition.maybeInitialize): no acquisition lock, and the delivery
// counts last written. A fetch's error is another matter:
// ShareFetchErrorMayDropPartition.
func ShareErrorDropsPartition(name string) bool {
	switch name {
	case "NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION", "FENCED_STATE_EPOCH",
		"GROUP_ID_NOT_FOUND", "UNKNOWN_TOPIC_OR_PARTITION":
		return true
	}
	return false
}

// ShareFetchErrorMayDropPartition reports whether a share-partition
// leader's per-partition error answering a fetch may mean it removed the
// share-partition from its cache; unlike an acknowledgement's, it need not
// (4.2 and 4.4 alike):
//
//   - ShareFetchUtils.processFetchResponse copies the error of the log read
//     (ReplicaManager's, NOT_LEADER_OR_FOLLOWER when the replica is not the
//     leader at that moment) into the answer and keeps the share-partition
//     with every acquisition it holds;
//   - DelayedShareFetch passes an exception it meets (the log read failing
//     as a whole, handleFetchException; the end offset of a partition it no
//     longer leads, isMinBytesSatisfied) to SharePartitionManager's
//     fencedSharePartitionHandler, which removes the share-partition on
//     NotLeaderOrFollowerException, FencedStateEpochException,
//     GroupIdNotFoundException and UnknownTopicOrPartitionException, and
//     answers the same errors;
//   - SharePartitionManager.processShareFetch removes a share-partition
//     whose initialisation failed (handleInitializationException), one that
//     held nothing yet;
//   - the replica becoming a follower, being deleted or failing removes
//     the share-partition with no answer saying so
//     (SharePartitionListener).
//
// So such an answer is a possible drop, which the leader's later
// behaviour can disprove: a share-partition loaded again has no
// acquisition, so it refuses an acknowledgement of a record handed out
// before (SharePartition's acknowledge checks, INVALID_RECORD_STATE).
func ShareFetchErrorMayDropPartition(name string) bool {
	return ShareErrorDropsPartition(name)
}
