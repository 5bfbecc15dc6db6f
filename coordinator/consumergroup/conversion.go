package consumergroup

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/records"
)

// upgrade is GMM.validateOnlineUpgrade and convertToConsumerGroup for the
// classic group groupID, which has members and which a ConsumerGroupHeartbeat
// joining it wants to make a consumer group. It appends the records of
// ConsumerGroup.createConsumerGroupRecords to hb.recs (the shell's
// GroupMetadata tombstone goes before them once the request succeeds) and
// returns the converted group, not yet stored: as in Kafka, the heartbeat
// carries on with it and the replay of all the records creates it.
//
// Every member becomes STABLE at the classic generation, with its last
// classic assignment as both current and target assignment
// (ConsumerGroup.fromClassicGroup), and keeps its classic session timeout.
func (hb *heartbeat) upgrade(groupID string) (*group, error) {
	m := hb.m
	cg, ok := hb.rc.Classic.(ClassicUpgrader).ClassicForUpgrade(groupID)
	if !ok {
		return nil, errorf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", groupID)
	}
	switch {
	case !m.cfg.upgradeEnabled():
		return nil, errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because online upgrade is disabled.", groupID)
	case cg.ProtocolType != ConsumerProtocolType:
		return nil, errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because the group does not use the consumer embedded protocol.", groupID)
	case len(cg.Members) > m.cfg.MaxSize:
		return nil, errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because the group size exceeds the consumer group maximum size.", groupID)
	}
	malformed := errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because the embedded consumer protocol is malformed.", groupID)

	gen := cg.Generation
	byID := map[string]*member{}
	var ids []string
	targets := map[string]map[TopicID][]int32{}
	for _, cm := range cg.Members {
		var meta []byte
		for _, p := range cm.Protocols {
			if p.Name == cg.Protocol {
				meta = p.Metadata
				break
			}
		}
		var sub kmsg.ConsumerMemberMetadata
		if err := sub.ReadFrom(meta); err != nil {
			return nil, malformed
		}
		target := map[TopicID][]int32{}
		if len(cm.Assignment) > 0 {
			var a kmsg.ConsumerMemberAssignment
			if err := a.ReadFrom(cm.Assignment); err != nil {
				return nil, malformed
			}
			if len(a.UserData) > 0 {
				return nil, errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.", groupID)
			}
			// toTopicPartitionMap: topics the cluster no longer has are
			// left out.
			for _, t := range a.Topics {
				if id, _, ok := hb.topics.TopicByName(t.Topic); ok {
					ps := append(target[id], t.Partitions...)
					slices.Sort(ps)
					target[id] = slices.Compact(ps)
				}
			}
		}
		mb := newMember(cm.ID)
		mb.epoch, mb.prevEpoch, mb.state = gen, gen, records.MemberStable
		mb.instanceID = cm.InstanceID
		mb.rackID = deref(sub.Rack)
		mb.rebalanceTimeoutMs = cm.RebalanceTimeoutMs
		mb.clientID, mb.clientHost = cm.ClientID, cm.ClientHost
		mb.subscribed = sortedSet(sub.Topics)
		for t, ps := range target {
			mb.assigned[t] = map[int32]int32{}
			for _, p := range ps {
				mb.assigned[t][p] = gen
			}
		}
		mb.classic = &records.ClassicMemberMetadata{SessionTimeoutMs: cm.SessionTimeoutMs}
		for _, p := range cm.Protocols {
			mb.classic.SupportedProtocols = append(mb.classic.SupportedProtocols, records.ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
		}
		byID[cm.ID] = mb
		ids = append(ids, cm.ID)
		targets[cm.ID] = target
	}
	// ConsumerGroup.members() iterates a hash map of member ids.
	ids = assignor.JavaHashMapOrder(ids)

	counts := map[string]int{}
	for _, mb := range byID {
		for _, n := range mb.subscribed {
			counts[n]++
		}
	}
	names := keys(counts)

	// ConsumerGroup.createConsumerGroupRecords.
	var recs []records.Record
	for _, id := range ids {
		recs = append(recs, m.memberMetadataRecord(groupID, byID[id]))
	}
	var hash int64
	if m.profile.WritesPartitionMetadata {
		recs = append(recs, m.partitionMetadataRecord(groupID, m.subscriptionMetadata(hb.topics, names)))
	} else {
		hash = metadataHash(hb.topics, names)
	}
	recs = append(recs, m.epochRecord(groupID, gen, hash))
	for _, id := range ids {
		recs = append(recs, m.targetRecord(groupID, id, targets[id]))
	}
	recs = append(recs, m.targetMetadataRecord(groupID, gen, 0))
	for _, id := range ids {
		recs = append(recs, m.currentRecord(groupID, byID[id]))
	}

	// The converted group is what replaying those records builds.
	tmp := replayer{groups: map[string]*group{}, initialEpoch: m.profile.InitialGroupEpoch, keepsEpochs: m.profile.AssignmentEpochs}
	for _, r := range recs {
		if err := tmp.apply(r); err != nil {
			return nil, errorf(kerr.UnknownServerError, "converting classic group %s: %v", groupID, err)
		}
	}
	hb.recs = append(hb.recs, recs...)
	for _, id := range ids {
		id, sessionMs := id, byID[id].classic.SessionTimeoutMs
		hb.after = append(hb.after, func() { m.scheduleSessionFor(hb.now, groupID, id, sessionMs) })
	}
	return tmp.groups[groupID], nil
}
