package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetFetch serves OffsetFetch (key 9): KafkaApis.handleOffsetFetchRequest
// (one group before v8, several from v8; topic ids from v10),
// GroupCoordinatorService.fetchOffsets and
// OffsetMetadataManager.fetchOffsets/fetchAllOffsets (4.4).
//
// A classic group, or none at all, never fails a fetch: an unknown group
// reads as no offsets (-1, no error). A consumer group validates the member
// and epoch (v9+) through ConsumerGroups.ValidateOffsetFetch, and a failure
// there fails the whole group (OffsetFetchResponse.groupError: per
// partition before v2). Null topics fetch every offset of the group. A v10
// topic id unknown to Config.Topics gets UNKNOWN_TOPIC_ID, listed after the
// coordinator's topics as KafkaApis.fetchOffsetsForGroup appends it. There
// are no transactional offsets here, so RequireStable never yields
// UNSTABLE_OFFSET_COMMIT.
func (c *Coordinator) handleOffsetFetch(req *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			resp.Groups = append(resp.Groups, c.fetchGroup(req.Version, rg))
		}
		return resp, nil
	}
	// OffsetFetchResponse.Builder.build for one group.
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = req.Group
	if req.Topics != nil {
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, t := range req.Topics {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic = t.Topic
			gt.Partitions = t.Partitions
			rg.Topics = append(rg.Topics, gt)
		}
	}
	g := c.fetchGroup(req.Version, rg)
	resp.ErrorCode = g.ErrorCode
	for _, t := range g.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetchGroup answers one group of an OffsetFetch.
func (c *Coordinator) fetchGroup(version int16, rg kmsg.OffsetFetchRequestGroup) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	useIDs := version >= 10

	// KafkaApis.fetchOffsetsForGroup: resolve topic ids; unknown ones are
	// answered without asking the coordinator.
	var asked []kmsg.OffsetFetchRequestGroupTopic
	var errorTopics []kmsg.OffsetFetchResponseGroupTopic
	if rg.Topics != nil {
		asked = []kmsg.OffsetFetchRequestGroupTopic{}
		for _, t := range rg.Topics {
			if useIDs {
				t.Topic = ""
				if c.cfg.Topics != nil && t.TopicID != [16]byte{} {
					t.Topic, _, _ = c.cfg.Topics.TopicByID(t.TopicID)
				}
				if t.Topic == "" {
					et := kmsg.NewOffsetFetchResponseGroupTopic()
					et.TopicID = t.TopicID
					for _, p := range t.Partitions {
						et.Partitions = append(et.Partitions, fetchPartition(p, -1, -1, "", kerr.UnknownTopicID))
					}
					errorTopics = append(errorTopics, et)
					continue
				}
			}
			asked = append(asked, t)
		}
	}

	known := true
	if g := c.classic[rg.Group]; g != nil {
		known = !g.in(Dead)
	} else if _, ok := c.consumer.Lookup(rg.Group); ok {
		if err := c.consumer.ValidateOffsetFetch(rg.Group, rg.MemberID, rg.MemberEpoch); err != nil {
			ke := asKerr(err)
			if ke != kerr.GroupIDNotFound {
				return groupError(version, rg, ke)
			}
			known = false
		}
	} else {
		known = false
	}
	lookup := func(topic string, topicID [16]byte, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		if !known {
			return fetchPartition(p, -1, -1, "", nil)
		}
		o, ok := c.offsets.get(rg.Group, topic, p)
		// OffsetMetadataManager.isMismatchedTopicId: an offset stored for
		// another incarnation of the topic does not count.
		if !ok || (o.topicID != [16]byte{} && topicID != [16]byte{} && o.topicID != topicID) {
			return fetchPartition(p, -1, -1, "", nil)
		}
		return fetchPartition(p, o.offset, o.leaderEpoch, o.metadata, nil)
	}
	if rg.Topics == nil {
		out.Topics = []kmsg.OffsetFetchResponseGroupTopic{}
		if !known {
			return out
		}
		for _, k := range c.offsets.keys(rg.Group) {
			n := len(out.Topics)
			if n == 0 || out.Topics[n-1].Topic != k.topic {
				out.Topics = append(out.Topics, kmsg.NewOffsetFetchResponseGroupTopic())
				out.Topics[n].Topic = k.topic
				n++
			}
			out.Topics[n-1].Partitions = append(out.Topics[n-1].Partitions, lookup(k.topic, [16]byte{}, k.partition))
		}
		if useIDs {
			// KafkaApis.fetchAllOffsetsForGroup: v10 names topics by id and
			// leaves out those the image does not know.
			kept := out.Topics[:0]
			for _, t := range out.Topics {
				if c.cfg.Topics == nil {
					continue
				}
				if id, _, ok := c.cfg.Topics.TopicByName(t.Topic); ok && id != [16]byte{} {
					t.TopicID = id
					kept = append(kept, t)
				}
			}
			out.Topics = kept
		}
		return out
	}
	out.Topics = []kmsg.OffsetFetchResponseGroupTopic{}
	for _, t := range asked {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, lookup(t.Topic, t.TopicID, p))
		}
		out.Topics = append(out.Topics, rt)
	}
	out.Topics = append(out.Topics, errorTopics...)
	return out
}

func fetchPartition(p int32, offset int64, epoch int32, metadata string, err *kerr.Error) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = p, offset, epoch
	rp.Metadata = &metadata
	if err != nil {
		rp.ErrorCode = err.Code
	}
	return rp
}

// groupError is OffsetFetchResponse.groupError: a group-level error from
// v2, each partition's before.
func groupError(version int16, rg kmsg.OffsetFetchRequestGroup, err *kerr.Error) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	if version >= 2 {
		out.ErrorCode = err.Code
		return out
	}
	for _, t := range rg.Topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, fetchPartition(p, -1, -1, "", err))
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}
