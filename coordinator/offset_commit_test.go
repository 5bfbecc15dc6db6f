package coordinator

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/vectors"
	"github.com/groupquake/groupquake/coordinator/version"
)

// An OffsetCommit whose topic has partitions the metadata image refuses and
// partitions the coordinator takes is answered with that topic once, the
// refused partitions first (OffsetCommitResponse.Builder merges the
// coordinator's partitions into the topic KafkaApis already answered):
// by topic id from v10, by name before. The vectors render answers
// canonically, sorted and flattened, so they cannot see a topic answered
// twice; a client that matches its request's topics to the answer's can.
// Two topic ids the image does not know both have the empty name: from v10
// they are two topics of the answer.
func TestOffsetCommitAnswersEachTopicOnce(t *testing.T) {
	topics := consumergroup.Topics{{Name: "t", ID: topicID("t"), Partitions: 2}, {Name: "u", ID: topicID("u"), Partitions: 1}}
	for _, v := range []int16{9, 10} {
		c := newCoordinator(t, version.V4_4_0.Profile(), Config{Topics: topics, IDs: &vectors.ShortIDs{}})
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group = v, "g"
		for _, tp := range []struct {
			topic string
			parts []int32
		}{{"t", []int32{0, 7, 1}}, {"u", []int32{0}}, {"x", []int32{0}}, {"y", []int32{0}}} {
			rt := kmsg.NewOffsetCommitRequestTopic()
			if v >= 10 {
				rt.TopicID = topicID(tp.topic)
			} else {
				rt.Topic = tp.topic
			}
			for _, p := range tp.parts {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, 1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		raw, _, err := c.Handle(time.UnixMilli(0), req)
		if err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		resp := raw.(*kmsg.OffsetCommitResponse)
		type answer struct {
			topic string
			parts []int32
			codes []int16
		}
		var got []answer
		for _, rt := range resp.Topics {
			name := rt.Topic
			if v >= 10 {
				name = map[[16]byte]string{topicID("t"): "t", topicID("u"): "u", topicID("x"): "x", topicID("y"): "y"}[rt.TopicID]
			}
			a := answer{topic: name}
			for _, rp := range rt.Partitions {
				a.parts = append(a.parts, rp.Partition)
				a.codes = append(a.codes, rp.ErrorCode)
			}
			got = append(got, a)
		}
		want := []answer{
			{topic: "t", parts: []int32{7, 0, 1}, codes: []int16{kerr.UnknownTopicOrPartition.Code, 0, 0}},
			{topic: "x", parts: []int32{0}, codes: []int16{kerr.UnknownTopicOrPartition.Code}},
			{topic: "y", parts: []int32{0}, codes: []int16{kerr.UnknownTopicOrPartition.Code}},
			{topic: "u", parts: []int32{0}, codes: []int16{0}},
		}
		if v >= 10 {
			want[1].codes[0], want[2].codes[0] = kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Code
		}
		if !slices.EqualFunc(got, want, func(a, b answer) bool {
			return a.topic == b.topic && slices.Equal(a.parts, b.parts) && slices.Equal(a.codes, b.codes)
		}) {
			t.Errorf("v%d: answered %+v, want %+v", v, got, want)
		}
	}
}
