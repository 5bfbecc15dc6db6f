package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateTopics: v2 to v7.
//
// Errors as Kafka's ReplicationControlManager gives them: an existing
// topic is TOPIC_ALREADY_EXISTS, a bad name INVALID_TOPIC_EXCEPTION, a
// partition count that is 0 or below -1 INVALID_PARTITIONS, a replication
// factor above 1 INVALID_REPLICATION_FACTOR (one broker), a manual
// assignment naming another broker INVALID_REPLICA_ASSIGNMENT. -1 means
// the broker default (num.partitions, replication factor 1). ValidateOnly
// checks and creates nothing. Configs are accepted and not kept: nothing
// here reads them.
//
// Called with s.mu held (Server.handle).
func (s *Server) handleCreateTopics(req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		fail := func(e *kerr.Error, msg string) {
			st.ErrorCode = e.Code
			st.ErrorMessage = &msg
			st.NumPartitions, st.ReplicationFactor = -1, -1
		}
		n := int(rt.NumPartitions)
		if n == -1 {
			n = s.cfg.DefaultPartitions
		}
		if len(rt.ReplicaAssignment) > 0 {
			n = len(rt.ReplicaAssignment)
		}
		badAssignment := false
		for _, a := range rt.ReplicaAssignment {
			for _, r := range a.Replicas {
				badAssignment = badAssignment || r != s.cfg.NodeID
			}
			badAssignment = badAssignment || len(a.Replicas) == 0
		}
		switch err := validTopicName(rt.Topic); {
		case err != nil:
			fail(kerr.InvalidTopicException, err.Error())
		case s.topics[rt.Topic] != nil:
			fail(kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", rt.Topic))
		case len(rt.ReplicaAssignment) > 0 && (rt.NumPartitions != -1 || rt.ReplicationFactor != -1):
			fail(kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.")
		case badAssignment:
			fail(kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes a broker other than %d, the only one.", s.cfg.NodeID))
		case n <= 0:
			fail(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		case rt.ReplicationFactor > 1 || rt.ReplicationFactor == 0 || rt.ReplicationFactor < -1:
			fail(kerr.InvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only 1 broker(s) are registered.", rt.ReplicationFactor, rt.ReplicationFactor))
		case req.ValidateOnly:
			st.NumPartitions, st.ReplicationFactor = int32(n), 1
		default:
			t, err := s.createTopic(rt.Topic, n, false)
			if err != nil {
				s.logf("wire: %v", err)
				fail(kerr.KafkaStorageError, err.Error())
				break
			}
			st.TopicID, st.NumPartitions, st.ReplicationFactor = t.id, int32(n), 1
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
