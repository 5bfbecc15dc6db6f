package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareAcknowledge: v1–v2 (4.2+), when Config.ShareFetch is set.
//
// As KafkaApis.handleShareAcknowledgeRequest: a missing group id or member
// id is INVALID_REQUEST; then the session (acknowledgeSessionUpdate:
// epoch 0 is INVALID_SHARE_SESSION_EPOCH, no session
// SHARE_SESSION_NOT_FOUND, -1 leaves the epoch, another epoch must be the
// session's and moves it on); each partition's acknowledgements are
// applied and answered with their error; at epoch -1 the session is then
// closed and the member's records released. v2 answers with the
// acquisition lock timeout.
func (s *Server) handleShareAcknowledge(req *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	fail := func(e *kerr.Error, msg string) kmsg.Response {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if msg := invalidShareIDs(req.GroupID, req.MemberID); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	group, member := *req.GroupID, *req.MemberID
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now()
	ss := s.share.sessions[shareSessionKey{group, member}]
	switch {
	case req.ShareSessionEpoch == 0:
		return fail(kerr.InvalidShareSessionEpoch, "")
	case ss == nil:
		return fail(kerr.ShareSessionNotFound, "")
	case req.ShareSessionEpoch != -1 && req.ShareSessionEpoch != ss.epoch:
		return fail(kerr.InvalidShareSessionEpoch, "")
	case req.ShareSessionEpoch != -1:
		ss.epoch = nextShareEpoch(ss.epoch)
	}
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(s.share.cfg.LockMs)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			bs := make([]ackBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				bs[i] = ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			if e, msg := s.shareAcknowledge(group, member, shareTP{t.TopicID, p.Partition}, bs, req.Version >= 2, req.IsRenewAck); e != nil {
				rp.ErrorCode = e.Code
				if msg != "" {
					rp.ErrorMessage = &msg
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == -1 {
		s.closeShareSession(group, member)
	}
	return resp
}
