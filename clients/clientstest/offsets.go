package clientstest

import (
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommitAnswer is a broker's answer to the OffsetCommit req: every
// partition answered with code (0: committed), each topic named as req
// names it (name and id), at req's version. apply, if not nil, is called
// for each partition answered with no error, in request order, as the
// broker applies the request while it processes it.
func CommitAnswer(req *kmsg.OffsetCommitRequest, code int16, apply func(kmsg.OffsetCommitRequestTopicPartition)) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition = rp.Partition
			p.ErrorCode = code
			if code == 0 && apply != nil {
				apply(rp)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// Applied is the order in which a scripted broker applied committed
// offsets; safe for concurrent use. The zero value is ready.
type Applied struct {
	mu      sync.Mutex
	offsets []int64
}

// Apply records the offset of a partition the broker applied.
func (a *Applied) Apply(p kmsg.OffsetCommitRequestTopicPartition) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.offsets = append(a.offsets, p.Offset)
}

// Offsets returns a copy of the offsets applied so far, in order.
func (a *Applied) Offsets() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.offsets)
}

// CommitOffsets are the offsets an OffsetCommit request commits, by
// partition (the tests' requests commit one topic).
func CommitOffsets(req *kmsg.OffsetCommitRequest) map[int32]int64 {
	out := map[int32]int64{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}
