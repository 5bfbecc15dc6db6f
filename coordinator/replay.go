package coordinator

import (
	"fmt"
	"time"

	"github.com/groupquake/groupquake/coordinator/records"
)

// Replay applies one record of the log (GroupCoordinatorShard.replay), as
// loading a __consumer_offsets partition does. Offset commits (types 0 and
// 1) and classic group metadata (type 2) are applied here; consumer-group
// records (3–8, 16) go to the consumer-group engine, after an Empty
// classic group of the same id, which only offset commits can have
// created, is dropped (GMM.getOrMaybeCreatePersistedConsumerGroup).
// Share-group records (10–15, which package records leaves as OtherKey)
// go to the share groups (share_groups.go). Streams records (OtherKey) are
// skipped, as Kafka skips record types it does not know.
//
// Replay sets no timers; call Loaded once the whole log is in.
func (c *Coordinator) Replay(r records.Record) error {
	switch k := r.Key.(type) {
	case records.OffsetCommitKey:
		if r.Value == nil {
			return c.ReplayOffsetCommit(k, nil)
		}
		v, ok := r.Value.(*records.OffsetCommitValue)
		if !ok {
			return fmt.Errorf("replay %s record of group %q: value is %T", r.Type(), k.Group, r.Value)
		}
		return c.ReplayOffsetCommit(k, v)
	case records.GroupMetadataKey:
		if r.Value == nil {
			delete(c.classic, k.Group)
			return nil
		}
		v, ok := r.Value.(*records.GroupMetadataValue)
		if !ok {
			return fmt.Errorf("replay GroupMetadata record of group %q: value is %T", k.Group, r.Value)
		}
		if info, ok := c.consumer.Lookup(k.Group); ok {
			// GMM.replay(GroupMetadataKey) puts the classic group in the
			// consumer group's place: a log may hold an empty consumer group
			// and then a classic group without the consumer group's
			// tombstones between them (a JoinGroup with a member id to an
			// empty consumer group: handleJoinGroup). A consumer group with
			// members is never replaced that way.
			if !info.Empty {
				return fmt.Errorf("replay GroupMetadata record of group %q: the group is a consumer group with members; Kafka converts it with its tombstones first", k.Group)
			}
			if _, err := c.consumer.Delete(k.Group); err != nil {
				return fmt.Errorf("replay GroupMetadata record of group %q over its empty consumer group: %w", k.Group, err)
			}
		}
		c.replayGroupMetadata(k.Group, v)
		return nil
	case records.ConsumerGroupMetadataKey, records.ConsumerGroupPartitionMetadataKey,
		records.ConsumerGroupMemberMetadataKey, records.ConsumerGroupTargetAssignmentMetadataKey,
		records.ConsumerGroupTargetAssignmentMemberKey, records.ConsumerGroupCurrentMemberAssignmentKey,
		records.ConsumerGroupRegularExpressionKey:
		id := consumerGroupID(r.Key)
		if g := c.classic[id]; g != nil && r.Value != nil {
			if !g.in(Empty) {
				return fmt.Errorf("replay %s record of group %q: the group is a classic group with members", r.Type(), id)
			}
			delete(c.classic, id)
		}
		return c.consumer.Replay(r)
	case records.OtherKey:
		if isShareRecordType(k.Type) {
			return c.replayShare(r)
		}
		return nil
	case nil:
		return fmt.Errorf("replay: record without a key")
	}
	return fmt.Errorf("replay: unexpected key type %T", r.Key)
}

// ReplayOffsetCommit is Replay of the offset commit record of key k and
// value v (nil: a tombstone), for a load that decodes offset commits
// without building a Record (records.Decoder.DecodeOffsetCommit). v is not
// kept: the caller may reuse it for the next record.
func (c *Coordinator) ReplayOffsetCommit(k records.OffsetCommitKey, v *records.OffsetCommitValue) error {
	c.replayOffsetCommit(k, v)
	return nil
}

// replayGroupMetadata is GMM.replay(GroupMetadataKey, GroupMetadataValue):
// the group comes back Stable if it has members, else Empty, at the stored
// generation; each member supports the one stored protocol, and a stored
// rebalance timeout of -1 becomes the session timeout.
func (c *Coordinator) replayGroupMetadata(id string, v *records.GroupMetadataValue) {
	g := newClassicGroup(id, c.now)
	g.state, g.previousState = Empty, Empty
	if len(v.Members) > 0 {
		g.state = Stable
	}
	g.generation = v.Generation
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	g.protocolName = cloneStr(v.Protocol)
	g.leader = cloneStr(v.Leader)
	g.currentStateTimestamp = v.CurrentStateTimestamp
	for _, vm := range v.Members {
		rt := vm.RebalanceTimeoutMillis
		if rt == -1 {
			rt = vm.SessionTimeoutMillis
		}
		name := ""
		if v.Protocol != nil {
			name = *v.Protocol
		}
		m := &classicMember{
			id:                 vm.MemberID,
			instanceID:         cloneStr(vm.InstanceID),
			clientID:           vm.ClientID,
			clientHost:         vm.ClientHost,
			rebalanceTimeoutMs: rt,
			sessionTimeoutMs:   vm.SessionTimeoutMillis,
			protocolType:       v.ProtocolType,
			protocols:          []protocol{{name: name, metadata: vm.Subscription}},
			assignment:         vm.Assignment,
		}
		// ClassicGroup.add, minus its checks: the log is the authority.
		if m.instanceID != nil {
			g.staticMembers[*m.instanceID] = m.id
		}
		g.members.put(m.id, m)
		g.supportedProtocols[name]++
		if g.leader == nil {
			id := m.id
			g.leader = &id
		}
	}
	g.subscribedTopics = g.computeSubscribedTopics()
	g.persisted = persistedFromRecord(id, v)
	c.classic[id] = g
}

func consumerGroupID(k records.Key) string {
	switch k.(type) {
	case records.OffsetCommitKey, records.GroupMetadataKey:
		return ""
	}
	return records.GroupOf(k)
}

func errNoConsumerGroups(r records.Record) error {
	return fmt.Errorf("replay %s record of group %q: this coordinator has no consumer-group engine (Config.ConsumerGroups)", r.Type(), consumerGroupID(r.Key))
}

func (c *Coordinator) nowTime() time.Time { return time.UnixMilli(c.now) }
