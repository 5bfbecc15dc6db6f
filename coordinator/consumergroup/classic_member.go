package consumergroup

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// This file serves members that speak the classic protocol (JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup) inside a consumer group, the online
// migration path of KIP-848 (GMM.classicGroupJoinToConsumerGroup,
// classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
// classicGroupLeaveToConsumerGroup). Such a member is a ConsumerGroupMember
// with ClassicMemberMetadata: it is assigned and reconciled like any other
// member, its generation is its member epoch, and it learns that it must
// rejoin from REBALANCE_IN_PROGRESS instead of from a heartbeat response.
//
// Invariants, as for Heartbeat:
//  1. Records are computed from the state before the request, then
//     replayed at once; a failed request writes nothing.
//  2. Timers move only on success: the session timeout is the member's own
//     classic session timeout, the sync timeout (after a join) and the join
//     timeout (after REBALANCE_IN_PROGRESS) its rebalance timeout, and any
//     of them expiring fences it.
//  3. SyncGroup and Heartbeat write nothing.

// ConsumerProtocolType is the protocol type of the classic members a
// consumer group accepts (ConsumerProtocol.PROTOCOL_TYPE).
const ConsumerProtocolType = "consumer"

// ClassicJoin serves a JoinGroup to a consumer group that has members
// (GMM.classicGroupJoinToConsumerGroup, 4.4); the shell routes it here and
// has checked the group id and the session timeout. req.RebalanceTimeoutMillis
// must already be the session timeout for JoinGroup v0, as
// JoinGroupRequest does. The response version is the request's.
func (m *Manager) ClassicJoin(now time.Time, rc RequestContext, req *kmsg.JoinGroupRequest, topics TopicMetadata) (*kmsg.JoinGroupResponse, []records.Record) {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = req.Version
	hb := &heartbeat{m: m, now: now, rc: rc, topics: orEmpty(topics)}
	m.lastTopics = hb.topics
	if err := hb.classicJoin(req, resp); err != nil {
		out := kmsg.NewPtrJoinGroupResponse()
		out.Version = req.Version
		out.ErrorCode = codeOf(err)
		out.MemberID = resp.MemberID // MEMBER_ID_REQUIRED carries the new id
		return out, nil
	}
	if err := hb.apply(req.Group, "request"); err != nil {
		out := kmsg.NewPtrJoinGroupResponse()
		out.Version = req.Version
		out.ErrorCode = codeOf(err)
		return out, nil
	}
	return resp, hb.recs
}

// codeOf is the Kafka error code of a failure.
func codeOf(err error) int16 {
	var e *Error
	if errors.As(err, &e) {
		return e.Code.Code
	}
	return kerr.UnknownServerError.Code
}

// apply replays the records of this request (what: "request",
// "heartbeat", as the error names it) and runs what waits on them. Kafka
// fails the write with the IllegalStateException of its replay and rolls
// the shard back.
func (hb *heartbeat) apply(groupID, what string) error {
	if len(hb.recs) > 0 {
		if err := hb.m.applyAll(groupID, hb.recs); err != nil {
			return errorf(kerr.UnknownServerError, "replaying the records of this %s failed: %v", what, err)
		}
	}
	for _, f := range hb.after {
		f()
	}
	if hb.downgrade != nil {
		hb.recs = append(hb.recs, hb.downgrade()...)
	}
	return nil
}

func (hb *heartbeat) classicJoin(req *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse) error {
	m := hb.m
	g, ok := m.rp.groups[req.Group]
	if !ok {
		return errorf(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
	}
	// KAFKA-20640: the disabled policy keeps classic members out.
	if m.profile.ClassicJoinRefusedWhenMigrationDisabled && m.cfg.MigrationPolicy == MigrationDisabled {
		return errorf(kerr.InconsistentGroupProtocol, "Cannot join the consumer group %s with the classic protocol because the group migration is disabled.", g.id)
	}
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = m.newMemberID()
	}
	instanceID := deref(req.InstanceID)
	if err := m.throwIfGroupIsFull(g, memberID, instanceID); err != nil {
		return err
	}
	if !g.supportsClassicProtocols(req.ProtocolType, req.Protocols) {
		return errorf(kerr.InconsistentGroupProtocol, "Member %s's protocols are not supported.", memberID)
	}
	// JoinGroupRequest.requiresKnownMemberId: a dynamic member of v4+ comes
	// back with the id it is given.
	if unknown && req.InstanceID == nil && req.Version >= 4 {
		resp.MemberID = memberID
		return errorf(kerr.MemberIDRequired, "A dynamic member must rejoin with the member id %s.", memberID)
	}

	var mb *member
	if req.InstanceID == nil {
		// getOrMaybeSubscribeDynamicConsumerGroupMember: a classic member's
		// epoch is not checked.
		if mb = g.members[memberID]; mb == nil {
			mb = newMember(memberID)
		}
	} else {
		var err error
		if mb, err = hb.classicStaticMember(g, memberID, instanceID, unknown); err != nil {
			return err
		}
	}

	sub, err := decodeSubscription(req.Protocols, m.profile.MalformedJoinSubscriptionInconsistent)
	if err != nil {
		return err
	}
	updated := mb.withMetadata(instanceID, sub.Rack, req.RebalanceTimeoutMillis)
	updated.setSubscribed(sortedSet(sub.Topics))
	updated.regex = "" // classic members cannot subscribe by regex
	updated.clientID, updated.clientHost = hb.rc.ClientID, hb.rc.ClientHost
	updated.classic = &records.ClassicMemberMetadata{SessionTimeoutMs: req.SessionTimeoutMillis}
	for _, p := range req.Protocols {
		updated.classic.SupportedProtocols = append(updated.classic.SupportedProtocols, records.ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}

	// toTopicPartitions: owned partitions of topics that no longer exist
	// are left out.
	owned := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range sub.OwnedPartitions {
		id, _, ok := hb.topics.TopicByName(t.Topic)
		if !ok {
			continue
		}
		ot := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		ot.TopicID, ot.Partitions = id, slices.Clone(t.Partitions)
		owned = append(owned, ot)
	}
	// A classic static member replacing the last consumer-protocol member
	// downgrades the group (validateOnlineDowngradeWithReplacedMember).
	if replaced := g.staticMember(instanceID); replaced != nil {
		reconciled, down, err := hb.downgradeWithReplacedMember(g, replaced, mb, updated, owned)
		if err != nil {
			return err
		}
		if down {
			hb.classicJoinResponse(resp, reconciled)
			return nil
		}
	}
	reconciled, err := hb.update(g, mb, updated, owned)
	if err != nil {
		return err
	}

	groupID, rebalanceMs, sessionMs := g.id, req.RebalanceTimeoutMillis, req.SessionTimeoutMillis
	hb.after = append(hb.after, func() {
		delete(m.timers, timerKey{groupID, reconciled.id, joinTimer})
		m.scheduleSessionFor(hb.now, groupID, reconciled.id, sessionMs)
		m.scheduleClassic(hb.now, groupID, reconciled.id, syncTimer, rebalanceMs, false)
		m.markRefreshed(groupID)
	})
	hb.classicJoinResponse(resp, reconciled)
	return nil
}

// classicJoinResponse fills the JoinGroup response of a classic member of a
// consumer group: its id, its member epoch as generation, protocol type
// "consumer" and its first protocol; no leader, no member list.
func (hb *heartbeat) classicJoinResponse(resp *kmsg.JoinGroupResponse, reconciled *member) {
	resp.MemberID = reconciled.id
	resp.Generation = reconciled.epoch
	pt := ConsumerProtocolType
	resp.ProtocolType = &pt
	name := reconciled.classic.SupportedProtocols[0].Name
	resp.Protocol = &name
	resp.Members = []kmsg.JoinGroupResponseMember{}
}

// classicStaticMember is GMM.getOrMaybeSubscribeStaticConsumerGroupMember
// for a classic member: one that joins without a member id takes over the
// instance id whatever protocol its holder speaks (no
// UNRELEASED_INSTANCE_ID), one with a member id must be the holder.
func (hb *heartbeat) classicStaticMember(g *group, memberID, instanceID string, unknown bool) (*member, error) {
	existing := g.staticMember(instanceID)
	if !unknown {
		if err := throwIfStaticMemberIsUnknown(existing, instanceID); err != nil {
			return nil, err
		}
		if err := throwIfInstanceIDIsFenced(existing, memberID, instanceID); err != nil {
			return nil, err
		}
		return existing, nil
	}
	if existing == nil {
		if mb, ok := g.members[memberID]; ok {
			return mb, nil
		}
		return newMember(memberID), nil
	}
	repl := hb.replaceMember(g, existing, memberID)
	oldID := existing.id
	hb.after = append(hb.after, func() { hb.m.cancelTimers(g.id, oldID) })
	return repl, nil
}

// supportsClassicProtocols is ConsumerGroup.supportsClassicProtocols: the
// protocol type must be "consumer" and, once the group has classic
// members, one of the protocols must be supported by all of them.
func (g *group) supportsClassicProtocols(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType != ConsumerProtocolType {
		return false
	}
	if len(g.members) == 0 {
		return len(ps) > 0
	}
	numClassic := 0
	counts := map[string]int{}
	for _, mb := range g.members {
		if !mb.useClassicProtocol() {
			continue
		}
		numClassic++
		seen := map[string]bool{}
		for _, p := range mb.classic.SupportedProtocols {
			if !seen[p.Name] {
				seen[p.Name] = true
				counts[p.Name]++
			}
		}
	}
	for _, p := range ps {
		if counts[p.Name] == numClassic {
			return true
		}
	}
	return false
}

// decodeSubscription is GMM.deserializeSubscription: the first protocol's
// metadata as a ConsumerProtocolSubscription. A malformed one is
// INCONSISTENT_GROUP_PROTOCOL where the profile has
// MalformedJoinSubscriptionInconsistent (KAFKA-20662), and before it the
// UNKNOWN_SERVER_ERROR of the IllegalStateException Kafka threw. No
// protocols at all never get here (supportsClassicProtocols refuses them).
func decodeSubscription(ps []kmsg.JoinGroupRequestProtocol, inconsistent bool) (*kmsg.ConsumerMemberMetadata, error) {
	code := kerr.UnknownServerError
	if inconsistent {
		code = kerr.InconsistentGroupProtocol
	}
	var sub kmsg.ConsumerMemberMetadata
	if len(ps) == 0 || sub.ReadFrom(ps[0].Metadata) != nil {
		return nil, errorf(code, "Malformed embedded consumer protocol in subscription deserialization.")
	}
	return &sub, nil
}

// classicMember is GMM.validateConsumerGroupMember followed by
// throwIfMemberDoesNotUseClassicProtocol and throwIfGenerationIdUnmatched.
func (m *Manager) classicMember(groupID, memberID string, instanceID *string, generation int32) (*group, *member, error) {
	g, ok := m.rp.groups[groupID]
	if !ok {
		return nil, nil, errorf(kerr.UnknownMemberID, "Group %s is not a consumer group.", groupID)
	}
	var mb *member
	if instanceID == nil {
		if mb = g.members[memberID]; mb == nil {
			return nil, nil, errorf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, groupID)
		}
	} else {
		if mb = g.staticMember(*instanceID); mb == nil {
			return nil, nil, errorf(kerr.UnknownMemberID, "Member with instance id %s is not a member of group %s.", *instanceID, groupID)
		}
		if err := throwIfInstanceIDIsFenced(mb, memberID, *instanceID); err != nil {
			return nil, nil, err
		}
	}
	if !mb.useClassicProtocol() {
		return nil, nil, errorf(kerr.UnknownMemberID, "Member %s does not use the classic protocol.", memberID)
	}
	if generation != mb.epoch {
		return nil, nil, errorf(kerr.IllegalGeneration, "The member %s sent generation %d, but its epoch is %d.", memberID, generation, mb.epoch)
	}
	return g, mb, nil
}

// rejoinEpoch is the epoch a classic member must have caught up with: the
// assignment epoch from KAFKA-20272 (4.3), the group epoch before.
func (m *Manager) rejoinEpoch(g *group) int32 {
	if m.profile.ClassicRejoinOnNewAssignment {
		return g.assignmentEpoch
	}
	return g.epoch
}

// ClassicSync serves a SyncGroup of a classic member of a consumer group
// (GMM.classicGroupSyncToConsumerGroup). It writes nothing; the assignment
// is the member's assigned partitions, encoded with the ConsumerProtocol
// version of its first protocol. topics names the partitions.
func (m *Manager) ClassicSync(now time.Time, req *kmsg.SyncGroupRequest, topics TopicMetadata) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = req.Version
	g, mb, err := m.classicMember(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if err == nil {
		err = classicProtocolMatches(mb, req.ProtocolType, req.Protocol)
	}
	if err == nil && m.rejoinEpoch(g) > mb.epoch && mb.state != records.MemberUnrevokedPartitions {
		// throwIfRebalanceInProgress.
		m.scheduleClassic(now, g.id, mb.id, joinTimer, mb.rebalanceTimeoutMs, true)
		err = errorf(kerr.RebalanceInProgress, "A new rebalance is triggered in group %s and member %s should rejoin to catch up.", g.id, mb.id)
	}
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return resp
	}
	delete(m.timers, timerKey{g.id, mb.id, syncTimer})
	m.scheduleSessionFor(now, g.id, mb.id, mb.classic.SessionTimeoutMs)
	resp.ProtocolType = req.ProtocolType
	resp.Protocol = req.Protocol
	resp.MemberAssignment = classicAssignment(mb, orEmpty(topics))
	return resp
}

// classicProtocolMatches is GMM.throwIfClassicProtocolUnmatched: a protocol
// type or name the request carries must be "consumer" and the member's
// first protocol.
func classicProtocolMatches(mb *member, protocolType, protocolName *string) error {
	name := ""
	if len(mb.classic.SupportedProtocols) > 0 {
		name = mb.classic.SupportedProtocols[0].Name
	}
	if protocolType != nil && *protocolType != ConsumerProtocolType {
		return errorf(kerr.InconsistentGroupProtocol, "The protocol type %s from member %s request is not equal to the group protocol type %s.", *protocolType, mb.id, ConsumerProtocolType)
	}
	if protocolName != nil && *protocolName != name {
		return errorf(kerr.InconsistentGroupProtocol, "The protocol name %s from member %s request is not equal to the protocol name %s returned in the join response.", *protocolName, mb.id, name)
	}
	return nil
}

// classicAssignment is GMM.prepareAssignment: the assigned partitions (not
// those pending revocation) as a ConsumerProtocolAssignment of the version
// the member's first subscription was written with, capped at the highest
// version (ConsumerProtocol.serializeAssignment). Topics are in name order
// and partitions sorted; Kafka iterates a HashMap, which only changes the
// bytes, not what a client decodes.
func classicAssignment(mb *member, topics TopicMetadata) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	if ps := mb.classic.SupportedProtocols; len(ps) > 0 && len(ps[0].Metadata) >= 2 {
		a.Version = int16(ps[0].Metadata[0])<<8 | int16(ps[0].Metadata[1])
	}
	a.Version = min(max(a.Version, 0), 3)
	byName := map[string][]int32{}
	for t, ps := range partitionsOf(mb.assigned) {
		if name, _, ok := topics.TopicByID(t); ok {
			byName[name] = ps
		}
	}
	for _, name := range keys(byName) {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic, at.Partitions = name, byName[name]
		a.Topics = append(a.Topics, at)
	}
	return a.AppendTo(nil)
}

// ClassicHeartbeat serves a Heartbeat of a classic member of a consumer
// group (GMM.classicGroupHeartbeatToConsumerGroup): it refreshes the
// session and answers REBALANCE_IN_PROGRESS, arming the join timeout, when
// the member must rejoin: its epoch is behind (see rejoinEpoch), it has
// partitions to revoke, or the partitions it waits for are free.
func (m *Manager) ClassicHeartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	g, mb, err := m.classicMember(req.Group, req.MemberID, req.InstanceID, req.Generation)
	if err != nil {
		resp.ErrorCode = codeOf(err)
		return resp
	}
	m.scheduleSessionFor(now, g.id, mb.id, mb.classic.SessionTimeoutMs)
	if mb.epoch < m.rejoinEpoch(g) ||
		mb.state == records.MemberUnrevokedPartitions ||
		(mb.state == records.MemberUnreleasedPartitions && !g.waitingOnUnreleasedPartition(mb)) {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		m.scheduleClassic(now, g.id, mb.id, joinTimer, mb.rebalanceTimeoutMs, true)
	}
	return resp
}

// waitingOnUnreleasedPartition is ConsumerGroup.waitingOnUnreleasedPartition:
// a partition of the member's target that it does not hold is still owned
// by another member.
func (g *group) waitingOnUnreleasedPartition(mb *member) bool {
	if mb.state != records.MemberUnreleasedPartitions {
		return false
	}
	for t, ps := range g.target[mb.id] {
		for _, p := range ps {
			if !mb.assigned.has(t, p) && g.currentPartitionEpoch(t, p) != -1 {
				return true
			}
		}
	}
	return false
}

// ClassicLeave serves a LeaveGroup to a consumer group
// (GMM.classicGroupLeaveToConsumerGroup): every member named (by member id,
// or by instance id; an admin removal by instance id alone skips the
// fencing check) is fenced with one group epoch bump. Members of either
// protocol may be removed this way.
func (m *Manager) ClassicLeave(now time.Time, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, []records.Record) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version
	g, ok := m.rp.groups[req.Group]
	if !ok {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	identities := req.Members
	if req.Version < 3 {
		// LeaveGroup v0–2 names one member by id.
		id := kmsg.NewLeaveGroupRequestMember()
		id.MemberID = req.MemberID
		identities = []kmsg.LeaveGroupRequestMember{id}
	}
	var leaving []*member
	for _, id := range identities {
		r := kmsg.NewLeaveGroupResponseMember()
		r.MemberID, r.InstanceID = id.MemberID, id.InstanceID
		var mb *member
		switch {
		case id.InstanceID == nil:
			if mb = g.members[id.MemberID]; mb == nil {
				r.ErrorCode = kerr.UnknownMemberID.Code
			}
		default:
			if mb = g.staticMember(*id.InstanceID); mb == nil {
				r.ErrorCode = kerr.UnknownMemberID.Code
			} else if id.MemberID != "" && mb.id != id.MemberID {
				r.ErrorCode = kerr.FencedInstanceID.Code
				mb = nil
			}
		}
		if mb != nil {
			leaving = append(leaving, mb)
		}
		resp.Members = append(resp.Members, r)
	}
	if req.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	if len(leaving) == 0 {
		return resp, nil
	}
	recs, downgrade := m.fenceMembers(g, leaving)
	if err := m.applyAll(g.id, recs); err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	for _, mb := range leaving {
		m.cancelTimers(g.id, mb.id)
	}
	if downgrade != nil {
		recs = append(recs, downgrade()...)
	}
	return resp, recs
}
