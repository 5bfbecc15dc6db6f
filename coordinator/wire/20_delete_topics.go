package wire

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteTopics: v1 to v6; v6 names topics by name or by id.
//
// An unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id
// UNKNOWN_TOPIC_ID. __consumer_offsets cannot be deleted here: it holds
// the coordinator's log. The answer is INVALID_REQUEST; which error Kafka
// gives for an internal topic has not been checked against a broker.
// Deletion is immediate (see deleteTopic).
//
// Called with s.mu held (Server.handle).
func (s *Server) handleDeleteTopics(req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type named struct {
		name *string
		id   [16]byte
	}
	var asked []named
	if req.Version >= 6 {
		for _, t := range req.Topics {
			asked = append(asked, named{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			asked = append(asked, named{name: &n})
		}
	}
	for _, a := range asked {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = a.name, a.id
		var t *topic
		if a.name != nil {
			t = s.topics[*a.name]
		} else {
			t = s.topicIDs[a.id]
		}
		switch {
		case t == nil && a.name == nil:
			st.ErrorCode = kerr.UnknownTopicID.Code
		case t == nil:
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case t.internal:
			st.ErrorCode = kerr.InvalidRequest.Code
			msg := "Cannot delete internal topic " + t.name
			st.ErrorMessage = &msg
		default:
			name := t.name
			st.Topic, st.TopicID = &name, t.id
			if err := s.deleteTopic(t); err != nil {
				s.logf("wire: delete topic %q: %v", name, err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
