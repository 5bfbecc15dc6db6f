package coordinator

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleConsumerGroupHeartbeat serves ConsumerGroupHeartbeat (key 68) by
// handing it to the consumer-group engine (Config.ConsumerGroups), which
// may convert an Empty classic group through the ClassicGroups view the
// coordinator gives it.
func (c *Coordinator) handleConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	resp, recs := c.consumer.Heartbeat(c.nowTime(), c.client, c, c.cfg.Topics, req)
	c.written = append(c.written, recs...)
	return resp, nil
}
