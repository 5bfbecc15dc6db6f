package coordinator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// This file holds the commands and output forms of the consumer-protocol
// vectors (testdata/consumer): ConsumerGroupHeartbeat and
// ConsumerGroupDescribe served through the shell, and the KIP-848 records
// (types 3–8) in short form.

// consumer-group-heartbeat group=g member= epoch= [subscribe=(t,…)] [owned=(t/0,…)]
// [instance=] [rack=] [assignor=] [rebalance=60s] [v=1] [client=c]
//
// A join (epoch=0) sends the rebalance timeout and an empty owned list, as
// the Java consumer does; other heartbeats send neither unless asked
// (owned=() sends an empty list, no owned sends null).
func (e *env) consumerHeartbeatReq(d *datadriven.TestData) kmsg.Request {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = e.version(d, 1)
	r.Group = e.arg(d, "group", "g")
	r.MemberID = e.arg(d, "member", "")
	r.MemberEpoch = int32(e.int(d, "epoch", 0))
	r.InstanceID = e.optArg(d, "instance")
	r.RackID = e.optArg(d, "rack")
	r.ServerAssignor = e.optArg(d, "assignor")
	r.RebalanceTimeoutMillis = -1
	if r.MemberEpoch == 0 {
		r.RebalanceTimeoutMillis = 60000
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if d.HasArg("rebalance") {
		r.RebalanceTimeoutMillis = int32(e.dur(d, "rebalance", 0).Milliseconds())
	}
	if d.HasArg("subscribe") {
		r.SubscribedTopicNames = nonEmpty(e.list(d, "subscribe"))
	}
	if d.HasArg("owned") {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, tp := range nonEmpty(e.list(d, "owned")) {
			topic, p := splitTP(e.t, tp)
			id := topicID(topic)
			i := slices.IndexFunc(r.Topics, func(x kmsg.ConsumerGroupHeartbeatRequestTopic) bool { return x.TopicID == id })
			if i < 0 {
				r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id})
				i = len(r.Topics) - 1
			}
			r.Topics[i].Partitions = append(r.Topics[i].Partitions, p)
		}
	}
	return r
}

// nonEmpty turns the list "()" (one empty value) into an empty list.
func nonEmpty(vs []string) []string {
	out := []string{}
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// idName renders a topic id the vectors made with topicID as its name.
func idName(id [16]byte) string {
	if id[0] == 'T' {
		return strings.TrimRight(string(id[1:]), "\x00")
	}
	return fmt.Sprintf("%x", id)
}

func fmtConsumerHeartbeat(r *kmsg.ConsumerGroupHeartbeatResponse) string {
	if r.ErrorCode != 0 {
		return fmt.Sprintf("consumer-heartbeat %s %s", errName(r.ErrorCode), ps(r.ErrorMessage))
	}
	s := fmt.Sprintf("consumer-heartbeat member=%s epoch=%d interval=%dms", ps(r.MemberID), r.MemberEpoch, r.HeartbeatIntervalMillis)
	if r.Assignment != nil {
		var parts []string
		for _, t := range r.Assignment.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d", idName(t.TopicID), p))
			}
		}
		slices.Sort(parts)
		s += " assignment=[" + strings.Join(parts, " ") + "]"
	}
	return s
}

func fmtConsumerDescribe(r *kmsg.ConsumerGroupDescribeResponse) string {
	s := "consumer-describe"
	for _, g := range r.Groups {
		if g.ErrorCode != 0 {
			s += fmt.Sprintf("\n  %s %s %s", g.Group, errName(g.ErrorCode), ps(g.ErrorMessage))
			continue
		}
		s += fmt.Sprintf("\n  %s state=%s epoch=%d assignment-epoch=%d assignor=%s", g.Group, g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName)
		for _, m := range g.Members {
			s += fmt.Sprintf("\n    %s epoch=%d client=%s host=%s assignment=%s target=%s subscribed=[%s]",
				m.MemberID, m.MemberEpoch, m.ClientID, m.ClientHost, describeTPs(m.Assignment), describeTPs(m.TargetAssignment), strings.Join(m.SubscribedTopics, " "))
			if m.InstanceID != nil {
				s += " instance=" + *m.InstanceID
			}
		}
	}
	return s
}

func describeTPs(a kmsg.Assignment) string {
	var parts []string
	for _, t := range a.TopicPartitions {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d", t.Topic, p))
		}
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func currentTPs(ts []records.CurrentAssignmentTopic) string {
	var parts []string
	for _, t := range ts {
		for i, p := range t.Partitions {
			x := fmt.Sprintf("%s/%d", idName(t.TopicID), p)
			if i < len(t.AssignmentEpochs) {
				x += fmt.Sprintf("@%d", t.AssignmentEpochs[i])
			}
			parts = append(parts, x)
		}
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

// fmtConsumerRecord renders a consumer-group record (types 3–8) in one
// line; ok is false for other records.
func fmtConsumerRecord(r records.Record) (string, bool) {
	var head string
	switch k := r.Key.(type) {
	case records.ConsumerGroupMetadataKey:
		head = "ConsumerGroupMetadata " + k.GroupID
	case records.ConsumerGroupPartitionMetadataKey:
		head = "ConsumerGroupPartitionMetadata " + k.GroupID
	case records.ConsumerGroupMemberMetadataKey:
		head = "ConsumerGroupMemberMetadata " + k.GroupID + "/" + k.MemberID
	case records.ConsumerGroupTargetAssignmentMetadataKey:
		head = "ConsumerGroupTargetAssignmentMetadata " + k.GroupID
	case records.ConsumerGroupTargetAssignmentMemberKey:
		head = "ConsumerGroupTargetAssignmentMember " + k.GroupID + "/" + k.MemberID
	case records.ConsumerGroupCurrentMemberAssignmentKey:
		head = "ConsumerGroupCurrentMemberAssignment " + k.GroupID + "/" + k.MemberID
	default:
		return "", false
	}
	if r.Value == nil {
		return head + " tombstone", true
	}
	var body string
	switch v := r.Value.(type) {
	case *records.ConsumerGroupMetadataValue:
		body = fmt.Sprintf("epoch=%d", v.Epoch)
		if v.MetadataHash != 0 {
			body += " hash=set"
		}
	case *records.ConsumerGroupPartitionMetadataValue:
		var ts []string
		for _, t := range v.Topics {
			ts = append(ts, fmt.Sprintf("%s=%d", t.TopicName, t.NumPartitions))
		}
		body = "[" + strings.Join(ts, " ") + "]"
	case *records.ConsumerGroupMemberMetadataValue:
		body = fmt.Sprintf("subscribed=[%s] rebalance=%d client=%s host=%s", strings.Join(v.SubscribedTopicNames, " "), v.RebalanceTimeoutMs, v.ClientID, v.ClientHost)
		if v.InstanceID != nil {
			body += " instance=" + *v.InstanceID
		}
	case *records.ConsumerGroupTargetAssignmentMemberValue:
		var parts []string
		for _, t := range v.TopicPartitions {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d", idName(t.TopicID), p))
			}
		}
		slices.Sort(parts)
		body = "[" + strings.Join(parts, " ") + "]"
	case *records.ConsumerGroupTargetAssignmentMetadataValue:
		body = fmt.Sprintf("epoch=%d", v.AssignmentEpoch)
		if v.AssignmentTimestamp != 0 {
			body += fmt.Sprintf(" ts=%d", v.AssignmentTimestamp)
		}
	case *records.ConsumerGroupCurrentMemberAssignmentValue:
		body = fmt.Sprintf("%s epoch=%d prev=%d assigned=%s", v.State, v.MemberEpoch, v.PreviousMemberEpoch, currentTPs(v.AssignedPartitions))
		if len(v.PartitionsPendingRevocation) > 0 {
			body += " revoking=" + currentTPs(v.PartitionsPendingRevocation)
		}
	default:
		body = fmt.Sprintf("%+v", v)
	}
	return head + " " + body, true
}
