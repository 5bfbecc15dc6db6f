package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// ListOffsets: v1 to v10 (v11 from 4.2).
//
// Timestamp -1 (latest) is the high watermark, -2 (earliest) and -4
// (earliest local, KIP-1005) the log start, 0, -5 (earliest pending upload,
// tiered storage) likewise. -3 (max timestamp, KIP-734) and a real
// timestamp are answered at batch granularity: the first batch whose max
// timestamp reaches it (Kafka finds the exact record). The leader epoch is
// always 0: one node that never changes leader.
//
// Called with s.mu held (Server.handle).
func (s *Server) handleListOffsets(req *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		t := s.topics[rt.Topic]
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			switch l, err := t.logFor(rp.Partition, rp.CurrentLeaderEpoch); {
			case err != nil:
				sp.ErrorCode = err.Code
			default:
				sp.LeaderEpoch = 0
				switch rp.Timestamp {
				case -1:
					sp.Offset = l.next
				case -2, -4, -5:
					sp.Offset = 0
				case -3:
					var best *storedBatch
					for i := range l.batches {
						if best == nil || l.batches[i].maxTimestamp > best.maxTimestamp {
							best = &l.batches[i]
						}
					}
					if best == nil {
						sp.Offset, sp.Timestamp = -1, -1
					} else {
						sp.Offset, sp.Timestamp = best.base, best.maxTimestamp
					}
				default:
					off, ts := l.offsetForTimestamp(rp.Timestamp)
					if ts < 0 {
						off = -1 // no record at or after the timestamp
					}
					sp.Offset, sp.Timestamp = off, ts
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
