package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleLeaveGroup serves LeaveGroup (key 13): GroupCoordinatorService.leaveGroup
// then GMM.classicGroupLeave → classicGroupLeaveToClassicGroup (4.4).
//
// From v3 a request names several members (KIP-345); a member named by
// instance id only (member id "") is removed by an administrator. v0–v2
// name one member at the top level and get its error there
// (LeaveGroupRequest.members, LeaveGroupResponse for old versions). A
// LeaveGroup to a consumer group goes to the consumer-group engine's
// ClassicMembers (classicGroupLeaveToConsumerGroup); without it its members
// get UNKNOWN_MEMBER_ID.
func (c *Coordinator) handleLeaveGroup(req *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrLeaveGroupResponse()
	members := req.Members
	if req.Version < 3 {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{m}
	}
	finish := func() (kmsg.Response, error) {
		if req.Version < 3 {
			if resp.ErrorCode == 0 && len(resp.Members) == 1 {
				resp.ErrorCode = resp.Members[0].ErrorCode
			}
			resp.Members = nil
		}
		return resp, nil
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return finish()
	}
	if _, ok := c.consumer.Lookup(req.Group); ok {
		if cm, ok := c.consumer.(ClassicMembers); ok {
			out, recs := cm.ClassicLeave(c.nowTime(), req)
			c.written = append(c.written, recs...)
			return out, nil
		}
	}
	g := c.classic[req.Group]
	if g == nil {
		// GroupCoordinatorService maps the group's absence to
		// UNKNOWN_MEMBER_ID for every member.
		for _, m := range members {
			resp.Members = append(resp.Members, leaveResult(m, kerr.UnknownMemberID))
		}
		return finish()
	}
	if g.in(Dead) {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return finish()
	}
	removed := 0
	for _, m := range members {
		switch {
		case m.MemberID == "":
			id, ok := "", false
			if m.InstanceID != nil {
				id, ok = g.staticMembers[*m.InstanceID]
			}
			if !ok {
				resp.Members = append(resp.Members, leaveResult(m, kerr.UnknownMemberID))
				continue
			}
			c.removeCurrentMember(g, id)
		case g.pendingJoin[m.MemberID]:
			g.remove(m.MemberID)
			c.timers.cancel(heartbeatKey(g.id, m.MemberID))
		default:
			if err := g.validateMember(m.MemberID, m.InstanceID); err != nil {
				resp.Members = append(resp.Members, leaveResult(m, asKerr(err)))
				continue
			}
			c.removeCurrentMember(g, m.MemberID)
		}
		removed++
		resp.Members = append(resp.Members, leaveResult(m, nil))
	}
	if removed > 0 {
		switch g.state {
		case Stable, CompletingRebalance:
			c.maybePrepareRebalanceOrCompleteJoin(g)
		case PreparingRebalance:
			c.maybeCompleteJoinPhase(g)
		}
	}
	return finish()
}

func leaveResult(m kmsg.LeaveGroupRequestMember, err *kerr.Error) kmsg.LeaveGroupResponseMember {
	r := kmsg.NewLeaveGroupResponseMember()
	r.MemberID = m.MemberID
	r.InstanceID = cloneStr(m.InstanceID)
	if err != nil {
		r.ErrorCode = err.Code
	}
	return r
}

// removeCurrentMember is GMM.removeCurrentMemberFromClassicGroup: a parked
// join is answered UNKNOWN_MEMBER_ID before the member goes.
func (c *Coordinator) removeCurrentMember(g *classicGroup, memberID string) {
	m := g.member(memberID)
	c.timers.cancel(heartbeatKey(g.id, memberID))
	c.answerJoinError(g, m, "", kerr.UnknownMemberID)
	g.remove(memberID)
}
