package coordinator

import (
	"fmt"
	"strings"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/vectors"
)

// shareTPs renders share-group topic partitions as foo/0 foo/1 (topic
// names for ids, vectors.TopicName).
func shareTPs(tps []sharegroup.TopicPartitions) string {
	var parts []string
	for _, t := range tps {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d", vectors.TopicName(t.TopicID), p))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func shareInfos(tis []sharegroup.TopicInfo) string {
	var parts []string
	for _, t := range tis {
		s := t.TopicName
		if t.Partitions != nil {
			s += fmt.Sprintf(":%v", t.Partitions)
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// fmtShareRecord renders a share-group record (types 10–15), decoded by
// package sharegroup as the recovery oracle decodes it.
func fmtShareRecord(r records.Record) (string, bool) {
	k, ok := r.Key.(records.OtherKey)
	if !ok || !isShareRecordType(k.Type) {
		return "", false
	}
	key := append([]byte{byte(k.Type >> 8), byte(k.Type)}, k.Raw...)
	var value []byte
	if ov, ok := r.Value.(*records.OtherValue); ok {
		value = ov.Raw
	}
	gr, err := sharegroup.DecodeGroupRecord(key, value)
	if err != nil {
		return fmt.Sprintf("%s undecodable: %v", r.Type(), err), true
	}
	name := records.Type(gr.Type).String()
	who := gr.GroupID
	if gr.MemberID != "" {
		who += "/" + gr.MemberID
	}
	if gr.Value == nil {
		return name + " " + who + " tombstone", true
	}
	switch v := gr.Value.(type) {
	case *sharegroup.MemberMetadataValue:
		s := fmt.Sprintf("%s %s subscribed=%v client=%s host=%s", name, who, v.SubscribedTopicNames, v.ClientID, v.ClientHost)
		if v.RackID != nil {
			s += " rack=" + *v.RackID
		}
		return s, true
	case *sharegroup.GroupMetadataValue:
		hash := "0"
		if v.MetadataHash != 0 {
			hash = "set"
		}
		return fmt.Sprintf("%s %s epoch=%d hash=%s", name, who, v.Epoch, hash), true
	case *sharegroup.TargetAssignmentMetadataValue:
		s := fmt.Sprintf("%s %s epoch=%d", name, who, v.AssignmentEpoch)
		if v.AssignmentTimestamp != 0 {
			s += fmt.Sprintf(" ts=%d", v.AssignmentTimestamp)
		}
		return s, true
	case *sharegroup.TargetAssignmentMemberValue:
		return fmt.Sprintf("%s %s %s", name, who, shareTPs(v.TopicPartitions)), true
	case *sharegroup.CurrentMemberAssignmentValue:
		return fmt.Sprintf("%s %s %s epoch=%d prev=%d assigned=%s", name, who, records.MemberState(v.State), v.MemberEpoch, v.PreviousMemberEpoch, shareTPs(v.AssignedPartitions)), true
	case *sharegroup.StatePartitionMetadataValue:
		return fmt.Sprintf("%s %s initializing=%s initialized=%s deleting=%s", name, who, shareInfos(v.InitializingTopics), shareInfos(v.InitializedTopics), shareInfos(v.DeletingTopics)), true
	}
	return "", false
}
