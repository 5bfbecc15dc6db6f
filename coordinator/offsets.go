package coordinator

import (
	"slices"
	"unicode/utf16"

	"github.com/groupquake/groupquake/coordinator/records"
)

// committedOffset is OffsetAndMetadata: one committed offset as the log
// holds it.
type committedOffset struct {
	offset          int64
	leaderEpoch     int32 // -1: none
	metadata        string
	commitTimestamp int64
	expireTimestamp int64 // -1: none
	topicID         [16]byte
}

type partitionKey struct {
	topic     string
	partition int32
}

// offsetStore is OffsetMetadataManager.Offsets: committed offsets by group,
// topic and partition. It changes only by replaying OffsetCommit records,
// live and on load alike, as in Kafka.
//
// Invariant: no group maps to an empty map (remove drops it), so a group
// with an entry has at least one offset.
type offsetStore struct {
	byGroup map[string]map[partitionKey]committedOffset
}

func newOffsetStore() offsetStore {
	return offsetStore{byGroup: map[string]map[partitionKey]committedOffset{}}
}

func (s *offsetStore) get(group, topic string, partition int32) (committedOffset, bool) {
	o, ok := s.byGroup[group][partitionKey{topic, partition}]
	return o, ok
}

func (s *offsetStore) put(group, topic string, partition int32, o committedOffset) {
	m := s.byGroup[group]
	if m == nil {
		m = map[partitionKey]committedOffset{}
		s.byGroup[group] = m
	}
	m[partitionKey{topic, partition}] = o
}

func (s *offsetStore) remove(group, topic string, partition int32) {
	m := s.byGroup[group]
	delete(m, partitionKey{topic, partition})
	if len(m) == 0 {
		delete(s.byGroup, group)
	}
}

// keys returns the group's partitions sorted by topic, then partition.
// Kafka walks its TimelineHashMaps instead; only the order of tombstones
// differs, not which are written.
func (s *offsetStore) keys(group string) []partitionKey {
	var out []partitionKey
	for k := range s.byGroup[group] {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b partitionKey) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.partition) - int(b.partition)
	})
	return out
}

// replayOffsetCommit is OffsetMetadataManager.replay for a record outside
// any transaction: a value stores the offset, creating a "simple" classic
// group (Empty, no protocol type) if the group id is unknown; a tombstone
// removes it.
func (c *Coordinator) replayOffsetCommit(k records.OffsetCommitKey, v *records.OffsetCommitValue) {
	if v == nil {
		c.offsets.remove(k.Group, k.Topic, k.Partition)
		return
	}
	if _, ok := c.classic[k.Group]; !ok {
		if _, ok := c.consumer.Lookup(k.Group); !ok {
			c.classic[k.Group] = newClassicGroup(k.Group, c.now)
		}
	}
	c.offsets.put(k.Group, k.Topic, k.Partition, committedOffset{
		offset:          v.Offset,
		leaderEpoch:     v.LeaderEpoch,
		metadata:        v.Metadata,
		commitTimestamp: v.CommitTimestamp,
		expireTimestamp: v.ExpireTimestamp,
		topicID:         v.TopicID,
	})
}

// deleteAllOffsets is OffsetMetadataManager.deleteAllOffsets: a tombstone
// per committed offset of the group.
func (c *Coordinator) deleteAllOffsets(group string) {
	for _, k := range c.offsets.keys(group) {
		c.write(offsetTombstone(group, k.topic, k.partition), true)
	}
}

func offsetTombstone(group, topic string, partition int32) records.Record {
	return records.Record{Key: records.OffsetCommitKey{Group: group, Topic: topic, Partition: partition}}
}

// cleanupGroupMetadata is GroupCoordinatorShard.cleanupGroupMetadata, the
// periodic task of offsets.retention.check.interval.ms: expired offsets get
// tombstones, and a group whose offsets all expired and that is empty is
// deleted (GMM.maybeDeleteGroup). Groups are visited in id order; Kafka
// walks its TimelineHashMap, which changes only the order of the records.
func (c *Coordinator) cleanupGroupMetadata() {
	if c.cfg.OffsetsRetention == 0 {
		return
	}
	ids := map[string]bool{}
	for id := range c.classic {
		ids[id] = true
	}
	for _, id := range c.consumer.GroupIDs() {
		ids[id] = true
	}
	for _, id := range sortedKeys(ids) {
		if g := c.classic[id]; g != nil {
			base, ok := classicExpirationBase(g)
			if !ok || !c.cleanupExpiredOffsets(id, base, g.isSubscribedToTopic) {
				continue
			}
			if g.in(Empty) {
				c.deleteClassicGroup(g)
			}
			continue
		}
		info, ok := c.consumer.Lookup(id)
		if !ok {
			continue
		}
		// ConsumerGroup.offsetExpirationCondition: from the commit time.
		base := func(o committedOffset) int64 { return o.commitTimestamp }
		if !c.cleanupExpiredOffsets(id, base, func(t string) bool { return info.SubscribedTopics[t] }) || !info.Empty {
			continue
		}
		if recs, err := c.consumer.Delete(id); err == nil {
			c.written = append(c.written, recs...)
		}
	}
}

// classicExpirationBase is ClassicGroup.offsetExpirationCondition: the time
// an offset's retention counts from, or false if the group's offsets do
// not expire now. A simple group (no protocol type) counts from each
// commit; an Empty group from when it became Empty; a Stable consumer
// group that knows its subscriptions from each commit, for the topics it
// is not subscribed to.
func classicExpirationBase(g *classicGroup) (func(committedOffset) int64, bool) {
	switch {
	case g.protocolType == nil:
		return func(o committedOffset) int64 { return o.commitTimestamp }, true
	case g.in(Empty):
		return func(o committedOffset) int64 {
			if g.currentStateTimestamp >= 0 {
				return g.currentStateTimestamp
			}
			return o.commitTimestamp
		}, true
	case g.usesConsumerProtocol() && g.subscribedTopics != nil && g.in(Stable):
		return func(o committedOffset) int64 { return o.commitTimestamp }, true
	}
	return nil, false
}

// cleanupExpiredOffsets is OffsetMetadataManager.cleanupExpiredOffsets: it
// tombstones the expired offsets of topics the group is not subscribed to
// and reports whether every offset of the group expired (true also when it
// has none).
func (c *Coordinator) cleanupExpiredOffsets(group string, base func(committedOffset) int64, subscribed func(string) bool) bool {
	retention := c.cfg.OffsetsRetention.Milliseconds()
	all := true
	for _, k := range c.offsets.keys(group) {
		if subscribed(k.topic) {
			all = false
			continue
		}
		o, _ := c.offsets.get(group, k.topic, k.partition)
		// OffsetExpirationConditionImpl.isOffsetExpired: an explicit expire
		// timestamp (OffsetCommit v2–v4 retention) wins.
		expired := c.now-base(o) >= retention
		if o.expireTimestamp >= 0 {
			expired = c.now >= o.expireTimestamp
		}
		if expired {
			c.write(offsetTombstone(group, k.topic, k.partition), true)
		} else {
			all = false
		}
	}
	return all
}

// javaLength is String.length: UTF-16 code units.
func javaLength(s string) int { return len(utf16.Encode([]rune(s))) }
