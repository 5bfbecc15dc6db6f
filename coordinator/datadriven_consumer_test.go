package coordinator

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/datadriven"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/vectors"
)

// This file holds the commands and output forms of the consumer-protocol
// vectors (testdata/consumer): ConsumerGroupHeartbeat and
// ConsumerGroupDescribe served through the shell, and the KIP-848 records
// (types 3–8 and 16) in short form.

func currentTPs(ts []records.CurrentAssignmentTopic) string {
	var parts []string
	for _, t := range ts {
		for i, p := range t.Partitions {
			x := fmt.Sprintf("%s/%d", vectors.TopicName(t.TopicID), p)
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
	case records.ConsumerGroupRegularExpressionKey:
		head = fmt.Sprintf("ConsumerGroupRegularExpression %s %q", k.GroupID, k.RegularExpression)
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
		if v.SubscribedTopicRegex != nil && *v.SubscribedTopicRegex != "" {
			body += fmt.Sprintf(" regex=%q", *v.SubscribedTopicRegex)
		}
		if v.InstanceID != nil {
			body += " instance=" + *v.InstanceID
		}
		if v.RackID != nil {
			body += " rack=" + *v.RackID
		}
		if v.ServerAssignor != nil {
			body += " assignor=" + *v.ServerAssignor
		}
		if c := v.ClassicMemberMetadata; c != nil {
			// A classic member of the consumer group: its session timeout
			// and protocol names (the subscription bytes are in `state`).
			var names []string
			for _, p := range c.SupportedProtocols {
				names = append(names, p.Name)
			}
			body += fmt.Sprintf(" classic(session=%d protocols=[%s])", c.SessionTimeoutMs, strings.Join(names, " "))
		}
	case *records.ConsumerGroupTargetAssignmentMemberValue:
		var parts []string
		for _, t := range v.TopicPartitions {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d", vectors.TopicName(t.TopicID), p))
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
	case *records.ConsumerGroupRegularExpressionValue:
		body = fmt.Sprintf("[%s] version=%d ts=%d", strings.Join(v.Topics, " "), v.Version, v.Timestamp)
	default:
		body = fmt.Sprintf("%+v", v)
	}
	return head + " " + body, true
}

// consumerManager is the coordinator's consumer-group engine (the default
// one: every vector runs it).
func (e *env) consumerManager() *consumergroup.Manager {
	mg, ok := e.c.consumer.(managerGroups)
	if !ok {
		e.t.Fatalf("the coordinator's consumer-group engine is %T, not the default Manager", e.c.consumer)
	}
	return mg.m
}

// checkInvariants holds the live consumer groups to the partition-ownership
// invariants after every command (consumergroup.CheckInvariants).
func (e *env) checkInvariants(d *datadriven.TestData) {
	if e.c == nil {
		return
	}
	if err := consumergroup.CheckInvariants(e.consumerManager().State()); err != nil {
		e.t.Errorf("%s: after %q: %v", d.Pos, d.Cmd, err)
	}
}
