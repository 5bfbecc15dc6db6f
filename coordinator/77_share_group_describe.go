package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareAssignorName is SimpleAssignor's name, the one share assignor of
// 4.2–4.4 (group.share.assignors).
const shareAssignorName = "simple"

// handleShareGroupDescribe serves ShareGroupDescribe (key 77):
// GroupCoordinatorService.shareGroupDescribe answers an empty group id
// INVALID_GROUP_ID, then GMM.shareGroupDescribe describes each group
// (ShareGroup.asDescribedGroup) or answers GROUP_ID_NOT_FOUND. Like Kafka,
// it answers the invalid ids first.
func (c *Coordinator) handleShareGroupDescribe(req *kmsg.ShareGroupDescribeRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	var valid []string
	for _, id := range req.GroupIDs {
		if id == "" {
			d := kmsg.NewShareGroupDescribeResponseGroup()
			d.ErrorCode = kerr.InvalidGroupID.Code
			resp.Groups = append(resp.Groups, d)
			continue
		}
		valid = append(valid, id)
	}
	for _, id := range valid {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		g, err := c.shareGroupOf(id)
		if err != nil {
			d.ErrorCode = err.err.Code
			msg := err.msg
			d.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, d)
			continue
		}
		d.GroupState = g.state()
		d.GroupEpoch = g.epoch
		d.AssignmentEpoch = max(g.assignEpoch, 0)
		d.Assignor = shareAssignorName
		for _, mid := range g.memberOrder() {
			m := g.members[mid]
			dm := kmsg.NewShareGroupDescribeResponseGroupMember()
			dm.MemberID = m.id
			dm.RackID = cloneStr(m.rack)
			dm.MemberEpoch = m.epoch
			dm.ClientID = m.clientID
			dm.ClientHost = m.clientHost
			dm.SubscribedTopicNames = append([]string{}, m.subscribed...)
			for _, t := range toTPs(m.assigned) {
				tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
				tp.TopicID = t.TopicID
				tp.Partitions = t.Partitions
				if name, _, ok := c.topicByID(t.TopicID); ok {
					tp.Topic = name
				}
				dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
			}
			d.Members = append(d.Members, dm)
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
