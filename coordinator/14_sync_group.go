package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSyncGroup serves SyncGroup (key 14): KafkaApis.handleSyncGroupRequest,
// then GroupCoordinatorService.syncGroup and GMM.classicGroupSync →
// classicGroupSyncToClassicGroup (4.4).
//
// From v5 on, ProtocolType and ProtocolName are mandatory (KIP-559): a v5+
// request without either is answered INCONSISTENT_GROUP_PROTOCOL by
// KafkaApis.handleSyncGroupRequest (SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent),
// before authorization and before the group coordinator sees it, so even
// ahead of the empty group id's INVALID_GROUP_ID. The check is in KafkaApis
// on every branch from 4.0 to 4.4.
//
// In CompletingRebalance every SyncGroup is parked; the leader's carries the
// assignment, which is stored with one GroupMetadata record, and then every
// parked member gets its part and the group is Stable. A SyncGroup to a
// consumer group with members (the mixed path) goes to the consumer-group
// engine's ClassicMembers; without it, or to an empty consumer group, it is
// answered UNKNOWN_MEMBER_ID.
func (c *Coordinator) handleSyncGroup(req *kmsg.SyncGroupRequest) (kmsg.Response, error) {
	fail := func(err *kerr.Error) (kmsg.Response, error) {
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if req.Version >= 5 && (req.ProtocolType == nil || req.Protocol == nil) {
		return fail(kerr.InconsistentGroupProtocol)
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	if info, ok := c.consumer.Lookup(req.Group); ok {
		cm, ok := c.consumer.(ClassicMembers)
		if !ok || info.Empty {
			return fail(kerr.UnknownMemberID)
		}
		return cm.ClassicSync(c.nowTime(), c.cfg.Topics, req), nil
	}
	g := c.classic[req.Group]
	if g == nil || g.in(Empty) {
		return fail(kerr.UnknownMemberID)
	}
	if err := c.validateSyncGroup(g, req); err != nil {
		return fail(err)
	}
	switch g.state {
	case PreparingRebalance:
		return fail(kerr.RebalanceInProgress)
	case CompletingRebalance:
		m := g.member(req.MemberID)
		m.awaitingSync = c.park(req.Version)
		c.removePendingSyncMember(g, req.MemberID)
		if !g.isLeader(req.MemberID) {
			return nil, nil
		}
		assignment := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			assignment[a.MemberID] = a.MemberAssignment
		}
		for id := range g.members.vals {
			if _, ok := assignment[id]; !ok {
				assignment[id] = []byte{}
			}
		}
		c.write(c.groupMetadataRecord(g, assignment), false)
		// The append succeeded (see Coordinator): store and propagate.
		c.setAndPropagateAssignment(g, assignment)
		g.transitionTo(Stable, c.now)
		return nil, nil
	case Stable:
		c.removePendingSyncMember(g, req.MemberID)
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ProtocolType = cloneStr(g.protocolType)
		resp.Protocol = cloneStr(g.protocolName)
		resp.MemberAssignment = g.member(req.MemberID).assignment
		return resp, nil
	}
	return fail(kerr.CoordinatorNotAvailable)
}

// validateSyncGroup is GMM.validateSyncGroup. Protocol type and name are
// checked only when the request carries them (isProtocolInconsistent): v4
// and older have neither field, and v5+ without them never gets here
// (handleSyncGroup).
func (c *Coordinator) validateSyncGroup(g *classicGroup, req *kmsg.SyncGroupRequest) *kerr.Error {
	if g.in(Dead) {
		return kerr.CoordinatorNotAvailable
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return asKerr(err)
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	if inconsistent(req.ProtocolType, g.protocolType) || inconsistent(req.Protocol, g.protocolName) {
		return kerr.InconsistentGroupProtocol
	}
	return nil
}

// inconsistent is GMM.isProtocolInconsistent.
func inconsistent(got, want *string) bool {
	return got != nil && (want == nil || *got != *want)
}
