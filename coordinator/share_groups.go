package coordinator

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Share groups (KIP-932): the share-group half of Kafka's
// GroupMetadataManager, as the 4.2–4.4 branches have it. The state here is
// only what the records of types 10–15 say (the coordinator writes a
// record and replays it, as GMM does), plus the timers: each member's
// session timeout and the share-partition initialization the heartbeat
// asks for.
//
// Share-partition initialization: a heartbeat that finds subscribed
// partitions the group has not initialized writes them as initializing
// (ShareGroupStatePartitionMetadata) and, once written, asks the share
// coordinator to initialize their state (GroupCoordinatorService's
// persisterInitialize, on a timer of delay 0); its success writes them as
// initialized (GMM.initializeShareGroupState). Only initialized partitions
// are assignable, so the first heartbeat of a group gets no partitions and
// a later one bumps the group epoch (GMM.initializedAssignmentPending). The
// reference has no share coordinator: the initialization succeeds on the
// next Tick, as the timer fires.

// shareMember is a ShareGroupMember.
type shareMember struct {
	id         string
	rack       *string
	clientID   string
	clientHost string
	subscribed []string // sorted
	epoch      int32
	prevEpoch  int32
	state      int8
	assigned   tpSet
}

func (m *shareMember) clone() *shareMember {
	c := *m
	c.subscribed = slices.Clone(m.subscribed)
	c.assigned = m.assigned.clone()
	return &c
}

// initTopic is an InitMapValue: a topic's name, partitions and when they
// were put into the initializing state (not persisted: 0 after a load).
type initTopic struct {
	name  string
	parts []int32
	ts    int64
}

// shareGroup is a ShareGroup with its ShareGroupStatePartitionMetadataInfo.
type shareGroup struct {
	id          string
	epoch       int32
	hash        int64
	assignEpoch int32
	assignTS    int64
	members     map[string]*shareMember
	// joined is the member ids in the order they were added (the order
	// of the TimelineHashMap puts, which Java's hash orders keep within a
	// bucket).
	joined  []string
	targets map[string]tpSet

	// stateMeta: a ShareGroupStatePartitionMetadata record is in force.
	stateMeta                 bool
	initializing, initialized map[[16]byte]initTopic
	deleting                  map[[16]byte]string

	// refreshEpoch is the group epoch at which the metadata hash was last
	// computed (ModernGroup.metadataRefreshDeadline; the deadline itself is
	// Integer.MAX_VALUE ms away in 4.2–4.4, so only its epoch matters);
	// -1 before the first computation.
	refreshEpoch int32
}

// newShareGroup is a new ShareGroup: ModernGroup's constructor starts the
// group epoch and the target assignment epoch at initialEpoch
// (version.Profile.InitialGroupEpoch: 0 before 4.3, 1 from 4.3,
// KAFKA-20268), so a group's first member gets epoch 1 or 2.
func newShareGroup(id string, initialEpoch int32) *shareGroup {
	return &shareGroup{id: id, epoch: initialEpoch, assignEpoch: initialEpoch, members: map[string]*shareMember{}, targets: map[string]tpSet{},
		initializing: map[[16]byte]initTopic{}, initialized: map[[16]byte]initTopic{}, deleting: map[[16]byte]string{}, refreshEpoch: -1}
}

// memberOrder is the member ids in the order a HashMap of them iterates
// (GroupSpec.memberIds, ShareGroup.members as described).
func (g *shareGroup) memberOrder() []string { return assignor.JavaHashMapOrder(g.joined) }

// subscribedCounts is ShareGroup.subscribedTopicNames: how many members
// subscribe to each topic name.
func (g *shareGroup) subscribedCounts(without *shareMember, with *shareMember) map[string]int {
	out := map[string]int{}
	for id, m := range g.members {
		if without != nil && id == without.id {
			continue
		}
		for _, t := range m.subscribed {
			out[t]++
		}
	}
	if with != nil {
		for _, t := range with.subscribed {
			out[t]++
		}
	}
	return out
}

func (g *shareGroup) state() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// shareConfig is Config.Share with its defaults filled in.
func (c *Coordinator) shareSessionMs() int64 {
	if c.cfg.Share.SessionTimeout > 0 {
		return c.cfg.Share.SessionTimeout.Milliseconds()
	}
	return version.ShareSessionTimeoutMsDefault
}

func (c *Coordinator) shareHeartbeatMs() int32 {
	if c.cfg.Share.HeartbeatInterval > 0 {
		return int32(c.cfg.Share.HeartbeatInterval.Milliseconds())
	}
	return version.ShareHeartbeatIntervalMsDefault
}

func (c *Coordinator) shareMaxSize() int {
	if c.cfg.Share.MaxSize > 0 {
		return c.cfg.Share.MaxSize
	}
	return version.ShareGroupMaxSizeDefault
}

func (c *Coordinator) shareAssignmentIntervalMs() int64 {
	if !c.profile.ShareAssignmentInterval {
		return 0
	}
	if c.cfg.Share.AssignmentInterval != nil {
		return c.cfg.Share.AssignmentInterval.Milliseconds()
	}
	return version.ShareAssignmentIntervalMsDefault
}

func (c *Coordinator) shareInitRetryMs() int64 {
	if c.cfg.Share.InitializeRetryInterval > 0 {
		return c.cfg.Share.InitializeRetryInterval.Milliseconds()
	}
	return version.ShareInitializeRetryIntervalMsDefault
}

// shareRecord turns a share-group record into the log's form (records
// has no types for 10–15: OtherKey and OtherValue carry the bytes
// sharegroup encodes).
func shareRecord(r sharegroup.GroupRecord) records.Record {
	k, v, err := sharegroup.EncodeGroupRecord(r)
	if err != nil {
		panic(fmt.Sprintf("coordinator: encode share-group record type %d of %q: %v", r.Type, r.GroupID, err))
	}
	out := records.Record{Key: records.OtherKey{Type: records.Type(r.Type), Raw: string(k[2:])}}
	if v != nil {
		out.Value = &records.OtherValue{Raw: v}
	}
	return out
}

// isShareRecordType reports whether t is a share-group record type of
// __consumer_offsets.
func isShareRecordType(t records.Type) bool {
	return int16(t) >= sharegroup.TypeMemberMetadata && int16(t) <= sharegroup.TypeStatePartitionMetadata
}

// writeShare appends share-group records to the log and replays them, as
// GMM's CoordinatorResult is replayed once written.
func (c *Coordinator) writeShare(recs []sharegroup.GroupRecord) {
	for _, r := range recs {
		rec := shareRecord(r)
		c.written = append(c.written, rec)
		if err := c.Replay(rec); err != nil {
			panic(fmt.Sprintf("coordinator: replay own share-group record: %v", err))
		}
	}
}

// replayShare is GMM.replay of the share-group records.
func (c *Coordinator) replayShare(r records.Record) error {
	k := r.Key.(records.OtherKey)
	key := append([]byte{byte(k.Type >> 8), byte(k.Type)}, k.Raw...)
	var value []byte
	if r.Value != nil {
		ov, ok := r.Value.(*records.OtherValue)
		if !ok {
			return fmt.Errorf("replay %s record: value is %T", r.Type(), r.Value)
		}
		value = ov.Raw
	}
	gr, err := sharegroup.DecodeGroupRecord(key, value)
	if err != nil {
		return fmt.Errorf("replay %s record: %w", r.Type(), err)
	}
	if gr.Value != nil {
		if cg := c.classic[gr.GroupID]; cg != nil && !cg.in(Dead) {
			return fmt.Errorf("replay %s record of group %q: the group is a classic group", r.Type(), gr.GroupID)
		}
		if _, ok := c.consumer.Lookup(gr.GroupID); ok {
			return fmt.Errorf("replay %s record of group %q: the group is a consumer group", r.Type(), gr.GroupID)
		}
	}
	c.share.replay(gr, c.profile.InitialGroupEpoch)
	return nil
}

// shareGroups holds the share groups of one coordinator.
type shareGroups map[string]*shareGroup

func (gs shareGroups) group(id string, initialEpoch int32) *shareGroup {
	g := gs[id]
	if g == nil {
		g = newShareGroup(id, initialEpoch)
		gs[id] = g
	}
	return g
}

func (g *shareGroup) member(id string) *shareMember {
	m := g.members[id]
	if m == nil {
		m = &shareMember{id: id, assigned: tpSet{}}
		g.members[id] = m
		g.joined = append(g.joined, id)
	}
	return m
}

func (g *shareGroup) removeMember(id string) {
	delete(g.members, id)
	g.joined = slices.DeleteFunc(g.joined, func(x string) bool { return x == id })
}

func fromTPs(tps []sharegroup.TopicPartitions) tpSet {
	out := tpSet{}
	for _, t := range tps {
		out[t.TopicID] = slices.Sorted(slices.Values(t.Partitions))
	}
	return out
}

func toTPs(a tpSet) []sharegroup.TopicPartitions {
	out := []sharegroup.TopicPartitions{}
	for _, id := range javaUUIDOrder(a.nonEmpty()) {
		out = append(out, sharegroup.TopicPartitions{TopicID: id, Partitions: slices.Clone(a[id])})
	}
	return out
}

func initMap(tis []sharegroup.TopicInfo) map[[16]byte]initTopic {
	out := map[[16]byte]initTopic{}
	for _, t := range tis {
		out[t.TopicID] = initTopic{name: t.TopicName, parts: slices.Sorted(slices.Values(t.Partitions))}
	}
	return out
}

func (gs shareGroups) replay(r sharegroup.GroupRecord, initialEpoch int32) {
	if r.Value == nil {
		g := gs[r.GroupID]
		if g == nil {
			return
		}
		switch r.Type {
		case sharegroup.TypeGroupMetadata:
			delete(gs, r.GroupID)
		case sharegroup.TypeMemberMetadata:
			g.removeMember(r.MemberID)
		case sharegroup.TypeTargetAssignmentMember:
			delete(g.targets, r.MemberID)
		case sharegroup.TypeTargetAssignmentMetadata:
			g.assignEpoch, g.assignTS = -1, 0
		case sharegroup.TypeCurrentMemberAssignment:
			if m := g.members[r.MemberID]; m != nil {
				m.epoch, m.prevEpoch, m.state, m.assigned = 0, 0, 0, tpSet{}
			}
		case sharegroup.TypeStatePartitionMetadata:
			g.stateMeta = false
			g.initializing, g.initialized, g.deleting = map[[16]byte]initTopic{}, map[[16]byte]initTopic{}, map[[16]byte]string{}
		}
		return
	}
	g := gs.group(r.GroupID, initialEpoch)
	switch v := r.Value.(type) {
	case *sharegroup.GroupMetadataValue:
		g.epoch, g.hash = v.Epoch, v.MetadataHash
	case *sharegroup.MemberMetadataValue:
		m := g.member(r.MemberID)
		m.rack = cloneStr(v.RackID)
		m.clientID, m.clientHost = v.ClientID, v.ClientHost
		m.subscribed = slices.Sorted(slices.Values(v.SubscribedTopicNames))
	case *sharegroup.TargetAssignmentMetadataValue:
		g.assignEpoch, g.assignTS = v.AssignmentEpoch, v.AssignmentTimestamp
	case *sharegroup.TargetAssignmentMemberValue:
		g.targets[r.MemberID] = fromTPs(v.TopicPartitions)
	case *sharegroup.CurrentMemberAssignmentValue:
		m := g.member(r.MemberID)
		m.epoch, m.prevEpoch, m.state, m.assigned = v.MemberEpoch, v.PreviousMemberEpoch, v.State, fromTPs(v.AssignedPartitions)
	case *sharegroup.StatePartitionMetadataValue:
		g.stateMeta = true
		prev := g.initializing
		g.initializing, g.initialized = initMap(v.InitializingTopics), initMap(v.InitializedTopics)
		for id, t := range g.initializing {
			// The timestamp lives in memory only: a topic still
			// initializing keeps the one it had.
			if p, ok := prev[id]; ok {
				t.ts = p.ts
				g.initializing[id] = t
			}
		}
		g.deleting = map[[16]byte]string{}
		for _, t := range v.DeletingTopics {
			g.deleting[t.TopicID] = t.TopicName
		}
	}
}

// String renders every share group canonically, for State.
func (gs shareGroups) String() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(gs)) {
		g := gs[id]
		fmt.Fprintf(&b, "share group %s epoch=%d hash=%d assignment-epoch=%d assignment-ts=%d\n", id, g.epoch, g.hash, g.assignEpoch, g.assignTS)
		for _, mid := range slices.Sorted(maps.Keys(g.members)) {
			m := g.members[mid]
			fmt.Fprintf(&b, "  member %s rack=%s client=%s host=%s subscribed=%v epoch=%d prev=%d state=%d assigned=%s\n",
				mid, nullable(m.rack), m.clientID, m.clientHost, m.subscribed, m.epoch, m.prevEpoch, m.state, fmtTPSet(m.assigned))
		}
		for _, mid := range slices.Sorted(maps.Keys(g.targets)) {
			fmt.Fprintf(&b, "  target %s %s\n", mid, fmtTPSet(g.targets[mid]))
		}
		if g.stateMeta {
			fmt.Fprintf(&b, "  share-partitions initializing=%s initialized=%s deleting=%d\n", fmtInit(g.initializing), fmtInit(g.initialized), len(g.deleting))
		}
	}
	return b.String()
}

func fmtTPSet(a tpSet) string {
	var parts []string
	for _, id := range slices.SortedFunc(maps.Keys(a.nonEmpty()), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) }) {
		parts = append(parts, fmt.Sprintf("%x:%v", id[:4], a[id]))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtInit(m map[[16]byte]initTopic) string {
	var parts []string
	for _, id := range slices.SortedFunc(maps.Keys(m), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) }) {
		parts = append(parts, fmt.Sprintf("%s:%v", m[id].name, m[id].parts))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// shareMetadataHash is ModernGroup.computeMetadataHash of the subscribed
// topic names.
func (c *Coordinator) shareMetadataHash(names map[string]int) int64 {
	if c.cfg.Topics == nil {
		return 0
	}
	return consumergroup.MetadataHash(c.cfg.Topics, slices.Sorted(maps.Keys(names)))
}

// shareOtherType reports whether groupID is a group of another type
// (classic or consumer) here.
func (c *Coordinator) shareOtherType(groupID string) bool {
	if cg := c.classic[groupID]; cg != nil && !cg.in(Dead) {
		return true
	}
	_, ok := c.consumer.Lookup(groupID)
	return ok
}

func shareSessionKey(group, member string) string {
	return "share-session\x00" + group + "\x00" + member
}
func shareInitKey(group string, seq uint64) string {
	return fmt.Sprintf("share-init\x00%s\x00%d", group, seq)
}

// scheduleShareSession is GMM.scheduleShareGroupSessionTimeout.
func (c *Coordinator) scheduleShareSession(group, member string) {
	c.timers.schedule(shareSessionKey(group, member), c.now+c.shareSessionMs(), func() {
		// shareGroupFenceMemberOperation: nothing if the group or the
		// member is gone.
		g := c.share[group]
		if g == nil {
			return
		}
		m := g.members[member]
		if m == nil {
			return
		}
		c.writeShare(c.shareFence(g, m))
	})
}

// shareFence is GMM.shareGroupFenceMember: the member's records are
// tombstoned, the group epoch bumped with the hash of the subscriptions
// left, and, for the last member where
// version.Profile.LastLeaveResetsAssignmentEpoch (KAFKA-20442; 4.3.2, 4.4.0), the
// assignment epoch set to it with a zero timestamp.
func (c *Coordinator) shareFence(g *shareGroup, m *shareMember) []sharegroup.GroupRecord {
	recs := []sharegroup.GroupRecord{
		{Type: sharegroup.TypeCurrentMemberAssignment, GroupID: g.id, MemberID: m.id},
		{Type: sharegroup.TypeTargetAssignmentMember, GroupID: g.id, MemberID: m.id},
		{Type: sharegroup.TypeMemberMetadata, GroupID: g.id, MemberID: m.id},
	}
	hash := c.shareMetadataHash(g.subscribedCounts(m, nil))
	epoch := g.epoch + 1
	recs = append(recs, sharegroup.GroupRecord{Type: sharegroup.TypeGroupMetadata, GroupID: g.id,
		Value: &sharegroup.GroupMetadataValue{Epoch: epoch, MetadataHash: hash}})
	if len(g.members) == 1 && c.profile.LastLeaveResetsAssignmentEpoch {
		recs = append(recs, sharegroup.GroupRecord{Type: sharegroup.TypeTargetAssignmentMetadata, GroupID: g.id,
			Value: &sharegroup.TargetAssignmentMetadataValue{AssignmentEpoch: epoch}})
	}
	c.timers.cancel(shareSessionKey(g.id, m.id))
	return recs
}

// shareLoaded is the share half of GMM.onLoaded: every member gets a
// session timeout.
func (c *Coordinator) shareLoaded() {
	for _, id := range slices.Sorted(maps.Keys(c.share)) {
		g := c.share[id]
		for _, mid := range g.memberOrder() {
			c.scheduleShareSession(id, mid)
		}
	}
}

// ShareConfig holds the group.share.* broker settings the reference
// coordinator's share groups read. Zero fields are Kafka's defaults
// (coordinator/version: ShareSessionTimeoutMsDefault and the others).
type ShareConfig struct {
	// SessionTimeout is group.share.session.timeout.ms (45 s).
	SessionTimeout time.Duration
	// HeartbeatInterval is group.share.heartbeat.interval.ms (5 s).
	HeartbeatInterval time.Duration
	// MaxSize is group.share.max.size (200).
	MaxSize int
	// AssignmentInterval is group.share.assignment.interval.ms (KIP-1263,
	// where version.Profile.ShareAssignmentInterval: 1 s by default); nil
	// means the default, and it is ignored by releases without it.
	AssignmentInterval *time.Duration
	// InitializeRetryInterval is group.share.initialize.retry.interval.ms
	// (30 s): how long a share-partition stays initializing before a
	// heartbeat asks for its initialization again.
	InitializeRetryInterval time.Duration
}

func (s ShareConfig) validate() error {
	ds := []millis{
		{"Share.SessionTimeout", s.SessionTimeout},
		{"Share.HeartbeatInterval", s.HeartbeatInterval},
		{"Share.InitializeRetryInterval", s.InitializeRetryInterval},
	}
	if s.AssignmentInterval != nil {
		ds = append(ds, millis{"Share.AssignmentInterval", *s.AssignmentInterval})
	}
	if err := checkMillis(ds...); err != nil {
		return err
	}
	if s.MaxSize < 0 || s.MaxSize > version.ShareGroupMaxSizeCap {
		return fmt.Errorf("coordinator config: Share.MaxSize is %d; group.share.max.size is 1 to %d (0 for the default, %d)", s.MaxSize, version.ShareGroupMaxSizeCap, version.ShareGroupMaxSizeDefault)
	}
	return nil
}

// nullable renders a nullable string, null as "null".
func nullable(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}
