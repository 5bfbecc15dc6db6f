package wire

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareFetch: v1–v2 (4.2+), when Config.ShareFetch is set; see
// share.go for the sessions and what is not modelled.
//
// As KafkaApis.handleShareFetchRequest: a missing group id, or a member
// id missing, empty or longer than 36 characters, is INVALID_REQUEST for
// the whole request (the member need not be in the group); v2 with IsRenewAck needs
// MaxBytes, MinBytes, MaxRecords and MaxWaitMs at 0 (INVALID_REQUEST) and
// fetches nothing; then the session (newContext), the piggy-backed
// acknowledgements (their outcome in each partition's
// AcknowledgeErrorCode), and the acquisition over the session's
// partitions, up to MaxRecords in all, starting at a partition that
// rotates with the session epoch. A fetch that acquires nothing waits up
// to MaxWaitMs for records to append or locks to lapse (DelayedShareFetch).
// Epoch -1 fetches nothing, then closes the session.
func (s *Server) handleShareFetch(req *kmsg.ShareFetchRequest, conn uint64) kmsg.Response {
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	s.mu.Lock()
	s.now()
	resp, ss, parts := s.shareFetchStart(req, conn)
	if ss == nil || req.ShareSessionEpoch == -1 || req.IsRenewAck {
		if ss != nil && req.ShareSessionEpoch == -1 {
			s.closeShareSession(*req.GroupID, *req.MemberID)
		}
		s.mu.Unlock()
		return resp
	}
	for {
		got := s.shareAcquire(resp, *req.GroupID, *req.MemberID, ss, parts, int(req.MaxRecords))
		wake := s.dataCh
		s.mu.Unlock()
		if got || !s.awaitData(wake, deadline) {
			return resp
		}
		s.mu.Lock()
		s.now()
		if s.share.sessions[shareSessionKey{*req.GroupID, *req.MemberID}] != ss {
			// The session was closed or replaced meanwhile: answer with
			// what was there.
			s.mu.Unlock()
			return resp
		}
	}
}

// shareFetchStart validates req, steps its session and applies its
// acknowledgements. A nil session means resp is the whole answer. parts
// are the partitions to acquire from.
func (s *Server) shareFetchStart(req *kmsg.ShareFetchRequest, conn uint64) (*kmsg.ShareFetchResponse, *shareSession, []shareTP) {
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	fail := func(e *kerr.Error, msg string) (*kmsg.ShareFetchResponse, *shareSession, []shareTP) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil, nil
	}
	switch msg := invalidShareIDs(req.GroupID, req.MemberID); {
	case msg != "":
		return fail(kerr.InvalidRequest, msg)
	case req.Version >= 2 && req.IsRenewAck && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0):
		return fail(kerr.InvalidRequest, "maxBytes, minBytes, maxRecords and maxWaitMs must be set to 0 if isRenewAck is true.")
	}
	group, member := *req.GroupID, *req.MemberID
	hasAcks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	ss, e := s.shareSessionFor(group, member, req.ShareSessionEpoch, conn, hasAcks)
	if e != nil {
		return fail(e, "")
	}
	resp.AcquisitionLockTimeoutMillis = int32(s.share.cfg.LockMs)
	var reqParts []shareTP
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := shareTP{t.TopicID, p.Partition}
			reqParts = append(reqParts, tp)
			if req.ShareSessionEpoch != -1 && !containsTP(ss.parts, tp) {
				ss.parts = append(ss.parts, tp)
			}
			if len(p.AcknowledgementBatches) == 0 {
				continue
			}
			bs := make([]ackBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				bs[i] = ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes}
			}
			ae, msg := s.shareAcknowledge(group, member, tp, bs, req.Version >= 2, req.IsRenewAck)
			sp := shareFetchPartition(resp, tp)
			if ae != nil {
				sp.AcknowledgeErrorCode = ae.Code
				if msg != "" {
					sp.AcknowledgeErrorMessage = &msg
				}
			}
		}
	}
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			ss.parts = deleteTP(ss.parts, shareTP{f.TopicID, p})
		}
	}
	if req.ShareSessionEpoch == 0 {
		for _, tp := range reqParts {
			shareFetchPartition(resp, tp)
		}
	}
	return resp, ss, ss.parts
}

// shareAcquire acquires up to maxRecords records for member over parts
// into resp and reports whether it got any.
func (s *Server) shareAcquire(resp *kmsg.ShareFetchResponse, group, member string, ss *shareSession, parts []shareTP, maxRecords int) bool {
	got := false
	n := len(parts)
	for i := range n {
		if maxRecords <= 0 {
			break
		}
		tp := parts[(i+int(ss.epoch))%n]
		p, e := s.sharePartition(group, tp)
		if e != nil {
			shareFetchPartition(resp, tp).ErrorCode = e.Code
			continue
		}
		acq := p.Acquire(member, maxRecords)
		if len(acq) == 0 {
			continue
		}
		got = true
		sp := shareFetchPartition(resp, tp)
		for _, a := range acq {
			maxRecords -= int(a.Last - a.First + 1)
			ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
			ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.DeliveryCount
			sp.AcquiredRecords = append(sp.AcquiredRecords, ar)
		}
		l := s.topicIDs[tp.id].partitions[tp.p].log
		sp.Records = l.readRange(acq[0].First, acq[len(acq)-1].Last)
	}
	s.flushShareState()
	return got
}

// shareFetchPartition returns resp's entry of tp, adding it.
func shareFetchPartition(resp *kmsg.ShareFetchResponse, tp shareTP) *kmsg.ShareFetchResponseTopicPartition {
	ti := -1
	for i := range resp.Topics {
		if resp.Topics[i].TopicID == tp.id {
			ti = i
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tp.id
		resp.Topics = append(resp.Topics, t)
		ti = len(resp.Topics) - 1
	}
	t := &resp.Topics[ti]
	for i := range t.Partitions {
		if t.Partitions[i].Partition == tp.p {
			return &t.Partitions[i]
		}
	}
	sp := kmsg.NewShareFetchResponseTopicPartition()
	sp.Partition = tp.p
	t.Partitions = append(t.Partitions, sp)
	return &t.Partitions[len(t.Partitions)-1]
}

func containsTP(tps []shareTP, tp shareTP) bool {
	for _, x := range tps {
		if x == tp {
			return true
		}
	}
	return false
}

func deleteTP(tps []shareTP, tp shareTP) []shareTP {
	out := tps[:0]
	for _, x := range tps {
		if x != tp {
			out = append(out, x)
		}
	}
	return out
}
