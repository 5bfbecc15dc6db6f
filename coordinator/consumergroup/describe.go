package consumergroup

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe answers ConsumerGroupDescribe for groupIDs, in request order
// (GroupCoordinatorService.consumerGroupDescribe, CG.asDescribedGroup,
// ConsumerGroupMember.asConsumerGroupDescribeMember). A blank id is
// INVALID_GROUP_ID; an unknown one GROUP_ID_NOT_FOUND, which the shell
// replaces when the id names a classic group it holds. Members and
// partitions are sorted so that answers compare; Kafka's order is that of
// its hash maps. Topics missing from the metadata are left out of
// assignments, as Kafka leaves them out.
func (m *Manager) Describe(now time.Time, groupIDs []string, topics TopicMetadata) []kmsg.ConsumerGroupDescribeResponseGroup {
	_ = now // the state machine keeps no time-dependent describe fields
	topics = orEmpty(topics)
	m.lastTopics = topics
	out := make([]kmsg.ConsumerGroupDescribeResponseGroup, 0, len(groupIDs))
	for _, id := range groupIDs {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = id
		g, ok := m.rp.groups[id]
		switch {
		case strings.TrimSpace(id) == "":
			d.ErrorCode = kerr.InvalidGroupID.Code
		case !ok:
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			d.ErrorMessage = &msg
		default:
			d.State = g.state()
			d.Epoch = g.epoch
			d.AssignmentEpoch = g.assignmentEpoch
			d.AssignorName = m.preferredAssignor(g, nil, nil)
			ids := g.memberIDs()
			slices.Sort(ids)
			for _, mid := range ids {
				d.Members = append(d.Members, m.describeMember(g, g.members[mid], topics))
			}
		}
		out = append(out, d)
	}
	return out
}

func (m *Manager) describeMember(g *group, mb *member, topics TopicMetadata) kmsg.ConsumerGroupDescribeResponseGroupMember {
	d := kmsg.NewConsumerGroupDescribeResponseGroupMember()
	d.MemberID = mb.id
	d.InstanceID = optional(mb.instanceID)
	d.RackID = optional(mb.rackID)
	d.MemberEpoch = mb.epoch
	d.ClientID, d.ClientHost = mb.clientID, mb.clientHost
	d.SubscribedTopics = slices.Clone(mb.subscribed)
	if d.SubscribedTopics == nil {
		d.SubscribedTopics = []string{}
	}
	regex := mb.regex
	d.SubscribedTopicRegex = &regex
	owned := partitionsOf(mb.assigned)
	if m.profile.DescribeShowsPendingRevocation {
		// KAFKA-20431: the member is still responsible for partitions it
		// has not revoked yet.
		for t, ps := range partitionsOf(mb.pending) {
			owned[t] = slices.Sorted(slices.Values(append(owned[t], ps...)))
		}
	}
	d.Assignment = describeAssignment(owned, topics)
	d.TargetAssignment = describeAssignment(g.target[mb.id], topics)
	// KIP-1099 (ConsumerGroupMember.asConsumerGroupDescribeMember): 0 for a
	// classic-protocol member, 1 for a consumer-protocol member.
	d.MemberType = 1
	if mb.useClassicProtocol() {
		d.MemberType = 0
	}
	return d
}

func describeAssignment(a map[TopicID][]int32, topics TopicMetadata) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	ids := make([]TopicID, 0, len(a))
	for t := range a {
		ids = append(ids, t)
	}
	slices.SortFunc(ids, compareBytes)
	for _, t := range ids {
		name, _, ok := topics.TopicByID(t)
		if !ok || len(a[t]) == 0 {
			continue
		}
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t, name, slices.Clone(a[t])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
