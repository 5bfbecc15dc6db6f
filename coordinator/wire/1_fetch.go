package wire

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch: v4 to v17 (v18 from 4.1).
//
// Sessionless: every fetch is a full fetch and the answer carries session
// id 0, which tells the client that no session was made (KIP-227,
// FetchManager with a full request and no slot free). A request naming a
// session id this server never gave out gets FETCH_SESSION_ID_NOT_FOUND,
// as Kafka answers for an unknown session.
//
// Like Kafka's DelayedFetch, a fetch that finds fewer than MinBytes waits
// up to MaxWaitMillis for an append, so an idle consumer does not spin.
// One replica, no transactions: the high watermark and the last stable
// offset are the log end; the log start is 0 (no retention here).
// v12+ with a CurrentLeaderEpoch above ours gets UNKNOWN_LEADER_EPOCH,
// offsets outside [0, high watermark] get OFFSET_OUT_OF_RANGE.
func (s *Server) handleFetch(req *kmsg.FetchRequest) kmsg.Response {
	deadline := time.Now().Add(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	for {
		s.mu.Lock()
		resp, size, failed := s.fetchOnce(req)
		wake := s.dataCh
		s.mu.Unlock()
		// Any error answers at once, as DelayedFetch completes on one.
		if size >= int(req.MinBytes) || req.MaxWaitMillis <= 0 || failed {
			return resp
		}
		if !s.awaitData(wake, deadline) {
			return resp
		}
	}
}

// awaitData waits until a produce appends (wake closes), deadline passes
// or the server closes, and reports whether the caller should read again
// (only on an append).
func (s *Server) awaitData(wake <-chan struct{}, deadline time.Time) bool {
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-wake:
		return true
	case <-t.C:
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) fetchOnce(req *kmsg.FetchRequest) (resp *kmsg.FetchResponse, size int, failed bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	if req.Version >= 7 && req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, 0, true
	}
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 1<<31 - 1
	}
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t := s.topicOf(req.Version, rt.Topic, rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			switch l, err := t.logFor(rp.Partition, rp.CurrentLeaderEpoch); {
			case t == nil && req.Version >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case err != nil:
				sp.ErrorCode = err.Code
			default:
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = l.next, l.next, 0
				if rp.FetchOffset < 0 || rp.FetchOffset > l.next {
					sp.ErrorCode = kerr.OffsetOutOfRange.Code
					break
				}
				limit := min(rp.PartitionMaxBytes, maxBytes-int32(size))
				if limit <= 0 && size > 0 {
					break // the response is full; the client asks again
				}
				sp.RecordBatches = l.read(rp.FetchOffset, max(limit, 1))
				size += len(sp.RecordBatches)
			}
			if sp.ErrorCode != 0 {
				failed = true
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
				if t != nil && sp.ErrorCode == kerr.OffsetOutOfRange.Code {
					l := t.partitions[rp.Partition].log
					sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = l.next, l.next, 0
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, size, failed
}
