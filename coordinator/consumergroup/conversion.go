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
	// GMM.convertToConsumerGroup answers the rebalance in flight first;
	// what follows may still fail the request.
	hb.rc.Classic.(ClassicUpgrader).CompleteClassicFutures(groupID)
	malformed := errorf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because the embedded consumer protocol is malformed.", groupID)

	gen := cg.Generation
	byID := map[string]*member{}
	var ids []string
	targets := map[string]map[TopicID][]int32{}
	for _, cm := range cg.Members {
		mb, target, err := hb.convertMember(groupID, cg, cm, malformed)
		if err != nil {
			return nil, err
		}
		byID[cm.ID] = mb
		ids = append(ids, cm.ID)
		targets[cm.ID] = target
	}
	// ConsumerGroup.members() iterates a hash map of member ids.
	ids = assignor.JavaHashMapOrder(ids)
	recs := hb.conversionRecords(groupID, gen, ids, byID, targets)

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

// convertMember is ConsumerGroupMember.Builder of a classic member cm of
// group cg (ConsumerGroup.fromClassicGroup): STABLE at the classic
// generation, its last classic assignment both current and target, its
// classic session timeout and protocols kept. It returns the member and its
// target assignment.
func (hb *heartbeat) convertMember(groupID string, cg ClassicGroupSnapshot, cm ClassicMemberSnapshot, malformed error) (*member, map[TopicID][]int32, error) {
	// ClassicGroupMember.metadata(protocolName().get()): a group
	// without a selected protocol, or a member that joined a rebalance
	// in flight without supporting the last one, throws an exception
	// fromClassicGroup does not catch, which the service answers
	// UNKNOWN_SERVER_ERROR.
	// The service answers an unexpected exception without a message.
	if cg.Protocol == "" {
		return nil, nil, errorf(kerr.UnknownServerError, "")
	}
	var meta []byte
	found := false
	for _, p := range cm.Protocols {
		if p.Name == cg.Protocol {
			meta, found = p.Metadata, true
			break
		}
	}
	if !found {
		return nil, nil, errorf(kerr.UnknownServerError, "")
	}
	var sub kmsg.ConsumerMemberMetadata
	if err := sub.ReadFrom(meta); err != nil {
		return nil, nil, malformed
	}
	target, err := hb.classicTarget(groupID, cm.Assignment, malformed)
	if err != nil {
		return nil, nil, err
	}
	gen := cg.Generation
	mb := newMember(cm.ID)
	mb.epoch, mb.prevEpoch, mb.state = gen, gen, records.MemberStable
	mb.instanceID = cm.InstanceID
	mb.rackID = deref(sub.Rack)
	mb.rebalanceTimeoutMs = cm.RebalanceTimeoutMs
	mb.clientID, mb.clientHost = cm.ClientID, cm.ClientHost
	mb.setSubscribed(sortedSet(sub.Topics))
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
	return mb, target, nil
}

// classicTarget reads a classic member's assignment (a
// ConsumerMemberAssignment, possibly empty) as topic → partitions, sorted,
// leaving out topics the cluster no longer has. Assignor user data means a
// custom assignor, which the upgrade refuses.
func (hb *heartbeat) classicTarget(groupID string, assignment []byte, malformed error) (map[TopicID][]int32, error) {
	target := map[TopicID][]int32{}
	if len(assignment) == 0 {
		return target, nil
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(assignment); err != nil {
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
	return target, nil
}

// conversionRecords are the records of ConsumerGroup.createConsumerGroupRecords
// for the converted members byID, in the order ids: member metadata, the
// subscription metadata (or its hash in the epoch record), the group epoch
// gen, the target assignments and their metadata, the current assignments.
func (hb *heartbeat) conversionRecords(groupID string, gen int32, ids []string, byID map[string]*member, targets map[string]map[TopicID][]int32) []records.Record {
	m := hb.m
	counts := map[string]int{}
	for _, mb := range byID {
		for _, n := range mb.subscribed {
			counts[n]++
		}
	}
	names := keys(counts)

	var recs []records.Record
	for _, id := range ids {
		recs = append(recs, m.memberMetadataRecord(groupID, byID[id]))
	}
	var hash int64
	if m.profile.WritesPartitionMetadata {
		recs = append(recs, m.partitionMetadataRecord(groupID, m.subscriptionMetadata(hb.topics, names)))
	} else {
		hash = hb.m.metadataHash(hb.topics, names)
	}
	recs = append(recs, m.epochRecord(groupID, gen, hash))
	for _, id := range ids {
		recs = append(recs, m.targetRecord(groupID, id, targets[id]))
	}
	recs = append(recs, m.targetMetadataRecord(groupID, gen, 0))
	for _, id := range ids {
		recs = append(recs, m.currentRecord(groupID, byID[id]))
	}
	return recs
}

// SetClassicGroups tells the Manager the shell that owns classic groups, so
// that timers and LeaveGroup, which arrive without a RequestContext, can
// downgrade a group (ClassicDowngrader). Heartbeat uses
// RequestContext.Classic when it is set.
func (m *Manager) SetClassicGroups(c ClassicGroups) { m.classic = c }

// maybeDowngrade is GMM.validateOnlineDowngradeWithFencedMembers and the
// records of convertToClassicGroup: when the members mbs leave and only
// classic members remain, the policy allows downgrades and they fit
// group.max.size, it returns the consumer group's tombstones
// (ConsumerGroup.createGroupTombstoneRecords) and the function that has the
// shell build the classic group, with a rebalance so that the members
// rejoin it. Otherwise both are nil.
func (m *Manager) maybeDowngrade(g *group, mbs []*member) ([]records.Record, func() []records.Record) {
	d, ok := m.classic.(ClassicDowngrader)
	if !ok || !m.cfg.downgradeEnabled() {
		return nil, nil
	}
	gone := map[string]bool{}
	goneClassic := 0
	for _, mb := range mbs {
		if cur, ok := g.members[mb.id]; ok && !gone[mb.id] && cur.useClassicProtocol() {
			goneClassic++
		}
		gone[mb.id] = true
	}
	if g.classicMembers-goneClassic == 0 {
		// No classic member would remain, or (below) a consumer-protocol
		// one would: known from the group's count
		// (validateOnlineDowngradeWithFencedMembers) without ordering every
		// member id.
		return nil, nil
	}
	stay := 0
	for id := range gone {
		if _, ok := g.members[id]; ok {
			stay--
		}
	}
	if stay += len(g.members); g.classicMembers-goneClassic != stay {
		return nil, nil
	}
	ids := assignor.JavaHashMapOrder(g.memberIDs())
	var remaining []*member
	for _, id := range ids {
		if gone[id] {
			continue
		}
		mb := g.members[id]
		if !mb.useClassicProtocol() {
			return nil, nil
		}
		remaining = append(remaining, mb)
	}
	if len(remaining) == 0 || len(remaining) > m.cfg.ClassicMaxSize {
		return nil, nil
	}

	var recs []records.Record
	for _, id := range ids {
		recs = append(recs, tombstone(records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: id}))
	}
	for _, id := range ids {
		recs = append(recs, tombstone(records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: id}))
	}
	recs = append(recs, tombstone(records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: g.id}))
	for _, id := range ids {
		recs = append(recs, tombstone(records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: id}))
	}
	recs = append(recs, g.regexTombstones()...)
	recs = append(recs,
		tombstone(records.ConsumerGroupPartitionMetadataKey{GroupID: g.id}),
		tombstone(records.ConsumerGroupMetadataKey{GroupID: g.id}),
	)

	snap := m.classicSnapshot(g, remaining, func(id string) map[TopicID][]int32 { return g.target[id] })
	groupID := g.id
	return recs, func() []records.Record {
		m.dropGroupTimers(groupID)
		return d.DowngradeToClassic(snap, true)
	}
}

// classicSnapshot is the classic group ClassicGroup.fromConsumerGroup
// builds from g's members ms (in that order): Stable at the group epoch,
// protocol type "consumer", each member's classic protocols and session
// timeout, and its target assignment (targetOf) by topic name.
func (m *Manager) classicSnapshot(g *group, ms []*member, targetOf func(id string) map[TopicID][]int32) ClassicGroupSnapshot {
	snap := ClassicGroupSnapshot{GroupID: g.id, ProtocolType: ConsumerProtocolType, Generation: g.epoch}
	for _, mb := range ms {
		cm := ClassicMemberSnapshot{
			ID: mb.id, InstanceID: mb.instanceID, ClientID: mb.clientID, ClientHost: mb.clientHost,
			SessionTimeoutMs: mb.classic.SessionTimeoutMs, RebalanceTimeoutMs: mb.rebalanceTimeoutMs,
		}
		for _, p := range mb.classic.SupportedProtocols {
			cm.Protocols = append(cm.Protocols, records.ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
		}
		// toConsumerProtocolAssignment: topics the cluster no longer has
		// are left out.
		for _, tp := range m.javaOrder(targetOf(mb.id)) {
			if name, _, ok := m.lastTopics.TopicByID(tp.Topic); ok {
				cm.Target = append(cm.Target, NamedPartitions{Topic: name, Partitions: slices.Clone(tp.Partitions)})
			}
		}
		snap.Members = append(snap.Members, cm)
	}
	return snap
}

// dropGroupTimers forgets a group's timers once it is no longer a consumer
// group here.
func (m *Manager) dropGroupTimers(groupID string) {
	for k := range m.timers {
		if k.group == groupID {
			delete(m.timers, k)
		}
	}
	delete(m.refreshed, groupID)
}

// downgradeWithReplacedMember is GMM.validateOnlineDowngradeWithReplacedMember
// and the downgrade branch of classicGroupJoinToConsumerGroup: a classic
// static member (updated, built from mb) takes the instance id of replaced,
// the last consumer-protocol member. It appends the records (the member's
// metadata and epoch bump, its reconciliation when the classic group will
// not rebalance, then the consumer group's tombstones with the joining id in
// place of the replaced one, createGroupTombstoneRecordsWithReplacedMember)
// and sets hb.downgrade. ok is false when no downgrade happens.
func (hb *heartbeat) downgradeWithReplacedMember(g *group, replaced, mb, updated *member, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (*member, bool, error) {
	m := hb.m
	d, ok := m.classic.(ClassicDowngrader)
	if !ok || !m.cfg.downgradeEnabled() || len(g.members) > m.cfg.ClassicMaxSize {
		return nil, false, nil
	}
	for _, o := range g.members {
		if o.id != replaced.id && !o.useClassicProtocol() {
			return nil, false, nil
		}
	}
	groupEpoch, _, changed, err := hb.updateMetadata(g, mb, updated)
	if err != nil {
		return nil, false, err
	}
	rebalance := changed
	if m.profile.DowngradeRebalancesOnStaleAssignment {
		rebalance = g.assignmentEpoch < groupEpoch // KAFKA-20273
	}
	reconciled := updated
	if !rebalance {
		var err error
		if reconciled, err = hb.reconcile(g, updated, g.assignmentEpoch, g.targetOf(updated.id, updated.instanceID), changed, owned); err != nil {
			return nil, false, err
		}
	}
	ids := assignor.JavaHashMapOrder(g.memberIDs())
	sub := func(id string) string {
		if id == replaced.id {
			return reconciled.id
		}
		return id
	}
	for _, id := range ids {
		hb.recs = append(hb.recs, tombstone(records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: sub(id)}))
	}
	for _, id := range ids {
		hb.recs = append(hb.recs, tombstone(records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: sub(id)}))
	}
	hb.recs = append(hb.recs, tombstone(records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: g.id}))
	for _, id := range ids {
		hb.recs = append(hb.recs, tombstone(records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: sub(id)}))
	}
	hb.recs = append(hb.recs, g.regexTombstones()...)
	hb.recs = append(hb.recs,
		tombstone(records.ConsumerGroupPartitionMetadataKey{GroupID: g.id}),
		tombstone(records.ConsumerGroupMetadataKey{GroupID: g.id}),
	)

	// ClassicGroup.fromConsumerGroup: the other members, then the joining
	// one with the replaced member's target.
	var ms []*member
	for _, id := range ids {
		if o := g.members[id]; o.instanceID != reconciled.instanceID {
			ms = append(ms, o)
		}
	}
	ms = append(ms, reconciled)
	snap := m.classicSnapshot(g, ms, func(id string) map[TopicID][]int32 {
		if id == reconciled.id {
			return g.target[replaced.id]
		}
		return g.target[id]
	})
	groupID := g.id
	hb.downgrade = func() []records.Record {
		m.dropGroupTimers(groupID)
		return d.DowngradeToClassic(snap, rebalance)
	}
	return reconciled, true, nil
}
