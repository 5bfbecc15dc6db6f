// Package groupreq builds the group requests that groupquake's own members
// of both protocols (clients/classic, clients/consumer) send alike.
package groupreq

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit is the OffsetCommit of offsets for group, sent by memberID
// (with instanceID, if not nil) at generation: the classic generation or
// the consumer protocol's member epoch. Topics and partitions go in order,
// each offset with no leader epoch (-1); ids names each topic's id too
// (OffsetCommit v10+, Kafka 4.2+), nil for none.
func OffsetCommit(group, memberID string, instanceID *string, generation int32, offsets map[string]map[int32]int64, ids map[string][16]byte) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = generation
	req.MemberID = memberID
	req.InstanceID = instanceID
	for _, t := range slices.Sorted(maps.Keys(offsets)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = t
		rt.TopicID = ids[t]
		for _, p := range slices.Sorted(maps.Keys(offsets[t])) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition = p
			rp.Offset = offsets[t][p]
			rp.LeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}
