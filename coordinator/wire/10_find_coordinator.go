package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator: v0 to v6; v4+ batches keys (KIP-699).
//
// This node coordinates every group (key type 0). Transactions (key type
// 1) are not served: there is no transaction coordinator, so the answer is
// COORDINATOR_NOT_AVAILABLE, which a client retries and then reports.
// Share-partition keys (type 2) are this node's with Config.ShareFetch
// (it is the share coordinator too); without it they and unknown types
// are INVALID_REQUEST, as a 4.x broker without share groups answers. v0–v3 answer the one key at the top
// level; v4+ answer each key in Coordinators.
func (s *Server) handleFindCoordinator(req *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	answer := func(key string) kmsg.FindCoordinatorResponseCoordinator {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		switch {
		case req.CoordinatorType == 0, req.CoordinatorType == 2 && s.cfg.ShareFetch:
			c.NodeID, c.Host, c.Port = s.cfg.NodeID, s.host, s.port
		case req.CoordinatorType == 1:
			c.NodeID, c.Port = -1, -1
			c.ErrorCode = kerr.CoordinatorNotAvailable.Code
			msg := "this embedded server has no transaction coordinator"
			c.ErrorMessage = &msg
		default:
			c.NodeID, c.Port = -1, -1
			c.ErrorCode = kerr.InvalidRequest.Code
		}
		return c
	}
	if req.Version <= 3 {
		c := answer(req.CoordinatorKey)
		resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
		resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
		return resp
	}
	for _, k := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, answer(k))
	}
	return resp
}
