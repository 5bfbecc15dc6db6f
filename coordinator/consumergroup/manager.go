package consumergroup

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/internal/partset"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Manager holds every consumer group of one coordinator shard (one
// __consumer_offsets partition) and answers for them: the consumer-group
// half of GMM. It is not safe for concurrent use; the shell serializes
// calls as Kafka's runtime serializes a shard's events.
type Manager struct {
	profile   version.Profile
	cfg       Config
	assignors map[string]assignor.Assignor
	rp        replayer
	// timers are live only: they are not rebuilt by Replay (Loaded re-arms
	// them), exactly like Kafka's CoordinatorTimer.
	timers map[timerKey]timer
	// queue holds the timers' armings by deadline (timerQueue); timerSeq
	// numbers them.
	queue    timerQueue
	timerSeq uint64
	// topicHashes caches the hashes of topics without racks (metadataHash).
	topicHashes map[topicHashKey]int64
	// idSeq numbers generated member ids when Config.NewMemberID is nil.
	idSeq int
	// refreshed holds, for the groups whose subscription metadata was
	// refreshed since they were created or loaded, each subscribed topic's
	// hash as it was then (markRefreshed): Kafka starts every group with a
	// metadata refresh deadline of 0, so the first heartbeat refreshes it
	// (ModernGroup.hasMetadataExpired).
	refreshed map[string]map[string]int64
	// lastTopics is the metadata the host gave last (SetTopics, or with a
	// request): timers fire without a request, and a fence recomputes the
	// group's metadata hash from the coordinator's current image as Kafka's
	// does.
	lastTopics TopicMetadata
	// classic is the shell's classic groups (SetClassicGroups), for
	// downgrades that timers and LeaveGroup trigger.
	classic ClassicGroups
	// regexTasks are the scheduled regex resolutions by group (GMM's
	// executor keys "<group>-regex"); live only, like timers.
	regexTasks map[string]regexTask
	// knownTopics, version and newTopicsVersion stand in for the metadata
	// image's version and GMM.lastMetadataImageWithNewTopics
	// (observeTopics).
	knownTopics      map[string]bool
	version          int64
	newTopicsVersion int64
}

// SetTopics tells the Manager the cluster's current topics, for the
// records Tick writes. Heartbeat and Describe do it too.
func (m *Manager) SetTopics(topics TopicMetadata) {
	m.lastTopics = orEmpty(topics)
	m.observeTopics(m.lastTopics)
}

// New returns an empty Manager behaving like the Kafka release of profile.
func New(profile version.Profile, cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults(profile)
	if err := cfg.validate(profile); err != nil {
		return nil, fmt.Errorf("consumer group coordinator for Kafka %s: %w", profile.Version, err)
	}
	m := &Manager{
		profile:    profile,
		cfg:        cfg,
		assignors:  map[string]assignor.Assignor{},
		timers:     map[timerKey]timer{},
		refreshed:  map[string]map[string]int64{},
		lastTopics: noTopics{},
		regexTasks: map[string]regexTask{},
	}
	m.rp = replayer{groups: map[string]*group{}, initialEpoch: profile.InitialGroupEpoch, keepsEpochs: profile.AssignmentEpochs}
	opts := []assignor.Opt{assignor.Profile(profile)}
	if cfg.JavaVersion != 0 {
		opts = append(opts, assignor.JavaVersion(cfg.JavaVersion))
	}
	for _, name := range cfg.Assignors {
		a, err := assignor.New(name, opts...)
		if err != nil {
			return nil, fmt.Errorf("consumer group coordinator for Kafka %s: group.consumer.assignors: %w", profile.Version, err)
		}
		m.assignors[name] = a
	}
	return m, nil
}

// Profile returns the Kafka release this Manager behaves like.
func (m *Manager) Profile() version.Profile { return m.profile }

// defaultAssignor is GMM.defaultConsumerGroupAssignor: the first configured.
func (m *Manager) defaultAssignor() string { return m.cfg.Assignors[0] }

// Replay applies one record of type 3–8 or 16, as the coordinator does when
// it loads its partition or after it wrote the record. It refuses records
// whose order Kafka's replay refuses (a member tombstone before its
// current-assignment tombstone, two owners of a partition at one epoch …)
// and leaves the state unchanged then.
func (m *Manager) Replay(r records.Record) error {
	id, ok := records.ConsumerGroupOf(r.Key)
	if !ok {
		return fmt.Errorf("replay: %s records are not consumer-group records (types 3–8, 16)", r.Type())
	}
	return m.applyAll(id, []records.Record{r})
}

// HasGroup reports whether groupID is a consumer group here, so the shell
// can route requests for other groups to the classic code.
func (m *Manager) HasGroup(groupID string) bool {
	_, ok := m.rp.groups[groupID]
	return ok
}

// applyAll replays recs, all of one group, atomically: on error nothing
// changes (Kafka reverts the shard to its snapshot when a write fails). The
// group is changed in place, and what each record changed is journaled
// (group.undo) and put back on error: a write costs what it changes, not
// the size of the group, as Kafka's timeline data structures make a
// snapshot cost nothing until something changes.
func (m *Manager) applyAll(groupID string, recs []records.Record) error {
	old, existed := m.rp.groups[groupID]
	var undo []func()
	var saved group
	if existed {
		saved = *old
		saved.recentSubscriptions = slices.Clone(old.recentSubscriptions)
		old.undo = &undo
	}
	regexVersion := m.rp.regexVersion
	for _, r := range recs {
		if _, ok := records.ConsumerGroupOf(r.Key); !ok {
			continue // the shell's record (a converted classic group's tombstone)
		}
		if err := m.rp.apply(r); err != nil {
			m.rp.regexVersion = regexVersion
			if existed {
				// The fields first, then the maps' entries and the member
				// order, latest change first.
				*old = saved
				for i := len(undo) - 1; i >= 0; i-- {
					undo[i]()
				}
				m.rp.groups[groupID] = old
			} else {
				delete(m.rp.groups, groupID)
			}
			return err
		}
	}
	if existed {
		old.undo = nil
	}
	if _, ok := m.rp.groups[groupID]; !ok {
		delete(m.refreshed, groupID)
	}
	return nil
}

// Loaded is GMM.onLoaded for consumer groups: after a replay it arms a full
// session timeout for every member and a rebalance timeout for every member
// in UNREVOKED_PARTITIONS.
func (m *Manager) Loaded(now time.Time) {
	for _, g := range m.rp.groups {
		for _, mb := range g.members {
			m.scheduleSession(now, g.id, mb.id)
			if mb.state == records.MemberUnrevokedPartitions {
				m.scheduleRebalance(now, g.id, mb.id, mb.epoch, mb.rebalanceTimeoutMs)
			}
		}
	}
}

// --- errors ---

// Error is a request failure with Kafka's error code and message. It wraps
// the kerr error, so errors.Is(err, kerr.StaleMemberEpoch) works.
type Error struct {
	Code    *kerr.Error
	Message string
}

func (e *Error) Error() string { return e.Code.Message + ": " + e.Message }

// Unwrap returns the kerr error.
func (e *Error) Unwrap() error { return e.Code }

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrGroupNotFound is returned by ValidateOffsetCommit when the group is not
// a consumer group here, so the shell applies its own rules (a simple
// classic group, GROUP_ID_NOT_FOUND or ILLEGAL_GENERATION by version).
var ErrGroupNotFound = errors.New("not a consumer group")

// --- record builders (GroupCoordinatorRecordHelpers) ---

// shape returns r as the profile's release writes it.
func (m *Manager) shape(r records.Record) records.Record {
	out, err := records.AsWrittenBy(m.profile, r)
	if err != nil {
		// Every record built here fits the profile; a failure is a bug in
		// this package, not in the request.
		panic(fmt.Sprintf("consumergroup: record %s does not fit Kafka %s: %v", r.Type(), m.profile.Version, err))
	}
	return out
}

func (m *Manager) memberMetadataRecord(groupID string, mb *member) records.Record {
	regex := mb.regex
	v := &records.ConsumerGroupMemberMetadataValue{
		InstanceID: optional(mb.instanceID),
		RackID:     optional(mb.rackID),
		ClientID:   mb.clientID,
		ClientHost: mb.clientHost,
		// GroupCoordinatorRecordHelpers sorts the names and always writes
		// the regex, "" for none (the member's default).
		SubscribedTopicNames: slices.Clone(mb.subscribed),
		SubscribedTopicRegex: &regex,
		RebalanceTimeoutMs:   mb.rebalanceTimeoutMs,
		ServerAssignor:       optional(mb.serverAssignor),
		// GroupCoordinatorRecordHelpers.newConsumerGroupMemberSubscriptionRecord:
		// classicMemberMetadata().orElse(null), an explicit null for a
		// consumer-protocol member.
		ClassicMemberMetadata: cloneClassic(mb.classic),
	}
	if v.SubscribedTopicNames == nil {
		v.SubscribedTopicNames = []string{}
	}
	return m.shape(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: groupID, MemberID: mb.id}, Value: v})
}

func (m *Manager) epochRecord(groupID string, epoch int32, hash int64) records.Record {
	return m.shape(records.Record{
		Key:   records.ConsumerGroupMetadataKey{GroupID: groupID},
		Value: &records.ConsumerGroupMetadataValue{Epoch: epoch, MetadataHash: hash},
	})
}

func (m *Manager) partitionMetadataRecord(groupID string, meta map[string]topicMeta) records.Record {
	names := slices.Sorted(maps.Keys(meta))
	v := &records.ConsumerGroupPartitionMetadataValue{Topics: []records.PartitionMetadataTopic{}}
	for _, n := range assignor.JavaHashMapOrder(names) {
		t := meta[n]
		v.Topics = append(v.Topics, records.PartitionMetadataTopic{TopicID: t.id, TopicName: n, NumPartitions: t.partitions})
	}
	return m.shape(records.Record{Key: records.ConsumerGroupPartitionMetadataKey{GroupID: groupID}, Value: v})
}

func (m *Manager) targetRecord(groupID, memberID string, a map[TopicID][]int32) records.Record {
	v := &records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: []records.TargetAssignmentTopic{}}
	for _, tp := range m.javaOrder(a) {
		v.TopicPartitions = append(v.TopicPartitions, records.TargetAssignmentTopic{TopicID: tp.Topic, Partitions: tp.Partitions})
	}
	return m.shape(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: groupID, MemberID: memberID}, Value: v})
}

func (m *Manager) targetMetadataRecord(groupID string, epoch int32, nowMs int64) records.Record {
	return m.shape(records.Record{
		Key:   records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: groupID},
		Value: &records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch, AssignmentTimestamp: nowMs},
	})
}

func (m *Manager) currentRecord(groupID string, mb *member) records.Record {
	v := &records.ConsumerGroupCurrentMemberAssignmentValue{
		MemberEpoch:                 mb.epoch,
		PreviousMemberEpoch:         mb.prevEpoch,
		State:                       mb.state,
		AssignedPartitions:          m.currentTopics(mb.assigned),
		PartitionsPendingRevocation: m.currentTopics(mb.pending),
	}
	return m.shape(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: groupID, MemberID: mb.id}, Value: v})
}

func (m *Manager) currentTopics(a assignment) []records.CurrentAssignmentTopic {
	out := []records.CurrentAssignmentTopic{}
	for _, tp := range m.javaOrder(partitionsOf(a)) {
		t := records.CurrentAssignmentTopic{TopicID: tp.Topic, Partitions: tp.Partitions, AssignmentEpochs: []int32{}}
		for _, p := range tp.Partitions {
			t.AssignmentEpochs = append(t.AssignmentEpochs, a[tp.Topic][p])
		}
		out = append(out, t)
	}
	return out
}

func tombstone(k records.Key) records.Record { return records.Record{Key: k} }

// javaOrder orders topics and partitions the way Kafka iterates the
// HashMap/HashSet it builds from a record (assignor.JavaAssignmentOrder).
// A live broker iterates the assignor's own sets, whose order cannot be
// known here; the order only changes the bytes of a record, never its
// meaning.
func (m *Manager) javaOrder(a map[TopicID][]int32) []assignor.TopicPartitions {
	jv := m.cfg.JavaVersion
	if jv == 0 {
		jv = assignor.DefaultJavaVersion
	}
	return javaOrderOf(a, jv)
}

func javaOrderOf(a map[TopicID][]int32, jv int) []assignor.TopicPartitions {
	ids := make([]TopicID, 0, len(a))
	for t, ps := range a {
		if len(ps) > 0 {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, func(x, y TopicID) int { return compareBytes(x, y) })
	in := make([]assignor.TopicPartitions, 0, len(ids))
	for _, t := range ids {
		in = append(in, assignor.TopicPartitions{Topic: t, Partitions: a[t]})
	}
	return assignor.JavaAssignmentOrder(in, jv)
}

func compareBytes(x, y TopicID) int {
	for i := range x {
		if x[i] != y[i] {
			return int(x[i]) - int(y[i])
		}
	}
	return 0
}

// partitionsOf drops the assignment epochs: topic → sorted partitions.
func partitionsOf(a assignment) map[TopicID][]int32 { return partset.Sorted(a) }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (m *Manager) newMemberID() string {
	if m.cfg.NewMemberID != nil {
		return m.cfg.NewMemberID()
	}
	m.idSeq++
	return "member-" + strconv.Itoa(m.idSeq)
}
