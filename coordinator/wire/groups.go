package wire

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The group and offset APIs are the coordinator's, not the server's; the
// server parses them, hands them over with the client's id and address,
// appends what the coordinator writes, and sends the answer:
//
//	 8 OffsetCommit            9 OffsetFetch           11 JoinGroup
//	12 Heartbeat              13 LeaveGroup            14 SyncGroup
//	15 DescribeGroups         16 ListGroups            42 DeleteGroups
//	47 OffsetDelete           68 ConsumerGroupHeartbeat
//	69 ConsumerGroupDescribe  76 ShareGroupHeartbeat     77 ShareGroupDescribe
//
// A single node coordinates every group, so requests that Kafka clients
// split by coordinator (DescribeGroups, ListGroups, DeleteGroups,
// OffsetFetch v8+) arrive whole and go to the one coordinator whole. That
// coordinator keeps all groups; its records are still spread over the
// __consumer_offsets partitions as Kafka spreads them.

func isGroupAPI(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.JoinGroup, kmsg.Heartbeat, kmsg.LeaveGroup,
		kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups, kmsg.OffsetDelete,
		kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe,
		kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe:
		return true
	}
	return false
}

// handleGroup passes a group or offset request to the coordinator and
// waits for its answer if the coordinator parks it (a JoinGroup waiting for
// the rebalance, a follower's SyncGroup waiting for the leader).
func (s *Server) handleGroup(req request) (kmsg.Response, error) {
	s.mu.Lock()
	resp, wait, err := s.submit(s.now(), req.client, req.kreq)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if wait == nil {
		return resp, nil
	}
	select {
	case resp, ok := <-wait:
		if !ok {
			return nil, errors.New("the coordinator was reloaded while the request was parked")
		}
		return resp, nil
	case <-s.done:
		return nil, errors.New("server closing")
	}
}
