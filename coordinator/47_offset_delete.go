package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetDelete serves OffsetDelete (key 47):
// GroupCoordinatorService.deleteOffsets then
// OffsetMetadataManager.deleteOffsets (4.4).
//
// The group must exist (GROUP_ID_NOT_FOUND). A classic group with members
// may only lose offsets if it uses the consumer protocol
// (ClassicGroup.validateOffsetDelete, NON_EMPTY_GROUP), and never those of
// topics it is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC per partition). A
// tombstone is written for each named partition that has an offset.
func (c *Coordinator) handleOffsetDelete(req *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	var subscribed func(topic string) bool
	if g := c.classic[req.Group]; g != nil {
		switch g.state {
		case Dead:
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp, nil
		case Stable, PreparingRebalance, CompletingRebalance:
			if !g.usesConsumerProtocol() {
				resp.ErrorCode = kerr.NonEmptyGroup.Code
				return resp, nil
			}
		}
		subscribed = g.isSubscribedToTopic
	} else if info, ok := c.consumer.Lookup(req.Group); ok {
		subscribed = func(t string) bool { return info.SubscribedTopics[t] }
	} else {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		sub := subscribed(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if sub {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			} else if _, ok := c.offsets.get(req.Group, t.Topic, p.Partition); ok {
				c.write(offsetTombstone(req.Group, t.Topic, p.Partition), true)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
