package wire

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata: v0 to v13.
//
// One broker, which is also the controller and every partition's leader,
// only replica and whole ISR, at leader epoch 0. A nil topic list (v1+; an
// empty one at v0) asks for every topic, an empty one for none. Unknown
// topics are UNKNOWN_TOPIC_OR_PARTITION unless the request allows auto
// creation and Config.AutoCreateTopics is set (Kafka then answers
// LEADER_NOT_AVAILABLE once while it creates them; here creation is
// immediate, so the topic is answered at once). An invalid name is
// INVALID_TOPIC_EXCEPTION. v10+ may name topics by id only; an unknown id is
// UNKNOWN_TOPIC_ID.
//
// Called with s.mu held (Server.handle).
func (s *Server) handleMetadata(req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = s.cfg.NodeID, s.host, s.port
	resp.Brokers = append(resp.Brokers, b)
	cid := s.cfg.ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = s.cfg.NodeID

	all := req.Topics == nil || req.Version == 0 && len(req.Topics) == 0
	if all {
		names := make([]string, 0, len(s.topics))
		for n := range s.topics { // internal topics too, as Kafka lists them
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			resp.Topics = append(resp.Topics, s.describeTopic(s.topics[n]))
		}
		return resp
	}
	for _, rt := range req.Topics {
		var t *topic
		switch {
		case rt.Topic != nil:
			t = s.topics[*rt.Topic]
		default:
			t = s.topicIDs[rt.TopicID]
		}
		if t == nil && rt.Topic != nil && req.AllowAutoTopicCreation && s.cfg.AutoCreateTopics && validTopicName(*rt.Topic) == nil {
			var err error
			if t, err = s.createTopic(*rt.Topic, s.cfg.DefaultPartitions, false); err != nil {
				s.logf("wire: auto-create topic %q: %v", *rt.Topic, err)
				t = nil
			}
		}
		if t == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID = rt.Topic, rt.TopicID
			switch {
			case rt.Topic == nil:
				mt.ErrorCode = kerr.UnknownTopicID.Code
			case validTopicName(*rt.Topic) != nil:
				mt.ErrorCode = kerr.InvalidTopicException.Code
			default:
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.describeTopic(t))
	}
	return resp
}

func (s *Server) describeTopic(t *topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.name
	mt.Topic, mt.TopicID, mt.IsInternal = &name, t.id, t.internal
	for p := range t.partitions {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = int32(p)
		mp.Leader = s.cfg.NodeID
		mp.LeaderEpoch = 0
		mp.Replicas = []int32{s.cfg.NodeID}
		mp.ISR = []int32{s.cfg.NodeID}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
