package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// handleConsumerGroupHeartbeat serves ConsumerGroupHeartbeat (key 68) by
// handing it to the consumer-group engine (Config.ConsumerGroups), which
// may convert an Empty classic group through the ClassicGroups view the
// coordinator gives it. The engine's records are already applied (rule 2
// of ConsumerGroups): they are written, never replayed here.
//
// The tombstone of a converted classic group comes back among the engine's
// records. An engine that converted a group and then failed the request
// may leave it out; the classic group is gone all the same, so the shell
// writes the tombstone itself, or a coordinator loaded from the log would
// bring the group back (GMM writes the tombstone and the consumer group's
// records in one batch, so Kafka never splits them).
func (c *Coordinator) handleConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	if c.share[req.Group] != nil && req.Group != "" {
		// GMM.getOrMaybeCreateConsumerGroup and consumerGroup: the id is a
		// share group's. (The engine's request checks, which Kafka makes
		// first, are not made for such an id.)
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + req.Group + " is not a consumer group."
		resp.ErrorMessage = &msg
		return resp, nil
	}
	c.converted = nil
	resp, recs := c.consumer.Heartbeat(c.nowTime(), c.client, c, c.cfg.Topics, req)
	for _, t := range c.converted {
		if !hasTombstone(recs, t.Key) {
			c.written = append(c.written, t)
		}
	}
	c.converted = nil
	c.written = append(c.written, recs...)
	return resp, nil
}

// hasTombstone reports whether recs hold the GroupMetadata tombstone of
// key.
func hasTombstone(recs []records.Record, key records.Key) bool {
	want, ok := key.(records.GroupMetadataKey)
	if !ok {
		return false
	}
	for _, r := range recs {
		if k, ok := r.Key.(records.GroupMetadataKey); ok && k == want && r.Value == nil {
			return true
		}
	}
	return false
}
