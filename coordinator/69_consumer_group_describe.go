package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleConsumerGroupDescribe serves ConsumerGroupDescribe (key 69) by
// handing it to the consumer-group engine. The engine knows only its own
// groups; for an id that is a classic group here Kafka says so
// (GMM.consumerGroup: "Group %s is not a consumer group.", 4.0–4.4), so
// the shell puts that message in.
func (c *Coordinator) handleConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	resp := c.consumer.Describe(c.nowTime(), c.cfg.Topics, req)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if g.ErrorCode != kerr.GroupIDNotFound.Code {
			continue
		}
		if cg := c.classic[g.Group]; cg != nil && !cg.in(Dead) || c.share[g.Group] != nil {
			msg := "Group " + g.Group + " is not a consumer group."
			g.ErrorMessage = &msg
		}
	}
	return resp, nil
}
