package differential

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// norm maps what one side answered back to the names the vector writes:
// the reference's answers pass unchanged (but for its "T"+name topic ids);
// a target's lose the section's namespace and get the reference's member
// ids in place of the ones the target generated.
type norm interface {
	member(string) string
	group(string) string
	topic(string) string
	topicID([16]byte) string
	text(string) string
	host(string) string
}

// format renders a response in the vectors' canonical form
// (coordinator/datadriven_test.go fmtResponse) with one change: every list
// whose order is a hash-map iteration order in Kafka (members, partitions,
// groups) is sorted, because the target hashes its own member ids and
// namespaced names, so only the set can be compared. The order of LeaveGroup's
// members, which follows the request, is kept.
func format(r kmsg.Response, n norm) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		s := fmt.Sprintf("join member=%s", n.member(r.MemberID))
		if r.ErrorCode == 0 {
			s += fmt.Sprintf(" gen=%d type=%s proto=%s leader=%s", r.Generation, ps(r.ProtocolType), ps(r.Protocol), n.member(r.LeaderID))
			if r.SkipAssignment {
				s += " skip-assignment"
			}
			if len(r.Members) > 0 {
				var ms []string
				for _, m := range r.Members {
					x := n.member(m.MemberID)
					if m.InstanceID != nil {
						x += "/" + *m.InstanceID
					}
					ms = append(ms, x+":"+fmtMeta(m.ProtocolMetadata, n))
				}
				slices.Sort(ms)
				s += " members=(" + strings.Join(ms, ", ") + ")"
			}
		}
		return withErr(r.ErrorCode, s)
	case *kmsg.SyncGroupResponse:
		if r.ErrorCode != 0 {
			return "sync " + errName(r.ErrorCode)
		}
		return fmt.Sprintf("sync type=%s proto=%s assignment=%s", ps(r.ProtocolType), ps(r.Protocol), fmtBytes(r.MemberAssignment))
	case *kmsg.HeartbeatResponse:
		return withErr(r.ErrorCode, "heartbeat")
	case *kmsg.LeaveGroupResponse:
		s := withErr(r.ErrorCode, "leave")
		for _, m := range r.Members {
			x := n.member(m.MemberID)
			if m.InstanceID != nil {
				x += "/" + *m.InstanceID
			}
			if e := errName(m.ErrorCode); e != "" {
				x += " " + e
			}
			s += "\n  " + x
		}
		return s
	case *kmsg.DescribeGroupsResponse:
		// Groups are sorted too: a broker answers shard by shard.
		var gs []string
		for _, g := range r.Groups {
			x := fmt.Sprintf("\n  %s state=%s type=%q proto=%q", n.group(g.Group), g.State, g.ProtocolType, g.Protocol)
			if g.ErrorCode != 0 {
				x += " " + errName(g.ErrorCode)
			}
			var ms []string
			for _, m := range g.Members {
				ms = append(ms, fmt.Sprintf("\n    %s instance=%s client=%s host=%s metadata=%s assignment=%s",
					n.member(m.MemberID), ps(m.InstanceID), m.ClientID, n.host(m.ClientHost), fmtMeta(m.ProtocolMetadata, n), fmtBytes(m.MemberAssignment)))
			}
			slices.Sort(ms)
			gs = append(gs, x+strings.Join(ms, ""))
		}
		slices.Sort(gs)
		return "describe" + strings.Join(gs, "")
	case *kmsg.ListGroupsResponse:
		s := withErr(r.ErrorCode, "list")
		var gs []string
		for _, g := range r.Groups {
			gs = append(gs, fmt.Sprintf("\n  %s type=%s state=%s protocol-type=%q", n.group(g.Group), g.GroupType, g.GroupState, g.ProtocolType))
		}
		slices.Sort(gs)
		return s + strings.Join(gs, "")
	case *kmsg.DeleteGroupsResponse:
		// Sorted: a broker answers shard by shard.
		var gs []string
		for _, g := range r.Groups {
			x := "\n  " + n.group(g.Group)
			if e := errName(g.ErrorCode); e != "" {
				x += " " + e
			}
			gs = append(gs, x)
		}
		slices.Sort(gs)
		return "delete" + strings.Join(gs, "")
	case *kmsg.OffsetCommitResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				x := fmt.Sprintf("%s/%d", topicName(t.Topic, t.TopicID, n), p.Partition)
				if e := errName(p.ErrorCode); e != "" {
					x += " " + e
				}
				parts = append(parts, x)
			}
		}
		slices.Sort(parts)
		return "commit " + strings.Join(parts, ", ")
	case *kmsg.OffsetFetchResponse:
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
			if e := errName(perr); e != "" {
				x += " " + e
			}
			parts = append(parts, x)
		}
		if r.Version < 8 {
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					add(n.topic(t.Topic), p.Partition, p.LeaderEpoch, p.Offset, p.Metadata, p.ErrorCode)
				}
			}
			slices.Sort(parts)
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
			slices.Sort(parts)
			s += fmt.Sprintf(" %s: %s", n.group(g.Group), withErr(g.ErrorCode, strings.Join(parts, ", ")))
		}
		return s
	case *kmsg.OffsetDeleteResponse:
		var parts []string
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				x := fmt.Sprintf("%s/%d", n.topic(t.Topic), p.Partition)
				if e := errName(p.ErrorCode); e != "" {
					x += " " + e
				}
				parts = append(parts, x)
			}
		}
		slices.Sort(parts)
		return withErr(r.ErrorCode, "offset-delete "+strings.Join(parts, ", "))
	case *kmsg.ConsumerGroupHeartbeatResponse:
		if r.ErrorCode != 0 {
			return fmt.Sprintf("consumer-heartbeat %s %s", errName(r.ErrorCode), n.text(ps(r.ErrorMessage)))
		}
		s := fmt.Sprintf("consumer-heartbeat member=%s epoch=%d interval=%dms", n.member(ps(r.MemberID)), r.MemberEpoch, r.HeartbeatIntervalMillis)
		if r.Assignment != nil {
			var parts []string
			for _, t := range r.Assignment.Topics {
				for _, p := range t.Partitions {
					parts = append(parts, fmt.Sprintf("%s/%d", n.topicID(t.TopicID), p))
				}
			}
			slices.Sort(parts)
			s += " assignment=[" + strings.Join(parts, " ") + "]"
		}
		return s
	case *kmsg.ConsumerGroupDescribeResponse:
		s := "consumer-describe"
		for _, g := range r.Groups {
			if g.ErrorCode != 0 {
				s += fmt.Sprintf("\n  %s %s %s", n.group(g.Group), errName(g.ErrorCode), n.text(ps(g.ErrorMessage)))
				continue
			}
			s += fmt.Sprintf("\n  %s state=%s epoch=%d assignment-epoch=%d assignor=%s", n.group(g.Group), g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName)
			var ms []string
			for _, m := range g.Members {
				var subs []string
				for _, t := range m.SubscribedTopics {
					subs = append(subs, n.topic(t))
				}
				x := fmt.Sprintf("\n    %s epoch=%d client=%s host=%s assignment=%s target=%s subscribed=[%s]",
					n.member(m.MemberID), m.MemberEpoch, m.ClientID, n.host(m.ClientHost), describeTPs(m.Assignment, n), describeTPs(m.TargetAssignment, n), strings.Join(subs, " "))
				if m.InstanceID != nil {
					x += " instance=" + *m.InstanceID
				}
				ms = append(ms, x)
			}
			slices.Sort(ms)
			s += strings.Join(ms, "")
		}
		return s
	}
	return fmt.Sprintf("%T", r)
}

func describeTPs(a kmsg.Assignment, n norm) string {
	var parts []string
	for _, t := range a.TopicPartitions {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d", n.topic(t.Topic), p))
		}
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// topicName names a topic of a response: by name, or "id:" and the name
// its id stands for.
func topicName(name string, id [16]byte, n norm) string {
	if name != "" || id == [16]byte{} {
		return n.topic(name)
	}
	return "id:" + n.topicID(id)
}

// fmtMeta renders protocol metadata; a ConsumerProtocolSubscription is
// re-encoded with the vector's topic names so that its bytes compare.
func fmtMeta(b []byte, n norm) string {
	if ts, ok := parseSubscription(b); ok {
		for i := range ts {
			ts[i] = n.topic(ts[i])
		}
		b = subscription(ts)
	}
	return fmtBytes(b)
}

func fmtBytes(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%x", b)
		}
	}
	return fmt.Sprintf("%q", b)
}

func errName(code int16) string {
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
	if e := errName(code); e != "" {
		if s == "" {
			return e
		}
		return s + " " + e
	}
	return s
}

func ps(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// memberID returns the member id a response hands out, if any: the id a
// target generated that later requests must carry.
func memberID(r kmsg.Response) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		return r.MemberID
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return ps(r.MemberID)
	}
	return ""
}
