package coordinator

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleDescribeGroups serves DescribeGroups (key 15):
// GroupCoordinatorService.describeGroups then GMM.describeGroups (4.4). A
// Stable group shows each member's metadata for the chosen protocol; other
// states show members without metadata. An unknown group is reported Dead,
// with GROUP_ID_NOT_FOUND from v6. A consumer group is described by the
// consumer-group engine (ConsumerGroupInfo.Described) when it offers one,
// else it is "not a classic group" as in 4.4's describeGroups; so is a
// share group.
func (c *Coordinator) handleDescribeGroups(req *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	for _, id := range req.Groups {
		d := kmsg.NewDescribeGroupsResponseGroup()
		d.Group = id
		g := c.classic[id]
		if g == nil {
			if info, ok := c.consumer.Lookup(id); ok && info.Described != nil {
				resp.Groups = append(resp.Groups, *info.Described)
				continue
			}
			d.State = Dead.String()
			if req.Version >= 6 {
				d.ErrorCode = kerr.GroupIDNotFound.Code
				msg := "Group " + id + " not found."
				if _, ok := c.consumer.Lookup(id); ok || c.share[id] != nil {
					msg = "Group " + id + " is not a classic group."
				}
				d.ErrorMessage = &msg
			}
			resp.Groups = append(resp.Groups, d)
			continue
		}
		d.State = g.state.String()
		if g.protocolType != nil {
			d.ProtocolType = *g.protocolType
		}
		stable := g.in(Stable) && g.protocolName != nil
		if stable {
			d.Protocol = *g.protocolName
		}
		d.Members = []kmsg.DescribeGroupsResponseGroupMember{}
		for _, m := range g.allMembers() {
			dm := kmsg.NewDescribeGroupsResponseGroupMember()
			dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.names()
			dm.MemberAssignment = m.assignment
			if stable {
				dm.ProtocolMetadata = m.metadata(*g.protocolName)
			}
			d.Members = append(d.Members, dm)
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
