package consumergroup

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/internal/same"
	"github.com/groupquake/groupquake/coordinator/records"
)

// Member epochs with a meaning of their own (ConsumerGroupHeartbeatRequest).
const (
	// JoinEpoch asks to join or rejoin.
	JoinEpoch int32 = 0
	// LeaveEpoch leaves the group.
	LeaveEpoch int32 = -1
	// StaticLeaveEpoch is a static member's temporary leave: it keeps its
	// partitions until its session expires or its instance id rejoins.
	StaticLeaveEpoch int32 = -2
)

// RequestContext is what the heartbeat takes from the connection rather
// than from the request body (AuthorizableRequestContext).
type RequestContext struct {
	ClientID string
	// ClientHost is InetAddress.toString() in Kafka, e.g. "/127.0.0.1".
	ClientHost string
	// Classic is the shell's classic groups; nil means there are none. A
	// join to the id of an Empty classic group converts it (its
	// GroupMetadata tombstone comes first in the records); any other
	// classic group makes the id "not a consumer group".
	Classic ClassicGroups
}

// Heartbeat handles one ConsumerGroupHeartbeat (GroupCoordinatorService
// validation, then GMM.consumerGroupHeartbeat or GMM.consumerGroupLeave). It
// returns the response and the records written, already replayed into m. A
// failed request writes nothing; its response carries the error code and
// message and no member id. The response version is the request's.
// topics is the cluster's metadata now; nil means a cluster without topics
// (every subscribed topic then counts as deleted).
func (m *Manager) Heartbeat(now time.Time, rc RequestContext, req *kmsg.ConsumerGroupHeartbeatRequest, topics TopicMetadata) (*kmsg.ConsumerGroupHeartbeatResponse, []records.Record) {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	if rc.Classic != nil {
		m.classic = rc.Classic
	}
	hb := &heartbeat{m: m, now: now, rc: rc, req: req, topics: orEmpty(topics), resp: resp}
	if err := hb.run(); err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = errorf(kerr.UnknownServerError, "%v", err)
		}
		out := kmsg.NewPtrConsumerGroupHeartbeatResponse()
		out.Version = req.Version
		out.ErrorCode = e.Code.Code
		if msg := e.Message; msg != "" {
			out.ErrorMessage = &msg
		}
		return out, nil
	}
	return resp, hb.recs
}

// heartbeat is the state of one request while it is handled.
type heartbeat struct {
	m      *Manager
	now    time.Time
	rc     RequestContext
	req    *kmsg.ConsumerGroupHeartbeatRequest
	topics TopicMetadata
	resp   *kmsg.ConsumerGroupHeartbeatResponse
	recs   []records.Record
	// after runs once the records are replayed (timers).
	after []func()
	// downgrade, when set, turns the group into a classic group once the
	// records are applied (GMM.convertToClassicGroup).
	downgrade func() []records.Record
	// convert says whether the group id is a classic group to convert
	// (Empty) or upgrade (with members) once the request succeeds.
	convert gate
}

// run handles the request. It keeps, as GMM does:
//  1. Nothing changes unless the whole request succeeds: records are
//     computed from the state before the request, then replayed at once,
//     and a replay failure rolls the group back.
//  2. Timers change only after the records are applied, and only on
//     success: a failed heartbeat does not refresh the session.
//  3. The response carries the member's epoch and assignment after the
//     records, never a state that was not written.
func (hb *heartbeat) run() error {
	if hb.req.Group != "" {
		hb.m.lastTopics = hb.topics
		hb.m.observeTopics(hb.topics)
	}
	if err := hb.validate(); err != nil {
		return err
	}
	var err error
	if hb.req.MemberEpoch == LeaveEpoch || hb.req.MemberEpoch == StaticLeaveEpoch {
		err = hb.leave()
	} else {
		err = hb.heartbeat()
	}
	if err != nil {
		return err
	}
	switch hb.convert {
	case gateConvertEmpty:
		// Asked only now: the shell deletes the classic group when asked.
		hb.recs = append(hb.rc.Classic.ConvertEmptyClassic(hb.req.Group), hb.recs...)
	case gateUpgrade:
		hb.recs = append(hb.rc.Classic.(ClassicUpgrader).ConvertClassic(hb.req.Group), hb.recs...)
	}
	return hb.apply(hb.req.Group, "heartbeat")
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// validate is GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid
// plus the service's INVALID_GROUP_ID check. A regex the model cannot
// resolve as RE2/J does (checkRE2J) is refused with UNSUPPORTED_VERSION;
// Kafka's own INVALID_REGULAR_EXPRESSION comes later, from
// maybeUpdateRegex, as in GMM.
func (hb *heartbeat) validate() error {
	r := hb.req
	// KIP-1082: from v1 the client makes up its member id.
	if (r.Version >= 1 || r.MemberEpoch > 0 || r.MemberEpoch == LeaveEpoch) && blank(r.MemberID) {
		return errorf(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	if blank(r.Group) {
		return errorf(kerr.InvalidRequest, "GroupId can't be empty.")
	}
	if r.InstanceID != nil && blank(*r.InstanceID) {
		return errorf(kerr.InvalidRequest, "InstanceId can't be empty.")
	}
	if r.RackID != nil && blank(*r.RackID) {
		return errorf(kerr.InvalidRequest, "RackId can't be empty.")
	}
	switch {
	case r.MemberEpoch == JoinEpoch:
		if r.RebalanceTimeoutMillis == -1 {
			return errorf(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		}
		if r.Topics == nil || len(r.Topics) != 0 {
			return errorf(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
		}
		if r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil {
			return errorf(kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case r.MemberEpoch == StaticLeaveEpoch:
		if r.InstanceID == nil {
			return errorf(kerr.InvalidRequest, "InstanceId can't be null.")
		}
	case r.MemberEpoch < StaticLeaveEpoch:
		return errorf(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	if r.ServerAssignor != nil && !slices.Contains(hb.m.cfg.Assignors, *r.ServerAssignor) {
		return errorf(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
			*r.ServerAssignor, strings.Join(hb.m.cfg.Assignors, ", "))
	}
	if r.SubscribedTopicRegex != nil && *r.SubscribedTopicRegex != "" {
		if _, why := checkRE2J(hb.m.profile, *r.SubscribedTopicRegex); why != "" {
			return errorf(kerr.UnsupportedVersion, "SubscribedTopicRegex `%s` is not modelled by groupquake's reference coordinator: %s", *r.SubscribedTopicRegex, why)
		}
	}
	return nil
}

// group returns the consumer group or GROUP_ID_NOT_FOUND (GMM.consumerGroup).
func (hb *heartbeat) existingGroup() (*group, error) {
	g, ok := hb.m.rp.groups[hb.req.Group]
	if !ok {
		if _, err := classicGate(hb.rc.Classic, hb.req.Group, false); err != nil {
			return nil, err
		}
		// GMM.group: "Group", where getOrMaybeCreateConsumerGroup (the
		// heartbeat path) says "Consumer group".
		return nil, errorf(kerr.GroupIDNotFound, "Group %s not found.", hb.req.Group)
	}
	return g, nil
}

// leave is GMM.consumerGroupLeave: -1 fences the member, -2 is a static
// member's temporary leave.
func (hb *heartbeat) leave() error {
	r := hb.req
	g, err := hb.existingGroup()
	if err != nil {
		return err
	}
	hb.resp.MemberID = &r.MemberID
	hb.resp.MemberEpoch = r.MemberEpoch
	var mb *member
	if r.InstanceID == nil {
		if mb = g.members[r.MemberID]; mb == nil {
			return errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", r.MemberID, g.id)
		}
	} else {
		mb = g.staticMember(*r.InstanceID)
		if err := throwIfStaticMemberIsUnknown(mb, *r.InstanceID); err != nil {
			return err
		}
		if err := throwIfInstanceIDIsFenced(mb, r.MemberID, *r.InstanceID); err != nil {
			return err
		}
		if r.MemberEpoch == StaticLeaveEpoch {
			// GMM.consumerGroupStaticMemberGroupLeave: keep the partitions,
			// drop the pending revocations, and let the session run on.
			left := mb.clone()
			left.epoch = StaticLeaveEpoch
			left.pending = assignment{}
			hb.recs = append(hb.recs, hb.m.currentRecord(g.id, left))
			hb.resp.MemberID = &mb.id
			return nil
		}
	}
	recs, downgrade := hb.m.fenceMember(g, mb)
	hb.recs = append(hb.recs, recs...)
	hb.downgrade = downgrade
	groupID, memberID := g.id, mb.id
	hb.after = append(hb.after, func() { hb.m.cancelTimers(groupID, memberID) })
	return nil
}

// fenceMember is GMM.consumerGroupFenceMembers for one member.
func (m *Manager) fenceMember(g *group, mb *member) ([]records.Record, func() []records.Record) {
	return m.fenceMembers(g, []*member{mb})
}

// fenceMembers is GMM.consumerGroupFenceMembers: each member's three
// tombstones (current assignment, target, metadata, in the order replay
// requires), then one group epoch bump with the metadata recomputed without
// them. No target is computed: the next heartbeat of anyone does that.
//
// When only classic members would be left and the policy and group.max.size
// allow it (GMM.validateOnlineDowngradeWithFencedMembers), the group is
// downgraded instead (GMM.convertToClassicGroup): the records are the
// consumer group's tombstones, and downgrade, which the caller runs once
// they are applied, has the shell create the classic group and returns its
// records. downgrade is nil otherwise.
func (m *Manager) fenceMembers(g *group, mbs []*member) (recs []records.Record, downgrade func() []records.Record) {
	if recs, downgrade := m.maybeDowngrade(g, mbs); downgrade != nil {
		return recs, downgrade
	}
	gone := map[string]bool{}
	var fenced []*member
	for _, mb := range mbs {
		if gone[mb.id] {
			continue
		}
		gone[mb.id] = true
		fenced = append(fenced, mb)
		recs = append(recs,
			tombstone(records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: mb.id}),
			tombstone(records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: mb.id}),
			tombstone(records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: mb.id}),
		)
	}
	regexRecs, deleted := g.deleteResolvedRegexes(fenced)
	recs = append(recs, regexRecs...)
	// ConsumerGroup.computeSubscribedTopicNamesWithoutDeletedMembers.
	// The group's counts less the fenced members' names, not a walk of
	// every member that stays.
	counts := maps.Clone(g.nameCounts)
	for id := range gone {
		if mb, ok := g.members[id]; ok {
			for _, n := range mb.subscribed {
				if counts[n]--; counts[n] <= 0 {
					delete(counts, n)
				}
			}
		}
	}
	for re, r := range g.resolved {
		if deleted[re] {
			continue
		}
		for _, n := range r.topics {
			counts[n]++
		}
	}
	names := keys(counts)
	var hash int64
	if m.profile.WritesPartitionMetadata {
		meta := m.subscriptionMetadata(m.lastTopics, names)
		if !maps.Equal(meta, g.subscriptionMetadata) {
			recs = append(recs, m.partitionMetadataRecord(g.id, meta))
		}
	} else {
		hash = m.metadataHash(m.lastTopics, names)
	}
	recs = append(recs, m.epochRecord(g.id, g.epoch+1, hash))
	if m.profile.LastLeaveResetsAssignmentEpoch && len(gone) >= len(g.members) {
		// KAFKA-20442: an emptied group's assignment epoch follows its
		// group epoch, with timestamp 0 as for a new group.
		recs = append(recs, m.targetMetadataRecord(g.id, g.epoch+1, 0))
	}
	return recs, nil
}

// heartbeat is GMM.consumerGroupHeartbeat for epochs ≥ 0.
func (hb *heartbeat) heartbeat() error {
	m, r := hb.m, hb.req

	// Get or create the group; creation only on epoch 0.
	g, ok := m.rp.groups[r.Group]
	if !ok {
		convert, err := classicGate(hb.rc.Classic, r.Group, r.MemberEpoch == JoinEpoch)
		if err != nil {
			return err
		}
		if r.MemberEpoch != JoinEpoch {
			return errorf(kerr.GroupIDNotFound, "Consumer group %s not found.", r.Group)
		}
		hb.convert = convert
		if convert == gateUpgrade {
			// GMM.validateOnlineUpgrade and convertToConsumerGroup: the
			// classic group's records come first, then this heartbeat's.
			if g, err = hb.upgrade(r.Group); err != nil {
				return err
			}
		} else {
			g = newGroup(r.Group, m.profile.InitialGroupEpoch)
		}
	}
	instanceID := deref(r.InstanceID)
	if err := m.throwIfGroupIsFull(g, r.MemberID, instanceID); err != nil {
		return err
	}
	memberID := r.MemberID
	if memberID == "" {
		memberID = m.newMemberID()
	}

	// Get or create the member (static members may replace another one).
	var mb *member
	var err error
	if instanceID == "" {
		mb, err = hb.dynamicMember(g, memberID)
	} else {
		mb, err = hb.staticMember(g, memberID, instanceID)
	}
	if err != nil {
		return err
	}

	// 1. Update the member's metadata with what the request carries.
	updated := mb.withMetadata(instanceID, r.RackID, r.RebalanceTimeoutMillis)
	if r.ServerAssignor != nil {
		updated.serverAssignor = *r.ServerAssignor
	}
	if r.SubscribedTopicNames != nil {
		updated.setSubscribed(sortedSet(r.SubscribedTopicNames))
	}
	if r.SubscribedTopicRegex != nil {
		updated.regex = *r.SubscribedTopicRegex
	}
	updated.clientID, updated.clientHost = hb.rc.ClientID, hb.rc.ClientHost
	// A consumer-protocol heartbeat makes the member a consumer-protocol
	// member (GMM.consumerGroupHeartbeat: setClassicMemberMetadata(null)),
	// for example when it replaces a classic static member.
	updated.classic = nil

	reconciled, err := hb.update(g, mb, updated, r.Topics)
	if err != nil {
		return err
	}

	groupID := g.id
	hb.after = append(hb.after, func() {
		m.scheduleSession(hb.now, groupID, reconciled.id)
		m.markRefreshed(groupID)
	})

	hb.resp.MemberID = &reconciled.id
	hb.resp.MemberEpoch = reconciled.epoch
	hb.resp.HeartbeatIntervalMillis = int32(m.cfg.HeartbeatInterval / time.Millisecond)
	full := r.RebalanceTimeoutMillis != -1 && (r.SubscribedTopicNames != nil || r.SubscribedTopicRegex != nil) && r.Topics != nil
	if r.MemberEpoch == JoinEpoch || full || !mb.assigned.samePartitions(reconciled.assigned) {
		hb.resp.Assignment = responseAssignment(reconciled.assigned)
	}
	return nil
}

// update is steps 1–3 that GMM.consumerGroupHeartbeat and
// GMM.classicGroupJoinToConsumerGroup share: write the member's metadata if
// it changed, bump the group epoch when its subscription (or, 4.4, the
// preferred assignor) or the topics changed, recompute the target when the
// group epoch moved past it, and reconcile the member toward its target
// with the partitions it says it owns. It returns the reconciled member.
func (hb *heartbeat) update(g *group, mb, updated *member, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (*member, error) {
	groupEpoch, subType, hasSubscriptionChanged, err := hb.updateMetadata(g, mb, updated)
	if err != nil {
		return nil, err
	}

	// 2. Update the target assignment if the group epoch moved past it.
	targetEpoch, target, err := hb.maybeUpdateTarget(g, groupEpoch, mb, updated, subType, hb.now.UnixMilli())
	if err != nil {
		return nil, err
	}

	// 3. Reconcile the member toward the target.
	return hb.reconcile(g, updated, targetEpoch, target, hasSubscriptionChanged, owned)
}

// updateMetadata is step 1 of update: the member's metadata record if it
// changed, its regex's bookkeeping (maybeUpdateRegex), and the group epoch
// bump (with the subscription metadata) when its subscribed topic names
// changed, its new regex is already resolved or it dropped its regex
// (KAFKA-19891), the group is new (before 4.3), the preferred assignor
// changed (4.4) or the topics changed. A classic member joining in place of
// a static member that had a regex bumps it too
// (GMM.classicGroupJoinToConsumerGroup). It returns the group epoch, the
// subscription type and whether the subscription (names or regex) changed.
func (hb *heartbeat) updateMetadata(g *group, mb, updated *member) (int32, assignor.SubscriptionType, bool, error) {
	m := hb.m
	namesChanged := false
	if !updated.equal(mb) {
		hb.recs = append(hb.recs, m.memberMetadataRecord(g.id, updated))
		namesChanged = !slices.Equal(updated.subscribed, mb.subscribed)
	}
	status, err := hb.maybeUpdateRegex(g, mb, updated)
	if err != nil {
		return 0, 0, false, err
	}

	groupEpoch := g.epoch
	numMembers := len(g.members)
	if _, ok := g.members[updated.id]; !ok && g.staticMember(updated.instanceID) == nil {
		numMembers++
	}
	subType := subscriptionType(g.subscribedRegexes(), g.subscribedTopicNames(nil, nil), len(g.members))

	// Until 4.3 a new group starts at epoch 0 and must move away from it;
	// from 4.3 (KAFKA-20268) it starts at 1 and the check is gone.
	bump := (m.profile.InitialGroupEpoch == 0 && g.epoch == 0) || namesChanged
	if updated.useClassicProtocol() {
		bump = bump || mb.regex != ""
	} else {
		bump = bump || status == regexUpdatedAndResolved
	}
	if m.profile.AssignorChangeRecomputes {
		// KAFKA-20434 (4.3.2, 4.4.0): a new effective assignor recomputes the target.
		if m.preferredAssignor(g, nil, nil) != m.preferredAssignor(g, mb, updated) {
			bump = true
		}
	}
	if bump || m.hasMetadataExpired(g, hb.topics) {
		groupEpoch, subType = hb.updateSubscriptionMetadata(g, bump, mb, updated, numMembers)
	}
	return groupEpoch, subType, namesChanged || status != regexNoChange, nil
}

// reconcile is step 3 of update (GMM.maybeReconcile): the member moves
// toward its target, and its current assignment is written if it changed.
func (hb *heartbeat) reconcile(g *group, updated *member, targetEpoch int32, target map[TopicID][]int32, hasSubscriptionChanged bool, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (*member, error) {
	m := hb.m
	reconciled := updated
	var err error
	if (m.profile.SubscriptionBoundsAssignment && hasSubscriptionChanged) || !updated.isReconciledTo(targetEpoch) {
		rc := &reconciler{
			profile:                m.profile,
			member:                 updated,
			targetEpoch:            targetEpoch,
			target:                 target,
			sub:                    g.subscriptionOf(updated, hb.topics),
			hasSubscriptionChanged: hasSubscriptionChanged,
			partitionEpoch:         g.currentPartitionEpoch,
			owned:                  owned,
		}
		if reconciled, err = rc.build(); err != nil {
			return nil, err
		}
		if !reconciled.equal(updated) {
			hb.recs = append(hb.recs, m.currentRecord(g.id, reconciled))
			groupID, rec := g.id, reconciled
			hb.after = append(hb.after, func() {
				if rec.useClassicProtocol() {
					// A classic member has no rebalance timeout: it is
					// told to rejoin and gets a join timeout instead
					// (GMM.maybeReconcile).
					return
				}
				if rec.state == records.MemberUnrevokedPartitions {
					m.scheduleRebalance(hb.now, groupID, rec.id, rec.epoch, rec.rebalanceTimeoutMs)
				} else {
					delete(m.timers, timerKey{groupID, rec.id, rebalanceTimer})
				}
			})
		}
	}

	return reconciled, nil
}

// throwIfGroupIsFull is GMM.throwIfConsumerGroupIsFull. From KAFKA-20601 a
// known static instance id is let in even when the group is full.
func (m *Manager) throwIfGroupIsFull(g *group, memberID, instanceID string) error {
	if m.profile.StaticRejoinFullGroup && g.staticMember(instanceID) != nil {
		return nil
	}
	if _, known := g.members[memberID]; len(g.members) >= m.cfg.MaxSize && (memberID == "" || !known) {
		return errorf(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", m.cfg.MaxSize)
	}
	return nil
}

// dynamicMember is GMM.getOrMaybeSubscribeDynamicConsumerGroupMember.
func (hb *heartbeat) dynamicMember(g *group, memberID string) (*member, error) {
	mb, ok := g.members[memberID]
	if !ok {
		if hb.req.MemberEpoch != JoinEpoch {
			return nil, errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
		}
		return newMember(memberID), nil
	}
	if err := hb.checkEpoch(mb); err != nil {
		return nil, err
	}
	return mb, nil
}

// staticMember is GMM.getOrMaybeSubscribeStaticConsumerGroupMember.
func (hb *heartbeat) staticMember(g *group, memberID, instanceID string) (*member, error) {
	existing := g.staticMember(instanceID)
	if hb.req.MemberEpoch == JoinEpoch {
		if mb, ok := g.members[memberID]; ok && hb.m.profile.StaticRejoinOwnInstance {
			return hb.staticRejoin(mb, instanceID)
		}
		if existing == nil {
			if mb, ok := g.members[memberID]; ok {
				return mb, nil
			}
			return newMember(memberID), nil
		}
		// When both use the consumer protocol the instance id is released
		// only by a temporary leave (-2); a classic member's instance id is
		// taken over at once (GMM.getOrMaybeSubscribeStaticConsumerGroupMember).
		if !existing.useClassicProtocol() && existing.epoch != StaticLeaveEpoch {
			return nil, errorf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
				memberID, instanceID, existing.id)
		}
		// GMM.replaceMember: the old member's tombstones, then the new member
		// with its metadata, target and partitions at epoch 0.
		repl := hb.replaceMember(g, existing, memberID)
		return repl, nil
	}
	if err := throwIfStaticMemberIsUnknown(existing, instanceID); err != nil {
		return nil, err
	}
	if err := throwIfInstanceIDIsFenced(existing, memberID, instanceID); err != nil {
		return nil, err
	}
	if err := hb.checkEpoch(existing); err != nil {
		return nil, err
	}
	return existing, nil
}

// throwIfStaticMemberIsUnknown is GMM.throwIfStaticMemberIsUnknown: no
// member holds instanceID.
func throwIfStaticMemberIsUnknown(existing *member, instanceID string) error {
	if existing == nil {
		return errorf(kerr.UnknownMemberID, "Instance id %s is unknown.", instanceID)
	}
	return nil
}

// throwIfInstanceIDIsFenced is GMM.throwIfInstanceIdIsFenced: existing,
// the holder of instanceID, is another member than memberID.
func throwIfInstanceIDIsFenced(existing *member, memberID, instanceID string) error {
	if existing.id != memberID {
		return errorf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", memberID, instanceID, existing.id)
	}
	return nil
}

// replaceMember is GMM.replaceMember: member memberID takes over the
// instance id of existing; the old member's tombstones, then the new member
// with its metadata, target and partitions at epoch 0.
func (hb *heartbeat) replaceMember(g *group, existing *member, memberID string) *member {
	repl := existing.clone()
	repl.id = memberID
	repl.epoch, repl.prevEpoch = 0, 0
	hb.recs = append(hb.recs,
		tombstone(records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: existing.id}),
		tombstone(records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: existing.id}),
		tombstone(records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: existing.id}),
		hb.m.memberMetadataRecord(g.id, repl),
		hb.m.targetRecord(g.id, repl.id, g.target[existing.id]),
		hb.m.currentRecord(g.id, repl),
	)
	return repl
}

// staticRejoin is a join at epoch 0 from member mb, which the coordinator
// holds, with instance id instanceID, where the release lets a static
// member back in (version.Profile.StaticRejoinOwnInstance, apache/kafka PR
// #23542): a member id keeps its instance id, so the join is mb itself
// coming back. After a temporary leave (-2) its epoch is reset and it is
// reconciled; otherwise it is taken back as a dynamic member is.
func (hb *heartbeat) staticRejoin(mb *member, instanceID string) (*member, error) {
	if mb.instanceID != instanceID {
		return nil, errorf(kerr.InvalidRequest, "Member %s cannot change its instance id from %q to %q.", mb.id, mb.instanceID, instanceID)
	}
	if mb.epoch == StaticLeaveEpoch {
		back := mb.clone()
		back.epoch, back.prevEpoch = 0, 0
		return back, nil
	}
	if err := hb.checkEpoch(mb); err != nil {
		return nil, err
	}
	return mb, nil
}

// checkEpoch is GMM.throwIfConsumerGroupMemberEpochIsInvalid.
func (hb *heartbeat) checkEpoch(mb *member) error {
	got := hb.req.MemberEpoch
	if got == JoinEpoch && hb.m.profile.RejoinWithEpochZero {
		return nil // KAFKA-19233: epoch 0 is always a rejoin.
	}
	if got > mb.epoch {
		return errorf(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, mb.epoch)
	}
	if got < mb.epoch {
		// The response with the new epoch may have been lost: accept the
		// previous epoch with a subset of the assigned partitions.
		if got != mb.prevEpoch || !isSubset(hb.req.Topics, mb.assigned) {
			return errorf(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", got, mb.epoch)
		}
	}
	return nil
}

// isSubset is GMM.isSubset: nil owned partitions are not a subset.
func isSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		ps, ok := a[t.TopicID]
		if !ok {
			return false
		}
		for _, p := range t.Partitions {
			if _, ok := ps[p]; !ok {
				return false
			}
		}
	}
	return true
}

// hasMetadataExpired stands in for ModernGroup.hasMetadataExpired. Kafka
// refreshes a group's metadata on its first heartbeat after creation or
// load (deadline 0) and whenever a metadata image changed one of the topics
// the group subscribes to (onMetadataUpdate: requestMetadataRefresh for
// groupsSubscribedToTopic); here the second case is detected by comparing
// each subscribed topic with what it was at the group's last heartbeat
// (markRefreshed). A subscription that changed without an epoch bump (a
// regex not resolved yet, or dropped before KAFKA-19891) does not expire
// the metadata, as it does not in Kafka. A group without regexes compares
// its stored metadata with the host's instead, as before regexes were
// modelled (the per-topic comparison changed mixed-group chaos runs on the
// embedded cluster; kept to regex groups until that is understood).
func (m *Manager) hasMetadataExpired(g *group, topics TopicMetadata) bool {
	seen, ok := m.refreshed[g.id]
	if !ok {
		return true
	}
	if len(g.resolved) == 0 && len(g.subscribedRegexes()) == 0 {
		names := keys(g.subscribedTopicNames(nil, nil))
		if m.profile.WritesPartitionMetadata {
			return !maps.Equal(m.subscriptionMetadata(topics, names), g.subscriptionMetadata)
		}
		return m.metadataHash(topics, names) != g.metadataHash
	}
	for n := range g.subscribedTopicNames(nil, nil) {
		if h, known := seen[n]; !known || h != m.metadataHash(topics, []string{n}) {
			return true
		}
	}
	return false
}

// markRefreshed records the subscribed topics of a group as the host's
// metadata has them now, after a heartbeat or a resolution.
func (m *Manager) markRefreshed(groupID string) {
	g, ok := m.rp.groups[groupID]
	if !ok {
		return
	}
	seen := map[string]int64{}
	for n := range g.subscribedTopicNames(nil, nil) {
		seen[n] = m.metadataHash(m.lastTopics, []string{n})
	}
	m.refreshed[groupID] = seen
}

// updateSubscriptionMetadata is GMM.updateSubscriptionMetadata: recompute
// the subscribed topics' metadata with the updated member, bump the group
// epoch if asked or if the metadata changed, and (4.1+) tombstone a legacy
// PartitionMetadata record.
func (hb *heartbeat) updateSubscriptionMetadata(g *group, bump bool, old, updated *member, numMembers int) (int32, assignor.SubscriptionType) {
	m := hb.m
	counts := g.subscribedTopicNames(old, updated)
	names := keys(counts)
	subType := subscriptionType(g.subscribedRegexesWith(old, updated), counts, numMembers)
	var hash int64
	if m.profile.WritesPartitionMetadata {
		meta := m.subscriptionMetadata(hb.topics, names)
		if !maps.Equal(meta, g.subscriptionMetadata) {
			bump = true
			hb.recs = append(hb.recs, m.partitionMetadataRecord(g.id, meta))
		}
	} else {
		hash = m.metadataHash(hb.topics, names)
		if hash != g.metadataHash {
			bump = true
		}
	}
	epoch := g.epoch
	if bump {
		epoch++
		hb.recs = append(hb.recs, m.epochRecord(g.id, epoch, hash))
	}
	if !m.profile.WritesPartitionMetadata && g.hasLegacyPartitionMetadata {
		hb.recs = append(hb.recs, tombstone(records.ConsumerGroupPartitionMetadataKey{GroupID: g.id}))
	}
	return epoch, subType
}

// subscriptionMetadata is ModernGroup.computeSubscriptionMetadata (4.0):
// the existing subscribed topics with their ids and partition counts.
func (m *Manager) subscriptionMetadata(topics TopicMetadata, names []string) map[string]topicMeta {
	out := map[string]topicMeta{}
	for _, n := range names {
		if id, parts, ok := topics.TopicByName(n); ok {
			out[n] = topicMeta{id: id, partitions: int32(parts)}
		}
	}
	return out
}

// preferredAssignor is the assignor the target would be computed with:
// the most requested one, else the default.
func (m *Manager) preferredAssignor(g *group, old, updated *member) string {
	if a := g.preferredServerAssignor(old, updated); a != "" {
		return a
	}
	return m.defaultAssignor()
}

// maybeUpdateTarget is GMM.updateTargetAssignment / maybeUpdateTargetAssignment
// with TargetAssignmentBuilder.build: when the group epoch is ahead of the
// assignment epoch (and, 4.3+, the assignment interval allows), run the
// preferred assignor over every member, write a target record for each
// member whose target changed, then the new assignment epoch.
func (hb *heartbeat) maybeUpdateTarget(g *group, groupEpoch int32, old, updated *member, subType assignor.SubscriptionType, nowMs int64) (int32, map[TopicID][]int32, error) {
	m := hb.m
	last := func() (int32, map[TopicID][]int32, error) {
		return g.assignmentEpoch, g.targetOf(updated.id, updated.instanceID), nil
	}
	if groupEpoch <= g.assignmentEpoch {
		return last()
	}
	if m.cfg.AssignmentInterval != nil {
		// GMM.canComputeNextTargetAssignment (KIP-1263).
		interval := m.cfg.AssignmentInterval.Milliseconds()
		if g.assignmentTimestampMs != 0 && interval != 0 && nowMs < g.assignmentTimestampMs+interval {
			return last()
		}
	}
	mine, recs, err := m.buildTarget(g, hb.topics, groupEpoch, old, updated, subType, nowMs)
	if err != nil {
		return 0, nil, err
	}
	hb.recs = append(hb.recs, recs...)
	return groupEpoch, mine, nil
}

// buildTarget is TargetAssignmentBuilder.build for groupEpoch: the member
// specs (the group's members, updated added or replacing old, and the
// static member updated replaces removed; each with its subscription
// resolved and its previous target), the preferred assignor's assignment
// of them, a target record for each member whose target changed, and the
// target metadata record. It returns updated's new target.
//
// Like Kafka's builder it does per member only what the member needs:
// members with the same subscription share its resolved topics (Kafka's
// CachedTopicResolver resolves each name once a build), a previous target
// is handed over as the group keeps it (recordTarget, as Kafka keeps the
// Assignment object) and put in Kafka's iteration order by the assignor
// only where that order matters (assignor.GroupSpec.RecordOrder), and a
// member whose target did not change is compared with the assignor's
// output in place (it shares the group's partitions).
func (m *Manager) buildTarget(g *group, topics TopicMetadata, groupEpoch int32, old, updated *member, subType assignor.SubscriptionType, nowMs int64) (map[TopicID][]int32, []records.Record, error) {
	name := m.preferredAssignor(g, old, updated)

	// TAB.build: the member specs start from the group's members, then the
	// updated member is added or replaced, and a static member it replaces
	// is removed.
	ids := g.memberIDs()
	prevTargetOf := updated.id // whose target is updated's previous one
	if updated.instanceID != "" {
		if prev, ok := g.staticMembers[updated.instanceID]; ok && prev != updated.id {
			prevTargetOf = prev
			ids = slices.DeleteFunc(ids, func(s string) bool { return s == prev })
		}
	}
	if !slices.Contains(ids, updated.id) {
		ids = append(ids, updated.id)
	}
	ids = assignor.JavaHashMapOrder(ids)

	if g.scratch == nil {
		g.scratch = &targetScratch{}
	}
	scratch := g.scratch
	if cap(scratch.specs) < len(ids) {
		scratch.specs = make([]assignor.MemberSpec, len(ids))
	}
	gs := assignor.GroupSpec{Subscription: subType, Members: scratch.specs[:len(ids)], RecordOrder: true}
	var counts assignor.PartitionCounts // made at the first subscription resolved
	var resolved subscriptionCache
	for i, id := range ids {
		mb, targetOf := g.members[id], id
		if id == updated.id {
			mb, targetOf = updated, prevTargetOf
		}
		ms := &gs.Members[i]
		ms.ID, ms.InstanceID, ms.RackID = id, mb.instanceID, mb.rackID
		ms.Topics = resolved.topics(g, mb, topics, &counts)
		ms.Assignment = g.recordTarget(targetOf)
	}
	// The counts are those of the subscribed topics: no assignor asks for
	// another (partitions of a previous target's topic nobody subscribes
	// to any more are dropped unread, as Kafka's builders drop them).
	a, ok := m.assignors[name]
	if !ok {
		// A member asked for it under another configuration (the log was
		// written by a broker with other group.consumer.assignors).
		return nil, nil, errorf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: assignor %q is not configured", groupEpoch, name)
	}
	if counts == nil {
		counts = assignor.PartitionCounts{}
	}
	var res assignor.GroupAssignment
	var err error
	if ia, ok := a.(assignor.IntoAssignor); ok {
		err = ia.AssignInto(gs, counts, &scratch.res)
		res = scratch.res
	} else {
		res, err = a.Assign(gs, counts)
	}
	if err != nil {
		return nil, nil, errorf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v", groupEpoch, err)
	}
	var mine map[TopicID][]int32
	var recs []records.Record
	for _, id := range ids {
		got := res.Members[id]
		prev, had := g.target[id]
		changed := !had || !sameAsTarget(got, prev)
		if !changed && id != updated.id {
			continue
		}
		// The assignor's partitions are ascending; they may share arrays
		// with the spec and each other, so the group keeps copies.
		next := make(map[TopicID][]int32, len(got))
		for _, tp := range got {
			next[tp.Topic] = slices.Clone(tp.Partitions)
		}
		if id == updated.id {
			mine = next
		}
		if changed {
			recs = append(recs, m.targetRecord(g.id, id, next))
		}
	}
	// Stamped with nowMs; shape drops the timestamp where the version does
	// not write it (version.Profile.AssignmentTimestamp).
	recs = append(recs, m.targetMetadataRecord(g.id, groupEpoch, nowMs))
	return mine, recs, nil
}

// targetScratch is the memory a group's target assignments reuse, one
// after the other (each is done with before the next begins): the member
// specs and the assignor's result (assignor.IntoAssignor). A group's copies
// share it.
type targetScratch struct {
	specs []assignor.MemberSpec
	res   assignor.GroupAssignment
}

// sameAsTarget reports whether the assignor's output for a member holds
// what its previous target holds, topic by topic.
func sameAsTarget(got assignor.MemberAssignment, prev map[TopicID][]int32) bool {
	if len(got) != len(prev) {
		return false
	}
	for _, tp := range got {
		ps, ok := prev[tp.Topic]
		if !ok || !same.Slice(ps, tp.Partitions) {
			return false
		}
	}
	return true
}

// subscriptionCache resolves members' subscriptions once per distinct
// subscription in one build: members that subscribe to the same names (and
// regex) share one resolved list, as Kafka's CachedTopicResolver resolves
// each name once a build.
type subscriptionCache []struct {
	names  []string
	regex  string
	topics []TopicID
}

// topics is mb's subscription as assignor.MemberSpec.Topics: the names in
// Java's HashSet order, then its regex's topics, resolved to ids (names
// that do not exist left out); the partition counts of the topics go into
// *counts (made at the first call).
func (c *subscriptionCache) topics(g *group, mb *member, md TopicMetadata, counts *assignor.PartitionCounts) []TopicID {
	for i := range *c {
		e := &(*c)[i]
		// Equal subscriptions are most often one slice (internSubscription).
		if e.regex == mb.regex && same.Slice(e.names, mb.subscribed) {
			// The next members with this subscription most likely share
			// this member's slice.
			e.names = mb.subscribed
			return e.topics
		}
	}
	names := g.memberTopics(mb)
	if *counts == nil {
		*counts = make(assignor.PartitionCounts, len(names))
	}
	var ids []TopicID
	for _, n := range names {
		if tid, parts, ok := md.TopicByName(n); ok {
			ids = append(ids, tid)
			(*counts)[tid] = parts
		}
	}
	*c = append(*c, struct {
		names  []string
		regex  string
		topics []TopicID
	}{mb.subscribed, mb.regex, ids})
	return ids
}

// subscriptionOf is the member's subscription as CAB sees it
// (CAB.subscribedTopicIds): its names, and the topics its regex resolved to
// (an unresolved regex matches nothing), as memberTopics lists them.
func (g *group) subscriptionOf(mb *member, topics TopicMetadata) subscription {
	s := subscription{topics: topics, member: mb}
	if mb.regex != "" {
		if r, ok := g.resolved[mb.regex]; ok {
			s.regex = r.topics
		}
	}
	return s
}

// responseAssignment is ConsumerGroupHeartbeatResponse.createAssignment,
// sorted so responses compare.
func responseAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	parts := partitionsOf(a)
	ids := make([]TopicID, 0, len(parts))
	for t := range parts {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, compareBytes)
	for _, t := range ids {
		tp := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		tp.TopicID = t
		tp.Partitions = parts[t]
		out.Topics = append(out.Topics, tp)
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
