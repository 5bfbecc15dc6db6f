package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleHeartbeat serves Heartbeat (key 12): GroupCoordinatorService.heartbeat
// then GMM.classicGroupHeartbeat → classicGroupHeartbeatToClassicGroup (4.4).
// A heartbeat keeps the member's session alive in every state but Empty;
// during PreparingRebalance it also tells the member to rejoin. Heartbeats
// to a consumer group go to the consumer-group engine's ClassicMembers
// (classicGroupHeartbeatToConsumerGroup); without it they get
// UNKNOWN_MEMBER_ID.
func (c *Coordinator) handleHeartbeat(req *kmsg.HeartbeatRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrHeartbeatResponse()
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	if _, ok := c.consumer.Lookup(req.Group); ok {
		if cm, ok := c.consumer.(ClassicMembers); ok {
			return cm.ClassicHeartbeat(c.nowTime(), req), nil
		}
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	g := c.classic[req.Group]
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	if g.in(Dead) {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		resp.ErrorCode = asKerr(err).Code
		return resp, nil
	}
	if req.Generation != g.generation {
		resp.ErrorCode = kerr.IllegalGeneration.Code
		return resp, nil
	}
	m := g.member(req.MemberID)
	switch g.state {
	case Empty:
		resp.ErrorCode = kerr.UnknownMemberID.Code
	case PreparingRebalance:
		c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	default:
		c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
	}
	return resp, nil
}
