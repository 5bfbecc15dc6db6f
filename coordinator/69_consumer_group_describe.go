package coordinator

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleConsumerGroupDescribe serves ConsumerGroupDescribe (key 69) by
// handing it to the consumer-group engine.
func (c *Coordinator) handleConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	return c.consumer.Describe(c.nowTime(), c.cfg.Topics, req), nil
}
