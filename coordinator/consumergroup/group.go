package consumergroup

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/records"
)

// TopicID is a Kafka topic id.
type TopicID = assignor.TopicID

// assignment is a member's current assignment as Kafka 4.3+ keeps it
// (ConsumerGroupMember.assignedPartitions: Map<Uuid, Map<Integer, Integer>>):
// topic → partition → assignment epoch, the target epoch at which the
// partition was first given to the member (KIP-1251). Before 4.3 the epochs
// are not written, and replay stamps every partition with max(memberEpoch, 0)
// (Utils.assignmentFromTopicPartitions), so they are never read there.
type assignment map[TopicID]map[int32]int32

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for t, ps := range a {
		out[t] = maps.Clone(ps)
	}
	return out
}

func (a assignment) has(t TopicID, p int32) bool {
	_, ok := a[t][p]
	return ok
}

// sameEpochs reports whether a and b hold the same partitions with the same
// assignment epochs (Map.equals).
func (a assignment) sameEpochs(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !maps.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

// samePartitions reports whether a and b hold the same partitions, epochs
// aside (ConsumerGroupMember.hasAssignedPartitionsChanged compares key sets).
func (a assignment) samePartitions(b assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		qs, ok := b[t]
		if !ok || len(ps) != len(qs) {
			return false
		}
		for p := range ps {
			if _, ok := qs[p]; !ok {
				return false
			}
		}
	}
	return true
}

// member is ConsumerGroupMember: immutable in Kafka, copied on change here.
type member struct {
	id         string
	instanceID string // "" means none: a blank instance id is refused on the wire
	rackID     string
	clientID   string
	clientHost string
	// subscribed is the set of subscribed topic names, sorted; set it with
	// setSubscribed.
	subscribed []string
	// subscribedSet is subscribed as a set, made when first needed
	// (subscribes) and kept with the member and its copies, as Kafka's
	// member keeps its names in a HashSet; setSubscribed drops it.
	subscribedSet      map[string]struct{}
	regex              string
	rebalanceTimeoutMs int32
	serverAssignor     string // "" means none
	epoch              int32
	prevEpoch          int32
	state              records.MemberState
	assigned           assignment
	pending            assignment
	// classic is ConsumerGroupMember.classicMemberMetadata: set for a member
	// that speaks the classic protocol inside this consumer group (it joined
	// with JoinGroup, or its classic group was upgraded online), nil for a
	// consumer-protocol member (ConsumerGroupMember.useClassicProtocol).
	// Its session timeout and supported protocols are persisted in the
	// member's ConsumerGroupMemberMetadataValue (tag 0).
	classic *records.ClassicMemberMetadata
}

// setSubscribed sets the subscribed names (a sorted set). The member's
// name set is kept when they are the names it had.
func (m *member) setSubscribed(names []string) {
	if !slices.Equal(names, m.subscribed) {
		m.subscribedSet = nil
	}
	m.subscribed = names
}

// subscribes reports whether the member subscribes to topic name: a
// binary search of a few names, a set of many.
func (m *member) subscribes(name string) bool {
	if len(m.subscribed) <= 16 {
		_, found := slices.BinarySearch(m.subscribed, name)
		return found
	}
	if m.subscribedSet == nil {
		m.subscribedSet = make(map[string]struct{}, len(m.subscribed))
		for _, n := range m.subscribed {
			m.subscribedSet[n] = struct{}{}
		}
	}
	_, ok := m.subscribedSet[name]
	return ok
}

// useClassicProtocol is ConsumerGroupMember.useClassicProtocol.
func (m *member) useClassicProtocol() bool { return m.classic != nil }

// cloneClassic deep-copies classic member metadata (nil stays nil).
func cloneClassic(c *records.ClassicMemberMetadata) *records.ClassicMemberMetadata {
	if c == nil {
		return nil
	}
	out := &records.ClassicMemberMetadata{SessionTimeoutMs: c.SessionTimeoutMs, UnknownTags: c.UnknownTags}
	if c.SupportedProtocols != nil {
		out.SupportedProtocols = make([]records.ClassicProtocol, len(c.SupportedProtocols))
		for i, p := range c.SupportedProtocols {
			out.SupportedProtocols[i] = records.ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata), UnknownTags: p.UnknownTags}
		}
	}
	return out
}

// equalClassic is ClassicMemberMetadata.equals: the session timeout and the
// protocols in order, names and metadata bytes.
func equalClassic(a, b *records.ClassicMemberMetadata) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.SessionTimeoutMs == b.SessionTimeoutMs &&
		slices.EqualFunc(a.SupportedProtocols, b.SupportedProtocols, func(x, y records.ClassicProtocol) bool {
			return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
		})
}

// newMember is ConsumerGroupMember.Builder(memberId) with its defaults.
func newMember(id string) *member {
	return &member{
		id:                 id,
		epoch:              0,
		prevEpoch:          -1,
		state:              records.MemberStable,
		rebalanceTimeoutMs: -1,
		assigned:           assignment{},
		pending:            assignment{},
	}
}

// withMetadata is a copy of m updated with what a join or heartbeat
// carries: its instance id and rack when it names them, its rebalance
// timeout unless it is -1.
func (m *member) withMetadata(instanceID string, rack *string, rebalanceTimeoutMs int32) *member {
	updated := m.clone()
	if instanceID != "" {
		updated.instanceID = instanceID
	}
	if rack != nil {
		updated.rackID = *rack
	}
	if rebalanceTimeoutMs != -1 {
		updated.rebalanceTimeoutMs = rebalanceTimeoutMs
	}
	return updated
}

func (m *member) clone() *member {
	c := *m
	// subscribed is shared: it is replaced, never changed in place, and
	// members of a group share equal subscriptions (internSubscription).
	c.assigned = m.assigned.clone()
	c.pending = m.pending.clone()
	c.classic = cloneClassic(m.classic)
	return &c
}

// equal is ConsumerGroupMember.equals.
func (m *member) equal(o *member) bool {
	return m.id == o.id && m.instanceID == o.instanceID && m.rackID == o.rackID &&
		m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.subscribed, o.subscribed) && m.regex == o.regex &&
		m.rebalanceTimeoutMs == o.rebalanceTimeoutMs && m.serverAssignor == o.serverAssignor &&
		m.epoch == o.epoch && m.prevEpoch == o.prevEpoch && m.state == o.state &&
		m.assigned.sameEpochs(o.assigned) && m.pending.sameEpochs(o.pending) &&
		equalClassic(m.classic, o.classic)
}

// isReconciledTo is ModernGroupMember.isReconciledTo.
func (m *member) isReconciledTo(epoch int32) bool {
	return m.state == records.MemberStable && m.epoch == epoch
}

// group is the persisted part of a ConsumerGroup: everything here is
// rebuilt by replaying its records, nothing else.
type group struct {
	id string
	// epoch is the group epoch (ConsumerGroupMetadataValue.Epoch).
	epoch int32
	// metadataHash is ConsumerGroupMetadataValue.MetadataHash (4.1+).
	metadataHash int64
	// subscriptionMetadata is the last ConsumerGroupPartitionMetadataValue
	// (4.0): subscribed topic name → id and partition count.
	subscriptionMetadata map[string]topicMeta
	// hasLegacyPartitionMetadata: a PartitionMetadata value was replayed and
	// not yet tombstoned; 4.1+ writes its tombstone on the next metadata
	// update (ConsumerGroup.hasSubscriptionMetadataRecord).
	hasLegacyPartitionMetadata bool
	assignmentEpoch            int32
	assignmentTimestampMs      int64
	members                    map[string]*member
	// order is the order members were created in, which stands in for the
	// iteration order of Kafka's TimelineHashMap where Java HashMap order
	// leaves a tie (assignor.JavaHashMapOrder).
	order []string
	// staticMembers is instance id → member id (ConsumerGroup.staticMembers).
	staticMembers map[string]string
	// target is the target assignment, member id → topic → sorted partitions.
	target map[string]map[TopicID][]int32
	// scratch is the memory of the target assignments (buildTarget),
	// shared with the group's copies.
	scratch *targetScratch
	// recentSubscriptions are the last distinct subscriptions replayed
	// (internSubscription), most recent first.
	recentSubscriptions [][]string
	// recordTargets caches, per member, its target as a list in record
	// order (recordTarget), as Kafka keeps the Assignment object: it is
	// made when first asked for and dropped when the target changes.
	recordTargets map[string][]assignor.TopicPartitions
	// partitionEpochs is ConsumerGroup.currentPartitionEpoch: the epoch of the
	// owner of every assigned or pending-revocation partition.
	partitionEpochs map[TopicID]map[int32]int32
	// resolved is ConsumerGroup.resolvedRegularExpressions: regex → the
	// last ConsumerGroupRegularExpression value (regex.go).
	resolved map[string]resolvedRegex
	// nameCounts, regexCounts and askedAssignors count the members' subscribed
	// topic names, regexes and server assignors (members that ask for one),
	// kept up to date member by member (countMember) as Kafka's
	// ConsumerGroup keeps subscribedTopicNames and subscribedRegularExpressions
	// and ModernGroup its classicProtocolMembersSupportedProtocols: a
	// heartbeat reads them without walking the members.
	nameCounts     map[string]int
	regexCounts    map[string]int
	askedAssignors int
	// classicMembers counts the members that speak the classic protocol
	// (ModernGroup.numClassicProtocolMembers).
	classicMembers int
	// stateKnown is state() since the group last changed; "" until asked.
	stateKnown string
	// undo, while records are applied (Manager.applyAll), collects what puts
	// the group's maps back as they were, so that a failed write leaves the
	// group unchanged without copying it first.
	undo *[]func()
}

// journal records, while records are applied, how to put key k of m back.
func journal[K comparable, V any](g *group, m map[K]V, k K) {
	if g.undo == nil {
		return
	}
	v, ok := m[k]
	*g.undo = append(*g.undo, func() {
		if ok {
			m[k] = v
		} else {
			delete(m, k)
		}
	})
}

// journalDelete deletes k from m, journaled.
func journalDelete[K comparable, V any](g *group, m map[K]V, k K) {
	journal(g, m, k)
	delete(m, k)
}

// replayValue is rec's value as a V and its group, created if need be, or
// an error naming the type the value is (and no group created).
// what names the record in the error.
func replayValue[V records.Value](r *replayer, what any, val records.Value, id string) (*group, V, error) {
	v, ok := val.(V)
	if !ok {
		return nil, v, fmt.Errorf("replay %s of group %q: value is %T", what, id, val)
	}
	return r.getOrCreate(id), v, nil
}

// tombstoned is the group and member a member record's tombstone is for,
// or a nil member when either is unknown (the tombstone changes nothing).
func (r *replayer) tombstoned(groupID, memberID string) (*group, *member) {
	g, ok := r.groups[groupID]
	if !ok {
		return nil, nil
	}
	return g, g.members[memberID]
}

// countMember adds (d = 1) or removes (d = -1) mb's subscription, regex and
// server assignor to the group's counts.
func (g *group) countMember(mb *member, d int) {
	for _, n := range mb.subscribed {
		addCount(g, g.nameCounts, n, d)
	}
	if mb.regex != "" {
		addCount(g, g.regexCounts, mb.regex, d)
	}
	if mb.serverAssignor != "" {
		g.askedAssignors += d
	}
	if mb.useClassicProtocol() {
		g.classicMembers += d
	}
}

func addCount(g *group, m map[string]int, k string, d int) {
	journal(g, m, k)
	if m[k] += d; m[k] <= 0 {
		delete(m, k)
	}
}

type topicMeta struct {
	id         TopicID
	partitions int32
}

func newGroup(id string, initialEpoch int32) *group {
	return &group{
		id:              id,
		epoch:           initialEpoch,
		assignmentEpoch: initialEpoch,
		members:         map[string]*member{},
		staticMembers:   map[string]string{},
		target:          map[string]map[TopicID][]int32{},
		partitionEpochs: map[TopicID]map[int32]int32{},
		resolved:        map[string]resolvedRegex{},
		nameCounts:      map[string]int{},
		regexCounts:     map[string]int{},
	}
}

func cloneTarget(a map[TopicID][]int32) map[TopicID][]int32 {
	out := make(map[TopicID][]int32, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

// memberIDs returns the member ids in creation order.
func (g *group) memberIDs() []string { return slices.Clone(g.order) }

// internSubscription returns names, or an equal subscription another member
// replayed lately, so that members with the same subscription share one
// slice (the target assignment then sees at once that they are equal). It
// keeps the last 8 distinct ones: a homogeneous group has one, Kafka's
// benchmarks' heterogeneous groups have 5.
func (g *group) internSubscription(names []string) []string {
	for i, s := range g.recentSubscriptions {
		if slices.Equal(s, names) {
			copy(g.recentSubscriptions[1:i+1], g.recentSubscriptions[:i])
			g.recentSubscriptions[0] = s
			return s
		}
	}
	if len(g.recentSubscriptions) < 8 {
		g.recentSubscriptions = append(g.recentSubscriptions, nil)
	}
	copy(g.recentSubscriptions[1:], g.recentSubscriptions)
	g.recentSubscriptions[0] = names
	return names
}

// recordTarget is member id's target assignment as the assignor is handed
// it (assignor.GroupSpec.RecordOrder): its topics in the order of the
// records this coordinator writes (Manager.javaOrder's input), each with
// the group's own sorted partitions (shared, read-only); nil when it has
// none. It is kept until the target changes.
func (g *group) recordTarget(id string) []assignor.TopicPartitions {
	if a, ok := g.recordTargets[id]; ok {
		return a
	}
	target := g.target[id]
	var a []assignor.TopicPartitions
	for t, ps := range target {
		if len(ps) > 0 {
			a = append(a, assignor.TopicPartitions{Topic: t, Partitions: ps})
		}
	}
	slices.SortFunc(a, func(x, y assignor.TopicPartitions) int { return compareBytes(x.Topic, y.Topic) })
	if g.recordTargets == nil {
		g.recordTargets = map[string][]assignor.TopicPartitions{}
	}
	g.recordTargets[id] = a
	return a
}

// currentPartitionEpoch is ConsumerGroup.currentPartitionEpoch: -1 if free.
func (g *group) currentPartitionEpoch(t TopicID, p int32) int32 {
	if e, ok := g.partitionEpochs[t][p]; ok {
		return e
	}
	return -1
}

// staticMember is ConsumerGroup.staticMember.
func (g *group) staticMember(instanceID string) *member {
	if instanceID == "" {
		return nil
	}
	id, ok := g.staticMembers[instanceID]
	if !ok {
		return nil
	}
	return g.members[id]
}

// targetOf is ConsumerGroup.targetAssignment(memberId, instanceId): a static
// member that replaces another one inherits that member's target.
func (g *group) targetOf(memberID, instanceID string) map[TopicID][]int32 {
	if instanceID == "" {
		return g.target[memberID]
	}
	if prev, ok := g.staticMembers[instanceID]; ok {
		return g.target[prev]
	}
	return nil
}

// GroupState names of ConsumerGroup.ConsumerGroupState, as Describe and
// ListGroups print them.
const (
	StateEmpty       = "Empty"
	StateAssigning   = "Assigning"
	StateReconciling = "Reconciling"
	StateStable      = "Stable"
)

// state is ConsumerGroup.state: as Kafka's maybeUpdateGroupState, it is
// worked out once after the group changed (replayer.apply forgets it), not
// on every read (an OffsetCommit asks for it, and so does the log's replay
// of every offset commit).
func (g *group) state() string {
	if g.stateKnown == "" {
		g.stateKnown = g.computeState()
	}
	return g.stateKnown
}

// computeState is ConsumerGroup.maybeUpdateGroupState.
func (g *group) computeState() string {
	if len(g.members) == 0 {
		return StateEmpty
	}
	if g.epoch > g.assignmentEpoch {
		return StateAssigning
	}
	for _, m := range g.members {
		if !m.isReconciledTo(g.assignmentEpoch) {
			return StateReconciling
		}
	}
	return StateStable
}

// preferredServerAssignor is ConsumerGroup.computePreferredServerAssignor:
// the assignor most members ask for, ties broken by the iteration order of
// the HashMap of counts (Stream.max keeps the first maximum). "" means none
// asked for.
func (g *group) preferredServerAssignor(old, updated *member) string {
	// Most often nobody asks for an assignor: then there is no need to walk
	// the members in order (which breaks ties between names).
	if (old == nil || old.serverAssignor == "") && (updated == nil || updated.serverAssignor == "") {
		if g.askedAssignors == 0 {
			return ""
		}
	}
	return g.preferredServerAssignorInOrder(old, updated)
}

func (g *group) preferredServerAssignorInOrder(old, updated *member) string {
	counts := map[string]int{}
	var names []string
	add := func(n string, d int) {
		if n == "" {
			return
		}
		if _, ok := counts[n]; !ok && d > 0 {
			names = append(names, n)
		}
		counts[n] += d
	}
	for _, id := range g.order {
		add(g.members[id].serverAssignor, 1)
	}
	if old != nil {
		add(old.serverAssignor, -1)
	}
	if updated != nil {
		add(updated.serverAssignor, 1)
	}
	best, bestCount := "", 0
	for _, n := range assignor.JavaHashMapOrder(names) {
		if c := counts[n]; c > 0 && c > bestCount {
			best, bestCount = n, c
		}
	}
	return best
}

// --- replay (GroupMetadataManager.replay for record types 3–8 and 16) ---

// replayer applies records to a map of groups. It is shared by the live
// path and by Replay, so both change state the same way.
type replayer struct {
	groups       map[string]*group
	initialEpoch int32
	// keepsEpochs: the profile writes AssignmentEpochs (4.3+). Before, replay
	// stamps partitions with max(memberEpoch, 0) whatever the record holds,
	// because no such release reads the field.
	keepsEpochs bool
	// regexVersion is the highest Version of the regex records replayed:
	// the Manager's image version never falls below it (observeTopics).
	regexVersion int64
}

// getOrCreate is getOrMaybeCreatePersistedConsumerGroup(groupId, true).
func (r *replayer) getOrCreate(id string) *group {
	g, ok := r.groups[id]
	if !ok {
		g = newGroup(id, r.initialEpoch)
		r.groups[id] = g
	}
	return g
}

func (r *replayer) apply(rec records.Record) error {
	if id, ok := records.ConsumerGroupOf(rec.Key); ok {
		if g, ok := r.groups[id]; ok {
			g.stateKnown = "" // the record may change it
		}
	}
	switch k := rec.Key.(type) {
	case records.ConsumerGroupMetadataKey:
		return r.replayMetadata(k, rec.Value)
	case records.ConsumerGroupPartitionMetadataKey:
		if rec.Value == nil {
			if g, ok := r.groups[k.GroupID]; ok {
				g.hasLegacyPartitionMetadata = false
				g.subscriptionMetadata = nil
			}
			return nil
		}
		g, v, err := replayValue[*records.ConsumerGroupPartitionMetadataValue](r, rec.Type(), rec.Value, k.GroupID)
		if err != nil {
			return err
		}
		g.hasLegacyPartitionMetadata = true
		g.subscriptionMetadata = map[string]topicMeta{}
		for _, t := range v.Topics {
			g.subscriptionMetadata[t.TopicName] = topicMeta{id: t.TopicID, partitions: t.NumPartitions}
		}
		return nil
	case records.ConsumerGroupMemberMetadataKey:
		return r.replayMemberMetadata(k, rec.Value)
	case records.ConsumerGroupTargetAssignmentMetadataKey:
		if rec.Value == nil {
			g, ok := r.groups[k.GroupID]
			if !ok {
				return nil
			}
			if len(g.target) != 0 {
				return fmt.Errorf("replay TargetAssignmentMetadata tombstone of group %q: the target assignment still has %d members", k.GroupID, len(g.target))
			}
			g.assignmentEpoch, g.assignmentTimestampMs = -1, 0
			return nil
		}
		g, v, err := replayValue[*records.ConsumerGroupTargetAssignmentMetadataValue](r, rec.Type(), rec.Value, k.GroupID)
		if err != nil {
			return err
		}
		g.assignmentEpoch, g.assignmentTimestampMs = v.AssignmentEpoch, v.AssignmentTimestamp
		return nil
	case records.ConsumerGroupTargetAssignmentMemberKey:
		if rec.Value == nil {
			if g, ok := r.groups[k.GroupID]; ok {
				journalDelete(g, g.target, k.MemberID)
				journalDelete(g, g.recordTargets, k.MemberID)
			}
			return nil
		}
		g, v, err := replayValue[*records.ConsumerGroupTargetAssignmentMemberValue](r, rec.Type(), rec.Value, k.GroupID)
		if err != nil {
			return err
		}
		a := map[TopicID][]int32{}
		for _, t := range v.TopicPartitions {
			ps := append(a[t.TopicID], t.Partitions...)
			slices.Sort(ps)
			a[t.TopicID] = slices.Compact(ps)
		}
		journal(g, g.target, k.MemberID)
		g.target[k.MemberID] = a
		journalDelete(g, g.recordTargets, k.MemberID)
		return nil
	case records.ConsumerGroupCurrentMemberAssignmentKey:
		return r.replayCurrentAssignment(k, rec.Value)
	case records.ConsumerGroupRegularExpressionKey:
		// GMM.replay(ConsumerGroupRegularExpressionKey, …): a value creates
		// the group if needed; a tombstone of an unknown group is ignored.
		if rec.Value == nil {
			if g, ok := r.groups[k.GroupID]; ok {
				journalDelete(g, g.resolved, k.RegularExpression)
			}
			return nil
		}
		g, v, err := replayValue[*records.ConsumerGroupRegularExpressionValue](r, rec.Type(), rec.Value, k.GroupID)
		if err != nil {
			return err
		}
		journal(g, g.resolved, k.RegularExpression)
		g.resolved[k.RegularExpression] = resolvedRegex{topics: sortedSet(v.Topics), version: v.Version, timestamp: v.Timestamp}
		r.regexVersion = max(r.regexVersion, v.Version)
		return nil
	case nil:
		return fmt.Errorf("replay: record without a key")
	default:
		return fmt.Errorf("replay: %s records are not consumer-group records (types 3–8, 16)", rec.Type())
	}
}

func (r *replayer) replayMetadata(k records.ConsumerGroupMetadataKey, val records.Value) error {
	if val == nil {
		g, ok := r.groups[k.GroupID]
		if !ok {
			return nil
		}
		switch {
		case len(g.members) != 0:
			return fmt.Errorf("replay ConsumerGroupMetadata tombstone of group %q: the group still has %d members", k.GroupID, len(g.members))
		case len(g.target) != 0:
			return fmt.Errorf("replay ConsumerGroupMetadata tombstone of group %q: the target assignment still has %d members", k.GroupID, len(g.target))
		case g.assignmentEpoch != -1:
			return fmt.Errorf("replay ConsumerGroupMetadata tombstone of group %q: no TargetAssignmentMetadata tombstone came first", k.GroupID)
		}
		delete(r.groups, k.GroupID)
		return nil
	}
	g, v, err := replayValue[*records.ConsumerGroupMetadataValue](r, "ConsumerGroupMetadata", val, k.GroupID)
	if err != nil {
		return err
	}
	g.epoch, g.metadataHash = v.Epoch, v.MetadataHash
	return nil
}

func (r *replayer) replayMemberMetadata(k records.ConsumerGroupMemberMetadataKey, val records.Value) error {
	if val == nil {
		g, old := r.tombstoned(k.GroupID, k.MemberID)
		if old == nil {
			return nil
		}
		if old.epoch != -1 {
			return fmt.Errorf("replay MemberMetadata tombstone of member %q in group %q: no CurrentMemberAssignment tombstone came first (epoch %d)", k.MemberID, k.GroupID, old.epoch)
		}
		if _, ok := g.target[k.MemberID]; ok {
			return fmt.Errorf("replay MemberMetadata tombstone of member %q in group %q: no TargetAssignmentMember tombstone came first", k.MemberID, k.GroupID)
		}
		return g.removeMember(k.MemberID)
	}
	g, v, err := replayValue[*records.ConsumerGroupMemberMetadataValue](r, "MemberMetadata", val, k.GroupID)
	if err != nil {
		return err
	}
	m := g.memberOrNew(k.MemberID)
	m.instanceID = deref(v.InstanceID)
	m.rackID = deref(v.RackID)
	m.clientID, m.clientHost = v.ClientID, v.ClientHost
	// The field is not nullable: an empty list (which may decode as nil)
	// is an empty subscription.
	m.setSubscribed(g.internSubscription(sortedSet(v.SubscribedTopicNames)))
	m.regex = deref(v.SubscribedTopicRegex)
	m.rebalanceTimeoutMs = v.RebalanceTimeoutMs
	m.serverAssignor = deref(v.ServerAssignor)
	// ConsumerGroupMember.Builder.updateWith: a classic-protocol member
	// keeps its session timeout and protocols; a value without the tag
	// decodes to an empty struct, which Kafka's replay also takes for a
	// classic member (records.ConsumerGroupMemberMetadataValue).
	m.classic = cloneClassic(v.ClassicMemberMetadata)
	return g.updateMember(m)
}

func (r *replayer) replayCurrentAssignment(k records.ConsumerGroupCurrentMemberAssignmentKey, val records.Value) error {
	if val == nil {
		g, old := r.tombstoned(k.GroupID, k.MemberID)
		if old == nil {
			return nil
		}
		m := old.clone()
		m.epoch, m.prevEpoch = -1, -1
		m.assigned, m.pending = assignment{}, assignment{}
		return g.updateMember(m)
	}
	g, v, err := replayValue[*records.ConsumerGroupCurrentMemberAssignmentValue](r, "CurrentMemberAssignment", val, k.GroupID)
	if err != nil {
		return err
	}
	m := g.memberOrNew(k.MemberID)
	m.epoch, m.prevEpoch, m.state = v.MemberEpoch, v.PreviousMemberEpoch, v.State
	m.assigned = r.fromTopics(v.AssignedPartitions, v.MemberEpoch)
	m.pending = r.fromTopics(v.PartitionsPendingRevocation, v.MemberEpoch)
	return g.updateMember(m)
}

// fromTopics is Utils.assignmentFromTopicPartitions.
func (r *replayer) fromTopics(ts []records.CurrentAssignmentTopic, memberEpoch int32) assignment {
	def := max(memberEpoch, 0)
	out := assignment{}
	for _, t := range ts {
		ps := out[t.TopicID]
		if ps == nil {
			ps = map[int32]int32{}
			out[t.TopicID] = ps
		}
		useEpochs := r.keepsEpochs && len(t.AssignmentEpochs) == len(t.Partitions)
		for i, p := range t.Partitions {
			if useEpochs {
				ps[p] = t.AssignmentEpochs[i]
			} else {
				ps[p] = def
			}
		}
	}
	return out
}

// memberOrNew returns a copy of the member, or a new default member.
func (g *group) memberOrNew(id string) *member {
	if m, ok := g.members[id]; ok {
		return m.clone()
	}
	return newMember(id)
}

// updateMember is ConsumerGroup.updateMember, keeping the partition epochs.
//
// Invariants (ConsumerGroup.addPartitionEpochs / removePartitionEpochs):
//  1. A partition has at most one owner epoch; it is removed only by the
//     owner at the epoch it was added with.
//  2. A partition can be (re)added only at an epoch greater than the one it
//     is held at: two owners at one epoch is refused, as Kafka's
//     IllegalStateException refuses it.
func (g *group) updateMember(m *member) error {
	old, existed := g.members[m.id]
	if existed {
		g.removePartitionEpochs(old.assigned, old.epoch)
		g.removePartitionEpochs(old.pending, old.epoch)
	}
	if err := g.addPartitionEpochs(m.assigned, m.epoch); err != nil {
		return fmt.Errorf("member %q of group %q: %w", m.id, g.id, err)
	}
	if err := g.addPartitionEpochs(m.pending, m.epoch); err != nil {
		return fmt.Errorf("member %q of group %q: %w", m.id, g.id, err)
	}
	if !existed {
		if g.undo != nil {
			n := len(g.order)
			*g.undo = append(*g.undo, func() { g.order = g.order[:n] })
		}
		g.order = append(g.order, m.id)
	} else {
		g.countMember(old, -1)
	}
	g.countMember(m, 1)
	journal(g, g.members, m.id)
	g.members[m.id] = m
	if m.instanceID != "" {
		journal(g, g.staticMembers, m.instanceID)
		g.staticMembers[m.instanceID] = m.id
	}
	return nil
}

// removeMember is ConsumerGroup.removeMember.
func (g *group) removeMember(id string) error {
	old, ok := g.members[id]
	if !ok {
		return nil
	}
	g.removePartitionEpochs(old.assigned, old.epoch)
	g.removePartitionEpochs(old.pending, old.epoch)
	g.countMember(old, -1)
	journalDelete(g, g.members, id)
	if g.undo != nil {
		// DeleteFunc moves the ids after id in place.
		order := slices.Clone(g.order)
		*g.undo = append(*g.undo, func() { g.order = order })
	}
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	if old.instanceID != "" {
		journalDelete(g, g.staticMembers, old.instanceID)
	}
	return nil
}

func (g *group) removePartitionEpochs(a assignment, expected int32) {
	for t, ps := range a {
		cur := g.partitionEpochs[t]
		for p := range ps {
			if e, ok := cur[p]; ok && e == expected {
				journalDelete(g, cur, p)
			}
		}
		if len(cur) == 0 {
			journalDelete(g, g.partitionEpochs, t)
		}
	}
}

func (g *group) addPartitionEpochs(a assignment, epoch int32) error {
	// Check first so that a refused update leaves nothing half-applied.
	for t, ps := range a {
		for p := range ps {
			if e, ok := g.partitionEpochs[t][p]; ok && e >= epoch {
				return fmt.Errorf("cannot set the epoch of %s-%d to %d because the partition is still owned at epoch %d", t, p, epoch, e)
			}
		}
	}
	for t, ps := range a {
		cur := g.partitionEpochs[t]
		if cur == nil {
			cur = map[int32]int32{}
			journal(g, g.partitionEpochs, t)
			g.partitionEpochs[t] = cur
		}
		for p := range ps {
			journal(g, cur, p)
			cur[p] = epoch
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortedSet(ss []string) []string {
	out := slices.Clone(ss)
	slices.Sort(out)
	return slices.Compact(out)
}
