package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// handleJoinGroup serves JoinGroup (key 11): GroupCoordinatorService.joinGroup
// then GroupMetadataManager.classicGroupJoin → classicGroupJoinToClassicGroup
// (4.4). A join to a non-empty consumer group is the mixed path
// (classicGroupJoinToConsumerGroup), which the consumer-group engine serves
// when it implements ClassicMembers; an engine that does not answers
// INCONSISTENT_GROUP_PROTOCOL.
func (c *Coordinator) handleJoinGroup(client Client, req *kmsg.JoinGroupRequest) (kmsg.Response, error) {
	fail := func(memberID string, err *kerr.Error) (kmsg.Response, error) {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.MemberID = memberID
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if req.Group == "" {
		return fail(req.MemberID, kerr.InvalidGroupID)
	}
	if int64(req.SessionTimeoutMillis) < c.cfg.MinSessionTimeout.Milliseconds() ||
		int64(req.SessionTimeoutMillis) > c.cfg.MaxSessionTimeout.Milliseconds() {
		return fail(req.MemberID, kerr.InvalidSessionTimeout)
	}
	// JoinGroupRequest: version 0 has no rebalance timeout; the session
	// timeout stands in for it.
	rebalanceTimeout := req.RebalanceTimeoutMillis
	if req.Version == 0 {
		rebalanceTimeout = req.SessionTimeoutMillis
	}
	if c.share[req.Group] != nil {
		// GMM.classicGroupJoin: a group that exists and is neither a
		// consumer nor a classic group (4.2–4.4).
		return fail("", kerr.InconsistentGroupProtocol)
	}
	var tombs []records.Record
	if info, ok := c.consumer.Lookup(req.Group); ok {
		if !info.Empty {
			cm, ok := c.consumer.(ClassicMembers)
			if !ok {
				return fail("", kerr.InconsistentGroupProtocol)
			}
			r := *req
			r.RebalanceTimeoutMillis = rebalanceTimeout
			resp, recs := cm.ClassicJoin(c.nowTime(), client, c.cfg.Topics, &r)
			c.written = append(c.written, recs...)
			return resp, nil
		}
		// An empty consumer group becomes a classic group
		// (GMM.maybeDeleteEmptyConsumerGroup): it is removed at once, and its
		// tombstones are put in the request's records, which reach the log
		// only on the path that writes the new group's empty GroupMetadata
		// (below). A join with a member id finds no classic group and is
		// answered UNKNOWN_MEMBER_ID with EMPTY_RESULT: the consumer group is
		// gone from the coordinator, but its tombstones are never written
		// (seen on 4.4.0: testdata/consumer/mixed_empty_conversion_unknown_member.txt).
		recs, err := c.consumer.Delete(req.Group)
		if err != nil {
			return fail(req.MemberID, kerr.InconsistentGroupProtocol)
		}
		tombs = recs
	}

	unknown := req.MemberID == ""
	g := c.classic[req.Group]
	isNew := g == nil
	if g == nil {
		if !unknown {
			return fail(req.MemberID, kerr.UnknownMemberID)
		}
		g = newClassicGroup(req.Group, c.now)
		c.classic[req.Group] = g
	}
	before := len(c.written)
	ps := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		ps[i] = protocol{name: p.Name, metadata: p.Metadata}
	}
	j := joinRequest{client: client, req: req, protocols: ps, rebalanceTimeout: rebalanceTimeout, join: c.park(req.Version)}
	switch {
	case !c.acceptJoiningMember(g, req.MemberID):
		g.remove(req.MemberID)
		c.complete(j.join, joinError("", kerr.GroupMaxSizeReached))
	case unknown:
		c.joinNewMember(g, j)
	default:
		c.joinExistingMember(g, j)
	}
	if isNew && len(c.written) == before {
		// A new group must reach the log even if nothing else was written,
		// after the tombstones of the consumer group it replaces.
		c.written = append(c.written, tombs...)
		c.write(c.emptyGroupMetadataRecord(g), false)
	}
	return nil, nil
}

// joinRequest is one JoinGroup with what the handlers derive from it.
type joinRequest struct {
	client           Client
	req              *kmsg.JoinGroupRequest
	protocols        []protocol
	rebalanceTimeout int32
	join             parked
}

func joinError(memberID string, err *kerr.Error) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.MemberID = memberID
	resp.ErrorCode = err.Code
	return resp
}

// joinNewMember is GMM.classicGroupJoinNewMember.
func (c *Coordinator) joinNewMember(g *classicGroup, j joinRequest) {
	if g.in(Dead) {
		c.complete(j.join, joinError("", kerr.CoordinatorNotAvailable))
		return
	}
	if !g.supportsProtocols(j.req.ProtocolType, j.protocols) {
		c.complete(j.join, joinError("", kerr.InconsistentGroupProtocol))
		return
	}
	// ClassicGroup.generateMemberId: instance id or client id, "-", UUID.
	prefix := j.client.ID
	if j.req.InstanceID != nil {
		prefix = *j.req.InstanceID
	}
	newID := prefix + "-" + c.ids.NewID()
	if j.req.InstanceID != nil {
		if existing, ok := g.staticMembers[*j.req.InstanceID]; ok {
			c.updateStaticMemberThenRebalanceOrCompleteJoin(g, j, existing, newID)
			return
		}
		c.addMemberThenRebalanceOrCompleteJoin(g, j, newID)
		return
	}
	// JoinGroupRequest.requiresKnownMemberId: v4+ hands out the id first
	// (KIP-394) and waits a session timeout for the member to come back.
	if j.req.Version >= 4 {
		g.pendingJoin[newID] = true
		group := g.id
		c.timers.schedule(heartbeatKey(group, newID), c.now+int64(j.req.SessionTimeoutMillis), func() {
			c.expireHeartbeat(group, newID)
		})
		c.complete(j.join, joinError(newID, kerr.MemberIDRequired))
		return
	}
	c.addMemberThenRebalanceOrCompleteJoin(g, j, newID)
}

// joinExistingMember is GMM.classicGroupJoinExistingMember.
func (c *Coordinator) joinExistingMember(g *classicGroup, j joinRequest) {
	memberID := j.req.MemberID
	if g.in(Dead) {
		c.complete(j.join, joinError(memberID, kerr.CoordinatorNotAvailable))
		return
	}
	if !g.supportsProtocols(j.req.ProtocolType, j.protocols) {
		c.complete(j.join, joinError(memberID, kerr.InconsistentGroupProtocol))
		return
	}
	if g.pendingJoin[memberID] {
		if j.req.InstanceID != nil {
			// A pending member is never static: Kafka throws
			// IllegalStateException, which the service answers as
			// UNKNOWN_SERVER_ERROR with no member id.
			c.complete(j.join, joinError("", kerr.UnknownServerError))
			return
		}
		c.addMemberThenRebalanceOrCompleteJoin(g, j, memberID)
		return
	}
	if err := g.validateMember(memberID, j.req.InstanceID); err != nil {
		c.complete(j.join, joinError(memberID, asKerr(err)))
		return
	}
	m := g.member(memberID)
	switch g.state {
	case PreparingRebalance:
		c.updateMemberThenRebalanceOrCompleteJoin(g, m, j)
	case CompletingRebalance:
		if m.matches(j.protocols) {
			// A lost JoinGroup response: answer with the current generation.
			resp := c.joinResponse(g, memberID)
			if g.isLeader(memberID) {
				resp.Members = c.currentMembers(g)
			}
			c.complete(j.join, resp)
			return
		}
		c.updateMemberThenRebalanceOrCompleteJoin(g, m, j)
	case Stable:
		if g.isLeader(memberID) || !m.matches(j.protocols) {
			// The leader's join always rebalances: it is how a leader
			// reacts to changes the metadata does not show.
			c.updateMemberThenRebalanceOrCompleteJoin(g, m, j)
			return
		}
		c.complete(j.join, c.joinResponse(g, memberID))
	default:
		// Empty: the member must reset its generation and rejoin.
		c.complete(j.join, joinError(memberID, kerr.UnknownMemberID))
	}
}

// updateMemberThenRebalanceOrCompleteJoin is the GMM method of that name.
func (c *Coordinator) updateMemberThenRebalanceOrCompleteJoin(g *classicGroup, m *classicMember, j joinRequest) {
	g.updateMember(m, j.protocols, j.rebalanceTimeout, j.req.SessionTimeoutMillis, j.join)
	c.maybePrepareRebalanceOrCompleteJoin(g)
}

// addMemberThenRebalanceOrCompleteJoin is the GMM method of that name. A new
// member's session is the new-member join timeout until its first join
// completes, since it cannot heartbeat while its JoinGroup is parked.
func (c *Coordinator) addMemberThenRebalanceOrCompleteJoin(g *classicGroup, j joinRequest, memberID string) {
	m := &classicMember{
		id:                 memberID,
		instanceID:         cloneStr(j.req.InstanceID),
		clientID:           j.client.ID,
		clientHost:         j.client.Host,
		rebalanceTimeoutMs: j.rebalanceTimeout,
		sessionTimeoutMs:   j.req.SessionTimeoutMillis,
		protocolType:       j.req.ProtocolType,
		protocols:          j.protocols,
		assignment:         []byte{},
		isNew:              true,
	}
	if g.in(PreparingRebalance) && g.previousState == Empty {
		g.newMemberAdded = true
	}
	g.add(m, j.join)
	c.rescheduleHeartbeat(g, m, c.cfg.NewMemberJoinTimeout.Milliseconds())
	c.maybePrepareRebalanceOrCompleteJoin(g)
}

// updateStaticMemberThenRebalanceOrCompleteJoin is the GMM method of that
// name: a static member that rejoins without its member id replaces its
// old incarnation (KIP-345); the old id is fenced from now on.
func (c *Coordinator) updateStaticMemberThenRebalanceOrCompleteJoin(g *classicGroup, j joinRequest, oldID, newID string) {
	currentLeader := cloneStr(g.leader)
	old, m := g.replaceStaticMember(*j.req.InstanceID, oldID, newID)
	// ClassicGroup.replaceStaticMember fences whatever the old member had
	// parked.
	if old.awaitingJoin.waiting() {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.MemberID = oldID
		resp.Members = []kmsg.JoinGroupResponseMember{}
		resp.ErrorCode = kerr.FencedInstanceID.Code
		c.complete(old.awaitingJoin, resp)
	}
	if old.awaitingSync.waiting() {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.MemberAssignment = []byte{}
		resp.ErrorCode = kerr.FencedInstanceID.Code
		c.complete(old.awaitingSync, resp)
	}
	c.timers.cancel(heartbeatKey(g.id, oldID))
	c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
	g.updateMember(m, j.protocols, j.rebalanceTimeout, j.req.SessionTimeoutMillis, j.join)

	switch g.state {
	case Stable:
		if g.protocolName != nil && *g.protocolName == g.selectProtocol() {
			// Same protocol: persist the new member id, no rebalance.
			c.write(c.groupMetadataRecord(g, g.groupAssignment()), false)
			var resp *kmsg.JoinGroupResponse
			if j.req.Version >= 9 {
				// JoinGroupRequest.supportsSkippingAssignment (KIP-814): a
				// static leader gets the members but need not reassign.
				resp = c.joinResponse(g, newID)
				if g.isLeader(newID) {
					resp.Members = c.currentMembers(g)
					resp.SkipAssignment = true
				}
			} else {
				resp = c.joinResponse(g, newID)
				resp.LeaderID = ""
				if currentLeader != nil {
					resp.LeaderID = *currentLeader
				}
			}
			p := m.awaitingJoin
			g.updateMember(m, m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs, parked{})
			c.complete(p, resp)
			return
		}
		c.maybePrepareRebalanceOrCompleteJoin(g)
	case CompletingRebalance:
		// The leader may already hold the old member id; only a new
		// rebalance gives the new id an assignment.
		c.prepareRebalance(g)
	default:
		c.maybeCompleteJoinPhase(g)
	}
}
