package coordinator

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
)

// This file holds the rebalance machinery of classic groups that several
// APIs and timers share: GroupMetadataManager's prepareRebalance,
// completeClassicGroupJoin, the initial-rebalance delay, heartbeat and
// pending-sync expiry, and assignment propagation (4.4 branch, GMM lines
// ~7120–8100). Method names follow the Java ones.

// LookupClassic implements ClassicGroups.
func (c *Coordinator) LookupClassic(groupID string) (exists, empty bool) {
	g := c.classic[groupID]
	if g == nil {
		return false, false
	}
	return true, g.in(Empty)
}

// ConvertEmptyClassic implements ClassicGroups (GMM.maybeDeleteEmptyClassicGroup).
func (c *Coordinator) ConvertEmptyClassic(groupID string) []records.Record {
	g := c.classic[groupID]
	if g == nil || !g.in(Empty) {
		return nil
	}
	return c.deleteConverted(g)
}

// deleteConverted deletes g and returns its tombstones. The engine returns
// them with its own records, so they are not added to this call's records
// (c.written) but kept as converted.
func (c *Coordinator) deleteConverted(g *classicGroup) []records.Record {
	before := len(c.written)
	c.deleteClassicGroup(g)
	out := append([]records.Record(nil), c.written[before:]...)
	c.written = c.written[:before]
	c.converted = append(c.converted, out...)
	return out
}

// ClassicForUpgrade implements consumergroup.ClassicUpgrader: the live
// classic group, members in their join order, as
// GMM.convertToConsumerGroup reads it (ConsumerGroup.fromClassicGroup).
func (c *Coordinator) ClassicForUpgrade(groupID string) (consumergroup.ClassicGroupSnapshot, bool) {
	g := c.classic[groupID]
	if g == nil {
		return consumergroup.ClassicGroupSnapshot{}, false
	}
	out := consumergroup.ClassicGroupSnapshot{GroupID: g.id, Generation: g.generation}
	if g.protocolType != nil {
		out.ProtocolType = *g.protocolType
	}
	if g.protocolName != nil {
		out.Protocol = *g.protocolName
	}
	for _, m := range g.allMembers() {
		cm := consumergroup.ClassicMemberSnapshot{
			ID: m.id, ClientID: m.clientID, ClientHost: m.clientHost,
			SessionTimeoutMs: m.sessionTimeoutMs, RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			Assignment: slices.Clone(m.assignment),
		}
		if m.instanceID != nil {
			cm.InstanceID = *m.instanceID
		}
		for _, p := range m.protocols {
			cm.Protocols = append(cm.Protocols, records.ClassicProtocol{Name: p.name, Metadata: slices.Clone(p.metadata)})
		}
		out.Members = append(out.Members, cm)
	}
	return out, true
}

// CompleteClassicFutures implements consumergroup.ClassicUpgrader
// (ClassicGroup.completeAllJoinFutures and completeAllSyncFutures): every
// parked JoinGroup and SyncGroup of the group is answered
// REBALANCE_IN_PROGRESS; the group itself does not change state.
func (c *Coordinator) CompleteClassicFutures(groupID string) {
	g := c.classic[groupID]
	if g == nil {
		return
	}
	for _, m := range g.allMembers() {
		if m.awaitingJoin.waiting() {
			c.complete(m.awaitingJoin, joinError(m.id, kerr.RebalanceInProgress))
			m.awaitingJoin = parked{}
			g.numAwaitingJoin--
		}
		if m.awaitingSync.waiting() {
			resp := kmsg.NewPtrSyncGroupResponse()
			resp.ErrorCode = kerr.RebalanceInProgress.Code
			c.complete(m.awaitingSync, resp)
			m.awaitingSync = parked{}
		}
	}
}

// ConvertClassic implements consumergroup.ClassicUpgrader
// (GMM.convertToConsumerGroup): the parked JoinGroup and SyncGroup
// requests of the group are answered REBALANCE_IN_PROGRESS, so that the
// members rejoin the consumer group, and the group is deleted; its
// tombstone is returned for the engine to write first.
func (c *Coordinator) ConvertClassic(groupID string) []records.Record {
	g := c.classic[groupID]
	if g == nil {
		return nil
	}
	c.CompleteClassicFutures(groupID)
	return c.deleteConverted(g)
}

// DowngradeToClassic implements consumergroup.ClassicDowngrader
// (GMM.convertToClassicGroup, ClassicGroup.fromConsumerGroup): the group
// comes back Stable at the consumer group's epoch with the protocol its
// members vote for, each member's target assignment serialized with the
// ConsumerProtocol version of its metadata for that protocol; its
// GroupMetadata record is written, every member's heartbeat armed and, if
// asked, a rebalance prepared.
func (c *Coordinator) DowngradeToClassic(snap consumergroup.ClassicGroupSnapshot, rebalance bool) []records.Record {
	if len(snap.Members) == 0 {
		return nil
	}
	id := snap.GroupID
	g := newClassicGroup(id, c.now)
	g.state, g.previousState = Stable, Empty
	g.generation = snap.Generation
	for _, sm := range snap.Members {
		m := &classicMember{
			id: sm.ID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			rebalanceTimeoutMs: sm.RebalanceTimeoutMs, sessionTimeoutMs: sm.SessionTimeoutMs,
			protocolType: snap.ProtocolType,
		}
		if sm.InstanceID != "" {
			inst := sm.InstanceID
			m.instanceID = &inst
		}
		for _, p := range sm.Protocols {
			m.protocols = append(m.protocols, protocol{name: p.Name, metadata: slices.Clone(p.Metadata)})
		}
		g.add(m, parked{})
	}
	pt := snap.ProtocolType
	g.protocolType = &pt
	name := g.selectProtocol()
	g.protocolName = &name
	g.subscribedTopics = g.computeSubscribedTopics()
	for _, m := range g.allMembers() {
		var version int16
		if meta := m.metadata(name); len(meta) >= 2 {
			version = int16(meta[0])<<8 | int16(meta[1])
		}
		a := kmsg.NewConsumerMemberAssignment()
		a.Version = min(max(version, 0), 3)
		for _, sm := range snap.Members {
			if sm.ID != m.id {
				continue
			}
			for _, t := range sm.Target {
				at := kmsg.NewConsumerMemberAssignmentTopic()
				at.Topic, at.Partitions = t.Topic, slices.Clone(t.Partitions)
				a.Topics = append(a.Topics, at)
			}
		}
		m.assignment = a.AppendTo(nil)
	}
	c.classic[id] = g

	before := len(c.written)
	c.write(c.groupMetadataRecord(g, g.groupAssignment()), false)
	for _, m := range g.allMembers() {
		c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
	}
	if rebalance {
		c.prepareRebalance(g)
	}
	out := append([]records.Record(nil), c.written[before:]...)
	c.written = c.written[:before]
	return out
}

// deleteClassicGroup writes the GroupMetadata tombstone and cancels the
// group's timers (createGroupTombstoneRecordsAndCancelTimers); replaying
// the tombstone removes the group.
func (c *Coordinator) deleteClassicGroup(g *classicGroup) {
	c.timers.cancel(joinKey(g.id))
	c.timers.cancel(syncKey(g.id))
	for _, id := range g.members.ordered() {
		c.timers.cancel(heartbeatKey(g.id, id))
	}
	for id := range g.pendingJoin {
		c.timers.cancel(heartbeatKey(g.id, id))
	}
	c.write(records.Record{Key: records.GroupMetadataKey{Group: g.id}}, true)
}

// rescheduleHeartbeat arms the member's session timer.
func (c *Coordinator) rescheduleHeartbeat(g *classicGroup, m *classicMember, timeoutMs int64) {
	group, member := g.id, m.id
	c.timers.schedule(heartbeatKey(group, member), c.now+timeoutMs, func() {
		c.expireHeartbeat(group, member)
	})
}

// expireHeartbeat is GMM.expireClassicGroupMemberHeartbeat.
func (c *Coordinator) expireHeartbeat(groupID, memberID string) {
	g := c.classic[groupID]
	if g == nil || g.in(Dead) {
		return
	}
	if g.pendingJoin[memberID] {
		c.removePendingMemberAndUpdateGroup(g, memberID)
		return
	}
	m := g.member(memberID)
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	c.removeMemberAndUpdateGroup(g, m)
}

// removeMemberAndUpdateGroup is GMM.removeMemberAndUpdateClassicGroup: a
// parked join is answered UNKNOWN_MEMBER_ID so a live client rejoins.
func (c *Coordinator) removeMemberAndUpdateGroup(g *classicGroup, m *classicMember) {
	c.answerJoinError(g, m, "", kerr.UnknownMemberID)
	g.remove(m.id)
	switch {
	case g.in(Stable) || g.in(CompletingRebalance):
		c.maybePrepareRebalanceOrCompleteJoin(g)
	case g.in(PreparingRebalance) && g.hasAllMembersJoined():
		c.completeJoin(g)
	}
}

// removePendingMemberAndUpdateGroup is GMM.removePendingMemberAndUpdateClassicGroup.
func (c *Coordinator) removePendingMemberAndUpdateGroup(g *classicGroup, memberID string) {
	g.remove(memberID)
	if g.in(PreparingRebalance) && g.hasAllMembersJoined() {
		c.completeJoin(g)
	}
}

// answerJoinError completes the member's parked JoinGroup with an error
// (ClassicGroup.completeJoinFuture).
func (c *Coordinator) answerJoinError(g *classicGroup, m *classicMember, memberID string, err *kerr.Error) {
	if !m.awaitingJoin.waiting() {
		return
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.MemberID = memberID
	resp.ErrorCode = err.Code
	p := m.awaitingJoin
	m.awaitingJoin = parked{}
	g.numAwaitingJoin--
	c.complete(p, resp)
}

// maybePrepareRebalanceOrCompleteJoin is GMM.maybePrepareRebalanceOrCompleteJoin.
func (c *Coordinator) maybePrepareRebalanceOrCompleteJoin(g *classicGroup) {
	if g.canRebalance() {
		c.prepareRebalance(g)
	} else {
		c.maybeCompleteJoinPhase(g)
	}
}

// maybeCompleteJoinPhase is GMM.maybeCompleteJoinPhase: the initial
// rebalance only completes on its timer.
func (c *Coordinator) maybeCompleteJoinPhase(g *classicGroup) {
	if !g.in(PreparingRebalance) || g.previousState == Empty || !g.hasAllMembersJoined() {
		return
	}
	c.completeJoin(g)
}

// prepareRebalance is GMM.prepareRebalance.
//
// From Empty the join phase waits group.initial.rebalance.delay.ms and
// again for each member that joined meanwhile, up to the group's rebalance
// timeout in total (tryCompleteInitialRebalanceElseSchedule); otherwise it
// completes as soon as every member has joined, or when the join timer of
// the largest rebalance timeout fires.
func (c *Coordinator) prepareRebalance(g *classicGroup) {
	if g.in(CompletingRebalance) {
		c.resetAndPropagateAssignmentWithError(g, kerr.RebalanceInProgress)
	}
	c.removeSyncExpiration(g)
	initial := g.in(Empty)
	if initial {
		delay := c.cfg.InitialRebalanceDelay.Milliseconds()
		remaining := max(int64(g.rebalanceTimeoutMs())-delay, 0)
		c.scheduleInitialRebalance(g.id, delay, remaining)
	}
	g.transitionTo(PreparingRebalance, c.now)
	if !initial {
		c.maybeCompleteJoinElseSchedule(g)
	}
}

func (c *Coordinator) scheduleInitialRebalance(groupID string, delay, remaining int64) {
	c.timers.schedule(joinKey(groupID), c.now+delay, func() {
		c.tryCompleteInitialRebalanceElseSchedule(groupID, delay, remaining)
	})
}

// tryCompleteInitialRebalanceElseSchedule is the GMM method of that name.
func (c *Coordinator) tryCompleteInitialRebalanceElseSchedule(groupID string, delay, remaining int64) {
	g := c.classic[groupID]
	if g == nil {
		return
	}
	if g.newMemberAdded && remaining != 0 {
		g.newMemberAdded = false
		newDelay := min(c.cfg.InitialRebalanceDelay.Milliseconds(), remaining)
		newRemaining := max(remaining-delay, 0)
		c.scheduleInitialRebalance(groupID, newDelay, newRemaining)
		return
	}
	c.completeJoin(g)
}

// maybeCompleteJoinElseSchedule is the GMM method of that name.
func (c *Coordinator) maybeCompleteJoinElseSchedule(g *classicGroup) {
	if g.hasAllMembersJoined() {
		c.completeJoin(g)
		return
	}
	c.scheduleJoinTimeout(g)
}

func (c *Coordinator) scheduleJoinTimeout(g *classicGroup) {
	groupID := g.id
	c.timers.schedule(joinKey(groupID), c.now+int64(g.rebalanceTimeoutMs()), func() {
		if g := c.classic[groupID]; g != nil {
			c.completeJoin(g)
		}
	})
}

// completeJoin is GMM.completeClassicGroupJoin.
//
// Invariants on return: dynamic members that did not rejoin are gone; if
// anyone had joined, the generation went up by one, the group is in
// CompletingRebalance, every member's join is answered (the leader's with
// the member list) and awaits its sync under a sync timer; if nobody is
// left, the group is Empty at the next generation and a GroupMetadata record
// without members is written.
func (c *Coordinator) completeJoin(g *classicGroup) {
	c.timers.cancel(joinKey(g.id))
	for _, m := range g.allMembers() {
		if !m.awaitingJoin.waiting() && !m.static() {
			g.remove(m.id)
			c.timers.cancel(heartbeatKey(g.id, m.id))
		}
	}
	if g.in(Dead) {
		return
	}
	if !g.maybeElectNewJoinedLeader() && g.members.len() > 0 {
		// Nobody rejoined: wait for the session timeouts to remove them.
		c.scheduleJoinTimeout(g)
		return
	}
	g.initNextGeneration(c.now)
	if g.in(Empty) {
		c.write(c.groupMetadataRecord(g, map[string][]byte{}), false)
		return
	}
	for _, m := range g.allMembers() {
		resp := c.joinResponse(g, m.id)
		if g.isLeader(m.id) {
			resp.Members = c.currentMembers(g)
		}
		p := m.awaitingJoin
		if p.waiting() {
			m.awaitingJoin = parked{}
			g.numAwaitingJoin--
			c.complete(p, resp)
		}
		c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	c.schedulePendingSync(g)
}

// joinResponse is the JoinGroup response of the current generation, without
// the member list.
func (c *Coordinator) joinResponse(g *classicGroup, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.MemberID = memberID
	resp.Generation = g.generation
	resp.Protocol = cloneStr(g.protocolName)
	resp.ProtocolType = cloneStr(g.protocolType)
	if g.leader != nil {
		resp.LeaderID = *g.leader
	}
	return resp
}

// currentMembers is ClassicGroup.currentClassicGroupMembers.
func (c *Coordinator) currentMembers(g *classicGroup) []kmsg.JoinGroupResponseMember {
	out := []kmsg.JoinGroupResponseMember{}
	for _, m := range g.allMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID = m.id
		jm.InstanceID = cloneStr(m.instanceID)
		if g.protocolName != nil {
			jm.ProtocolMetadata = m.metadata(*g.protocolName)
		}
		out = append(out, jm)
	}
	return out
}

// schedulePendingSync arms the sync timer: members that have not sent
// SyncGroup within the rebalance timeout are removed (GMM.expirePendingSync).
func (c *Coordinator) schedulePendingSync(g *classicGroup) {
	groupID, generation := g.id, g.generation
	c.timers.schedule(syncKey(groupID), c.now+int64(g.rebalanceTimeoutMs()), func() {
		c.expirePendingSync(groupID, generation)
	})
}

// expirePendingSync is GMM.expirePendingSync.
func (c *Coordinator) expirePendingSync(groupID string, generation int32) {
	g := c.classic[groupID]
	if g == nil || g.generation != generation {
		return
	}
	if !(g.in(CompletingRebalance) || g.in(Stable)) || len(g.pendingSync) == 0 {
		return
	}
	for _, id := range sortedKeys(g.pendingSync) {
		g.remove(id)
		c.timers.cancel(heartbeatKey(g.id, id))
	}
	c.prepareRebalance(g)
}

// removeSyncExpiration is GMM.removeSyncExpiration.
func (c *Coordinator) removeSyncExpiration(g *classicGroup) {
	clear(g.pendingSync)
	clear(g.replaced)
	c.timers.cancel(syncKey(g.id))
}

// removePendingSyncMember is GMM.removePendingSyncMember.
func (c *Coordinator) removePendingSyncMember(g *classicGroup, memberID string) {
	delete(g.pendingSync, memberID)
	switch g.state {
	case Dead, Empty, PreparingRebalance:
		c.timers.cancel(syncKey(g.id))
	case CompletingRebalance, Stable:
		if len(g.pendingSync) == 0 {
			c.timers.cancel(syncKey(g.id))
		}
	}
}

// resetAndPropagateAssignmentWithError is the GMM method of that name.
func (c *Coordinator) resetAndPropagateAssignmentWithError(g *classicGroup, err *kerr.Error) {
	for _, m := range g.allMembers() {
		m.assignment = []byte{}
	}
	c.propagateAssignment(g, err)
}

// setAndPropagateAssignment is the GMM method of that name.
func (c *Coordinator) setAndPropagateAssignment(g *classicGroup, assignment map[string][]byte) {
	for _, m := range g.allMembers() {
		if a, ok := assignment[m.id]; ok {
			m.assignment = a
		} else {
			m.assignment = []byte{}
		}
	}
	c.propagateAssignment(g, nil)
}

// propagateAssignment is GMM.propagateAssignment: every parked SyncGroup is
// answered, and its member's session restarts.
func (c *Coordinator) propagateAssignment(g *classicGroup, err *kerr.Error) {
	for _, m := range g.allMembers() {
		if !m.awaitingSync.waiting() {
			continue
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		if err != nil {
			resp.ErrorCode = err.Code
		} else {
			resp.Protocol = cloneStr(g.protocolName)
			resp.ProtocolType = cloneStr(g.protocolType)
		}
		resp.MemberAssignment = m.assignment
		p := m.awaitingSync
		m.awaitingSync = parked{}
		c.complete(p, resp)
		c.rescheduleHeartbeat(g, m, int64(m.sessionTimeoutMs))
	}
}

// acceptJoiningMember is GMM.acceptJoiningMember (group.max.size).
func (c *Coordinator) acceptJoiningMember(g *classicGroup, memberID string) bool {
	max := c.cfg.maxGroupSize()
	switch g.state {
	case PreparingRebalance:
		m := g.member(memberID)
		return (m != nil && m.awaitingJoin.waiting()) || g.numAwaitingJoin < max
	case CompletingRebalance, Stable:
		return g.members.has(memberID) || g.members.len() < max
	}
	return true
}

// groupMetadataRecord is GroupCoordinatorRecordHelpers.newGroupMetadataRecord.
func (c *Coordinator) groupMetadataRecord(g *classicGroup, assignment map[string][]byte) records.Record {
	v := &records.GroupMetadataValue{}
	v.Version = c.profile.GroupMetadataValueVersion
	if g.protocolType != nil {
		v.ProtocolType = *g.protocolType
	}
	v.Generation = g.generation
	v.Protocol = cloneStr(g.protocolName)
	v.Leader = cloneStr(g.leader)
	v.CurrentStateTimestamp = g.currentStateTimestamp
	v.Members = []kmsg.GroupMetadataValueMember{}
	for _, m := range g.allMembers() {
		gm := kmsg.NewGroupMetadataValueMember()
		gm.MemberID, gm.InstanceID, gm.ClientID, gm.ClientHost = m.names()
		gm.RebalanceTimeoutMillis = m.rebalanceTimeoutMs
		gm.SessionTimeoutMillis = m.sessionTimeoutMs
		if g.protocolName != nil {
			gm.Subscription = m.metadata(*g.protocolName)
		}
		gm.Assignment = assignment[m.id]
		if gm.Assignment == nil {
			gm.Assignment = []byte{}
		}
		v.Members = append(v.Members, gm)
	}
	return records.Record{Key: records.GroupMetadataKey{Group: g.id}, Value: v}
}

// emptyGroupMetadataRecord is GroupCoordinatorRecordHelpers.newEmptyGroupMetadataRecord,
// written when JoinGroup creates a group and has nothing else to write.
func (c *Coordinator) emptyGroupMetadataRecord(g *classicGroup) records.Record {
	v := &records.GroupMetadataValue{}
	v.Version = c.profile.GroupMetadataValueVersion
	v.CurrentStateTimestamp = g.currentStateTimestamp
	v.Members = []kmsg.GroupMetadataValueMember{}
	return records.Record{Key: records.GroupMetadataKey{Group: g.id}, Value: v}
}

func cloneStr(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}
