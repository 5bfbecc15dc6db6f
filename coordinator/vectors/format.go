package vectors

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Order says how Format orders the lists of a response.
type Order int

const (
	// AsAnswered keeps every list in the order of the response: the
	// coordinator is deterministic, and its vectors pin that order.
	AsAnswered Order = iota
	// Sorted sorts every list whose order is a hash-map iteration order in
	// Kafka (members, partitions, groups; a broker also answers shard by
	// shard), so that only the set is compared. LeaveGroup's members, which
	// follow the request, keep their order.
	Sorted
)

// Format renders a response in the vectors' canonical form: Kafka error
// names, names mapped back to the vector's through n.
func Format(r kmsg.Response, n Norm, order Order) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		return formatJoin(r, n, order)
	case *kmsg.SyncGroupResponse:
		if r.ErrorCode != 0 {
			return "sync " + ErrName(r.ErrorCode)
		}
		return fmt.Sprintf("sync type=%s proto=%s assignment=%s", ps(r.ProtocolType), ps(r.Protocol), assignment(r.MemberAssignment, n))
	case *kmsg.HeartbeatResponse:
		return withErr(r.ErrorCode, "heartbeat")
	case *kmsg.LeaveGroupResponse:
		return formatLeave(r, n)
	case *kmsg.DescribeGroupsResponse:
		return formatDescribe(r, n, order)
	case *kmsg.ListGroupsResponse:
		s := withErr(r.ErrorCode, "list")
		var gs []string
		for _, g := range r.Groups {
			gs = append(gs, fmt.Sprintf("\n  %s type=%s state=%s protocol-type=%q", n.Group(g.Group), g.GroupType, g.GroupState, g.ProtocolType))
		}
		order.sort(gs)
		return s + strings.Join(gs, "")
	case *kmsg.DeleteGroupsResponse:
		var gs []string
		for _, g := range r.Groups {
			gs = append(gs, withErr(g.ErrorCode, "\n  "+n.Group(g.Group)))
		}
		order.sort(gs)
		return "delete" + strings.Join(gs, "")
	case *kmsg.OffsetCommitResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, withErr(p.ErrorCode, fmt.Sprintf("%s/%d", topicName(t.Topic, t.TopicID, n), p.Partition)))
			}
		}
		order.sort(parts)
		return "commit " + strings.Join(parts, ", ")
	case *kmsg.OffsetFetchResponse:
		return formatFetch(r, n, order)
	case *kmsg.OffsetDeleteResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, withErr(p.ErrorCode, fmt.Sprintf("%s/%d", n.Topic(t.Topic), p.Partition)))
			}
		}
		order.sort(parts)
		return withErr(r.ErrorCode, "offset-delete "+strings.Join(parts, ", "))
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return formatConsumerHeartbeat(r, n)
	case *kmsg.ConsumerGroupDescribeResponse:
		return formatConsumerDescribe(r, n, order)
	case *kmsg.ShareGroupHeartbeatResponse:
		return formatShareHeartbeat(r, n)
	case *kmsg.ShareGroupDescribeResponse:
		return formatShareDescribe(r, n, order)
	}
	return fmt.Sprintf("%T", r)
}

// sort sorts s when o is Sorted.
func (o Order) sort(s []string) {
	if o == Sorted {
		slices.Sort(s)
	}
}

// formatJoin renders a JoinGroup response: the member, and on success the
// generation, protocol, leader and (to the leader) the members.
func formatJoin(r *kmsg.JoinGroupResponse, n Norm, order Order) string {
	s := fmt.Sprintf("join member=%s", n.Member(r.MemberID))
	if r.ErrorCode == 0 {
		s += fmt.Sprintf(" gen=%d type=%s proto=%s leader=%s", r.Generation, ps(r.ProtocolType), ps(r.Protocol), n.Member(r.LeaderID))
		if r.SkipAssignment {
			s += " skip-assignment"
		}
		if len(r.Members) > 0 {
			var ms []string
			for _, m := range r.Members {
				x := n.Member(m.MemberID)
				if m.InstanceID != nil {
					x += "/" + *m.InstanceID
				}
				ms = append(ms, x+":"+meta(m.ProtocolMetadata, n))
			}
			order.sort(ms)
			s += " members=(" + strings.Join(ms, ", ") + ")"
		}
	}
	return withErr(r.ErrorCode, s)
}

// formatLeave renders a LeaveGroup response: its error and each member's,
// in the request's order.
func formatLeave(r *kmsg.LeaveGroupResponse, n Norm) string {
	s := withErr(r.ErrorCode, "leave")
	for _, m := range r.Members {
		x := n.Member(m.MemberID)
		if m.InstanceID != nil {
			x += "/" + *m.InstanceID
		}
		if e := ErrName(m.ErrorCode); e != "" {
			x += " " + e
		}
		s += "\n  " + x
	}
	return s
}

// formatDescribe renders a DescribeGroups response: each group, a line a
// member.
func formatDescribe(r *kmsg.DescribeGroupsResponse, n Norm, order Order) string {
	var gs []string
	for _, g := range r.Groups {
		x := withErr(g.ErrorCode, fmt.Sprintf("\n  %s state=%s type=%q proto=%q", n.Group(g.Group), g.State, g.ProtocolType, g.Protocol))
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, fmt.Sprintf("\n    %s instance=%s client=%s host=%s metadata=%s assignment=%s",
				n.Member(m.MemberID), ps(m.InstanceID), m.ClientID, n.Host(m.ClientHost), meta(m.ProtocolMetadata, n), assignment(m.MemberAssignment, n)))
		}
		order.sort(ms)
		gs = append(gs, x+strings.Join(ms, ""))
	}
	order.sort(gs)
	return "describe" + strings.Join(gs, "")
}

// formatFetch renders an OffsetFetch response: each partition's offset,
// leader epoch, metadata and error; from v8 group by group.
func formatFetch(r *kmsg.OffsetFetchResponse, n Norm, order Order) string {
	var parts []string
	add := func(topic string, p, epoch int32, off int64, md *string, perr int16) {
		x := fmt.Sprintf("%s/%d=%d", topic, p, off)
		if epoch != -1 {
			x += fmt.Sprintf("@%d", epoch)
		}
		if md != nil && len(*md) > 20 {
			x += fmt.Sprintf(" metadata-size=%d", len(*md))
		} else if md != nil && *md != "" {
			x += fmt.Sprintf(" %q", *md)
		}
		parts = append(parts, withErr(perr, x))
	}
	if r.Version < 8 {
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				add(n.Topic(t.Topic), p.Partition, p.LeaderEpoch, p.Offset, p.Metadata, p.ErrorCode)
			}
		}
		order.sort(parts)
		return withErr(r.ErrorCode, "fetch "+strings.Join(parts, ", "))
	}
	s := "fetch"
	for _, g := range r.Groups {
		parts = nil
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				add(topicName(t.Topic, t.TopicID, n), p.Partition, p.LeaderEpoch, p.Offset, p.Metadata, p.ErrorCode)
			}
		}
		order.sort(parts)
		s += fmt.Sprintf(" %s: %s", n.Group(g.Group), withErr(g.ErrorCode, strings.Join(parts, ", ")))
	}
	return s
}

// formatConsumerHeartbeat renders a ConsumerGroupHeartbeat response: its
// error, or the member, its epoch and (always sorted) its assignment.
func formatConsumerHeartbeat(r *kmsg.ConsumerGroupHeartbeatResponse, n Norm) string {
	var assigned tpList
	if r.Assignment != nil {
		assigned = func(add func(string, []int32)) {
			for _, t := range r.Assignment.Topics {
				add(n.TopicName(t.TopicID), t.Partitions)
			}
		}
	}
	return formatHeartbeat("consumer-heartbeat", r.ErrorCode, r.ErrorMessage, r.MemberID, r.MemberEpoch, r.HeartbeatIntervalMillis, assigned, n)
}

// formatHeartbeat renders a heartbeat response of either group protocol
// as kind: its error, or the member, its epoch and (always sorted: the
// vectors pinned a sorted assignment) its assignment when it has one.
func formatHeartbeat(kind string, code int16, msg, member *string, epoch, interval int32, assigned tpList, n Norm) string {
	if code != 0 {
		return fmt.Sprintf("%s %s %s", kind, ErrName(code), n.Text(ps(msg)))
	}
	s := fmt.Sprintf("%s member=%s epoch=%d interval=%dms", kind, n.Member(ps(member)), epoch, interval)
	if assigned != nil {
		s += " assignment=" + assigned.sorted()
	}
	return s
}

// tpList lists topic partitions: it calls add with each topic's name and
// partitions.
type tpList func(add func(topic string, partitions []int32))

// sorted renders the partitions as "[foo/0 foo/1]", sorted.
func (l tpList) sorted() string {
	var parts []string
	l(func(topic string, partitions []int32) {
		for _, p := range partitions {
			parts = append(parts, fmt.Sprintf("%s/%d", topic, p))
		}
	})
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// formatConsumerDescribe renders a ConsumerGroupDescribe response: each
// group, a line a member.
func formatConsumerDescribe(r *kmsg.ConsumerGroupDescribeResponse, n Norm, order Order) string {
	// Kafka answers the invalid group ids first, then the others shard
	// by shard from a HashMap (GroupCoordinatorService.consumerGroupDescribe).
	var gs []string
	for _, g := range r.Groups {
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, consumerDescribeMember(m, r.Version, n, order))
		}
		gs = append(gs, describedGroup(g.Group, g.ErrorCode, g.ErrorMessage, g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName, ms, n, order))
	}
	order.sort(gs)
	return "consumer-describe" + strings.Join(gs, "")
}

// describedGroup renders one group of a KIP-848 describe response: its
// error, or its state line and its members' lines, sorted.
func describedGroup(id string, code int16, msg *string, state string, epoch, assignmentEpoch int32, assignor string, members []string, n Norm, order Order) string {
	if code != 0 {
		return fmt.Sprintf("\n  %s %s %s", n.Group(id), ErrName(code), n.Text(ps(msg)))
	}
	order.sort(members)
	return fmt.Sprintf("\n  %s state=%s epoch=%d assignment-epoch=%d assignor=%s", n.Group(id), state, epoch, assignmentEpoch, assignor) + strings.Join(members, "")
}

// subscribed renders a describe response member's subscribed topics,
// "[foo bar]", in the order Kafka's HashSet lists them
// (ConsumerGroupMember.subscribedTopicNames,
// ShareGroupMember.subscribedTopicNames).
func subscribed(topics []string, n Norm, order Order) string {
	var subs []string
	for _, t := range topics {
		subs = append(subs, n.Topic(t))
	}
	order.sort(subs)
	return "[" + strings.Join(subs, " ") + "]"
}

// consumerDescribeMember renders one member of a ConsumerGroupDescribe
// response of version v.
func consumerDescribeMember(m kmsg.ConsumerGroupDescribeResponseGroupMember, v int16, n Norm, order Order) string {
	x := fmt.Sprintf("\n    %s epoch=%d client=%s host=%s assignment=%s target=%s subscribed=%s",
		n.Member(m.MemberID), m.MemberEpoch, m.ClientID, n.Host(m.ClientHost), describeTPs(m.Assignment, n), describeTPs(m.TargetAssignment, n), subscribed(m.SubscribedTopics, n, order))
	if m.InstanceID != nil {
		x += " instance=" + *m.InstanceID
	}
	if v >= 1 && m.MemberType == 0 {
		// KIP-1099 (v1+): a classic-protocol member of the group.
		x += " type=classic"
	}
	return x
}

// formatShareHeartbeat renders a ShareGroupHeartbeat response as
// formatConsumerHeartbeat renders a ConsumerGroupHeartbeat one.
func formatShareHeartbeat(r *kmsg.ShareGroupHeartbeatResponse, n Norm) string {
	var assigned tpList
	if r.Assignment != nil {
		assigned = func(add func(string, []int32)) {
			for _, t := range r.Assignment.TopicPartitions {
				add(n.TopicName(t.TopicID), t.Partitions)
			}
		}
	}
	return formatHeartbeat("share-heartbeat", r.ErrorCode, r.ErrorMessage, r.MemberID, r.MemberEpoch, r.HeartbeatIntervalMillis, assigned, n)
}

// formatShareDescribe renders a ShareGroupDescribe response: each group, a
// line a member.
func formatShareDescribe(r *kmsg.ShareGroupDescribeResponse, n Norm, order Order) string {
	var gs []string
	for _, g := range r.Groups {
		var ms []string
		for _, m := range g.Members {
			assigned := tpList(func(add func(string, []int32)) {
				for _, t := range m.Assignment.TopicPartitions {
					add(n.Topic(t.Topic), t.Partitions)
				}
			})
			x := fmt.Sprintf("\n    %s epoch=%d client=%s host=%s assignment=%s subscribed=%s",
				n.Member(m.MemberID), m.MemberEpoch, m.ClientID, n.Host(m.ClientHost), assigned.sorted(), subscribed(m.SubscribedTopicNames, n, order))
			if m.RackID != nil {
				x += " rack=" + *m.RackID
			}
			ms = append(ms, x)
		}
		gs = append(gs, describedGroup(g.GroupID, g.ErrorCode, g.ErrorMessage, g.GroupState, g.GroupEpoch, g.AssignmentEpoch, g.Assignor, ms, n, order))
	}
	order.sort(gs)
	return "share-describe" + strings.Join(gs, "")
}

// describeTPs renders a ConsumerGroupDescribe assignment, always sorted.
func describeTPs(a kmsg.Assignment, n Norm) string {
	return tpList(func(add func(string, []int32)) {
		for _, t := range a.TopicPartitions {
			add(n.Topic(t.Topic), t.Partitions)
		}
	}).sorted()
}

// topicName names a topic of a response: by name, or "id:" and the name
// its id stands for.
func topicName(name string, id [16]byte, n Norm) string {
	if name != "" || id == [16]byte{} {
		return n.Topic(name)
	}
	return "id:" + n.TopicName(id)
}

// meta renders protocol metadata; a ConsumerProtocolSubscription is
// re-encoded with the vector's topic names so that its bytes compare.
func meta(b []byte, n Norm) string {
	if ts, ok := ParseSubscription(b); ok {
		for i := range ts {
			ts[i] = n.Topic(ts[i])
		}
		b = Subscription(ts)
	}
	return Bytes(b)
}

// assignment renders a SyncGroup assignment: a ConsumerProtocolAssignment
// (what a consumer group gives its classic members,
// GMM.prepareAssignment) as its version and sorted partitions,
// "v0[foo/0 foo/1]", anything else with Bytes. Only bytes that re-encode
// exactly count as a ConsumerProtocolAssignment, so a classic leader's
// arbitrary assignment stays bytes.
func assignment(b []byte, n Norm) string {
	var a kmsg.ConsumerMemberAssignment
	if len(b) < 2 || a.ReadFrom(b) != nil || a.Version < 0 || a.Version > 3 || !bytes.Equal(a.AppendTo(nil), b) {
		return Bytes(b)
	}
	return fmt.Sprintf("v%d", a.Version) + tpList(func(add func(string, []int32)) {
		for _, t := range a.Topics {
			add(n.Topic(t.Topic), t.Partitions)
		}
	}).sorted()
}

// Bytes renders bytes as a quoted string when they are printable ASCII,
// else in hex.
func Bytes(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", b)
		}
	}
	return fmt.Sprintf("%q", b)
}

// ErrName is the Kafka name of an error code (UNKNOWN_MEMBER_ID), "" for
// no error.
func ErrName(code int16) string {
	if code == 0 {
		return ""
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return fmt.Sprintf("error(%d)", code)
}

func withErr(code int16, s string) string {
	if e := ErrName(code); e != "" {
		if s == "" {
			return e
		}
		return s + " " + e
	}
	return s
}

// ps renders a nullable string, null as "null".
func ps(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}
