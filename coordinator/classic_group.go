package coordinator

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ClassicState is the state of a classic group (classic/ClassicGroupState.java).
type ClassicState int8

// The classic group states, named as DescribeGroups and ListGroups name them.
const (
	Empty ClassicState = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

// String returns Kafka's name of the state (ClassicGroupState.toString).
func (s ClassicState) String() string {
	switch s {
	case Empty:
		return "Empty"
	case PreparingRebalance:
		return "PreparingRebalance"
	case CompletingRebalance:
		return "CompletingRebalance"
	case Stable:
		return "Stable"
	case Dead:
		return "Dead"
	}
	return fmt.Sprintf("ClassicState(%d)", int8(s))
}

// validPrevious is ClassicGroupState's static block: the states a state may
// be entered from.
func (s ClassicState) validPrevious(prev ClassicState) bool {
	switch s {
	case Empty:
		return prev == PreparingRebalance
	case PreparingRebalance:
		return prev == Stable || prev == CompletingRebalance || prev == Empty
	case CompletingRebalance:
		return prev == PreparingRebalance
	case Stable:
		return prev == CompletingRebalance
	case Dead:
		return true
	}
	return false
}

// protocol is one JoinGroupRequestProtocol: a name and its opaque metadata.
type protocol struct {
	name     string
	metadata []byte
}

// parked is a request whose response Kafka holds in a future: a JoinGroup
// until the join phase completes, a SyncGroup until the leader's assignment
// is stored. ticket 0 means nothing is parked.
type parked struct {
	ticket  Ticket
	version int16
}

func (p parked) waiting() bool { return p.ticket != 0 }

// classicMember is ClassicGroupMember.
type classicMember struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	// rebalanceTimeoutMs and sessionTimeoutMs as the member last joined with.
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []protocol
	assignment         []byte
	awaitingJoin       parked
	awaitingSync       parked
	// isNew is set until the member's first join completes: such a member
	// can expire while its JoinGroup is parked (hasSatisfiedHeartbeat).
	isNew bool
}

// names are the member id, instance id (a copy), client id and client
// host, as DescribeGroups and the GroupMetadataValue record list a member.
func (m *classicMember) names() (id string, instanceID *string, clientID, clientHost string) {
	return m.id, cloneStr(m.instanceID), m.clientID, m.clientHost
}

func (m *classicMember) static() bool { return m.instanceID != nil }

// metadata is ClassicGroupMember.metadata: the metadata of the named
// protocol, nil if the member does not support it.
func (m *classicMember) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches is ClassicGroupMember.matches: the protocol lists are equal in
// order, names and metadata (ImplicitLinkedHashCollection.equals compares
// the value lists).
func (m *classicMember) matches(ps []protocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b protocol) bool {
		return a.name == b.name && bytes.Equal(a.metadata, b.metadata)
	})
}

// vote is ClassicGroupMember.vote: the member's most preferred protocol
// among the candidates.
func (m *classicMember) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

// hasSatisfiedHeartbeat is ClassicGroupMember.hasSatisfiedHeartbeat: a
// member awaiting a join or sync response is alive, unless it is new.
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.awaitingJoin.waiting() || m.awaitingSync.waiting()
}

// classicGroup is ClassicGroup: the in-memory state of one classic group.
//
// Invariants (ClassicGroup keeps them in add, remove and updateMember):
//  1. numAwaitingJoin is the number of members with awaitingJoin set.
//  2. supportedProtocols[name] is the number of members listing name.
//  3. staticMembers maps every static member's instance id to its member id.
//  4. leader, when set, is a member; it is unset only when there are no
//     members or the group was loaded without one.
//  5. A pending member (MEMBER_ID_REQUIRED) is never a member.
//  6. pendingSync ⊆ members ∪ replaced. ClassicGroup.replaceStaticMember
//     leaves the replaced id in pendingSyncMembers, so a static member
//     replaced before it synced keeps the sync timer waiting, and when it
//     fires it removes nobody but still rebalances (expirePendingSync).
//     replaced holds such ids for the invariant check only.
type classicGroup struct {
	id                    string
	state                 ClassicState
	previousState         ClassicState
	currentStateTimestamp int64 // -1: none
	generation            int32
	protocolType          *string
	protocolName          *string
	leader                *string
	members               *javaMap[*classicMember]
	staticMembers         map[string]string
	pendingJoin           map[string]bool
	pendingSync           map[string]bool
	supportedProtocols    map[string]int
	numAwaitingJoin       int
	newMemberAdded        bool
	// replaced are member ids replaced by a static member's new
	// incarnation (see invariant 6); tests read it.
	replaced map[string]bool
	// subscribedTopics is computeSubscribedTopics: nil when unknown.
	subscribedTopics map[string]bool
	// persisted is the group as its last GroupMetadata record states it; it
	// is what a coordinator that loads the log now would rebuild, and what
	// State reports while a rebalance is in flight.
	persisted *ClassicGroupState
}

func newClassicGroup(id string, now int64) *classicGroup {
	return &classicGroup{
		id:                    id,
		state:                 Empty,
		previousState:         Empty,
		currentStateTimestamp: now,
		members:               newJavaMap[*classicMember](),
		staticMembers:         map[string]string{},
		pendingJoin:           map[string]bool{},
		pendingSync:           map[string]bool{},
		supportedProtocols:    map[string]int{},
		// Until a GroupMetadata record says otherwise, the log holds at
		// most offsets for the group, from which a load makes a simple
		// group: Empty, generation 0, no protocol type.
		persisted: &ClassicGroupState{Group: id, State: Empty.String()},
	}
}

func (g *classicGroup) in(s ClassicState) bool { return g.state == s }

func (g *classicGroup) isLeader(memberID string) bool {
	return g.leader != nil && *g.leader == memberID
}

func (g *classicGroup) member(id string) *classicMember {
	m, _ := g.members.get(id)
	return m
}

// allMembers returns the members in HashMap iteration order.
func (g *classicGroup) allMembers() []*classicMember {
	ids := g.members.ordered()
	out := make([]*classicMember, len(ids))
	for i, id := range ids {
		out[i], _ = g.members.get(id)
	}
	return out
}

// transitionTo is ClassicGroup.transitionTo. An invalid transition is a bug
// in this package, as it is an IllegalStateException in Kafka.
func (g *classicGroup) transitionTo(s ClassicState, now int64) {
	if !s.validPrevious(g.state) {
		panic(fmt.Sprintf("coordinator: classic group %q cannot go from %s to %s", g.id, g.state, s))
	}
	g.previousState = g.state
	g.state = s
	g.currentStateTimestamp = now
}

// canRebalance is ClassicGroup.canRebalance.
func (g *classicGroup) canRebalance() bool { return PreparingRebalance.validPrevious(g.state) }

// hasAllMembersJoined is ClassicGroup.hasAllMembersJoined.
func (g *classicGroup) hasAllMembersJoined() bool {
	return g.members.len() == g.numAwaitingJoin && len(g.pendingJoin) == 0
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members.
func (g *classicGroup) rebalanceTimeoutMs() int32 {
	var out int32
	for _, m := range g.members.vals {
		out = max(out, m.rebalanceTimeoutMs)
	}
	return out
}

// add is ClassicGroup.add. join is the parked JoinGroup, if any.
func (g *classicGroup) add(m *classicMember, join parked) {
	if m.instanceID != nil {
		if _, ok := g.staticMembers[*m.instanceID]; ok {
			panic(fmt.Sprintf("coordinator: static member %q added twice to group %q", *m.instanceID, g.id))
		}
		g.staticMembers[*m.instanceID] = m.id
	}
	if g.members.len() == 0 {
		pt := m.protocolType
		g.protocolType = &pt
	}
	if g.leader == nil {
		id := m.id
		g.leader = &id
	}
	g.members.put(m.id, m)
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]++
	}
	m.awaitingJoin = join
	if join.waiting() {
		g.numAwaitingJoin++
	}
	delete(g.pendingJoin, m.id)
}

// remove is ClassicGroup.remove: a leaving leader is replaced by the first
// remaining member in HashMap order.
func (g *classicGroup) remove(id string) {
	if m, ok := g.members.remove(id); ok {
		for _, p := range m.protocols {
			g.supportedProtocols[p.name]--
		}
		if m.awaitingJoin.waiting() {
			g.numAwaitingJoin--
		}
		if m.instanceID != nil {
			delete(g.staticMembers, *m.instanceID)
		}
	}
	if g.isLeader(id) {
		if next, ok := g.members.first(); ok {
			g.leader = &next
		} else {
			g.leader = nil
		}
	}
	delete(g.pendingJoin, id)
	delete(g.pendingSync, id)
}

// updateMember is ClassicGroup.updateMember.
func (g *classicGroup) updateMember(m *classicMember, ps []protocol, rebalanceTimeoutMs, sessionTimeoutMs int32, join parked) {
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]--
	}
	m.protocols = ps
	for _, p := range m.protocols {
		g.supportedProtocols[p.name]++
	}
	m.rebalanceTimeoutMs = rebalanceTimeoutMs
	m.sessionTimeoutMs = sessionTimeoutMs
	if join.waiting() && !m.awaitingJoin.waiting() {
		g.numAwaitingJoin++
	} else if !join.waiting() && m.awaitingJoin.waiting() {
		g.numAwaitingJoin--
	}
	m.awaitingJoin = join
}

// candidateProtocols are the protocols every member supports.
func (g *classicGroup) candidateProtocols() map[string]bool {
	out := map[string]bool{}
	for name, n := range g.supportedProtocols {
		if n == g.members.len() {
			out[name] = true
		}
	}
	return out
}

// selectProtocol is ClassicGroup.selectProtocol: every member votes for its
// preferred common protocol; most votes wins, and a tie goes to the protocol
// first in the iteration order of the votes HashMap (Stream.max keeps the
// first of equal elements).
func (g *classicGroup) selectProtocol() string {
	candidates := g.candidateProtocols()
	votes := newJavaMap[int]()
	for _, m := range g.allMembers() {
		name := m.vote(candidates)
		n, _ := votes.get(name)
		votes.put(name, n+1)
	}
	best, bestVotes := "", -1
	for _, name := range votes.ordered() {
		if n, _ := votes.get(name); n > bestVotes {
			best, bestVotes = name, n
		}
	}
	return best
}

// supportsProtocols is ClassicGroup.supportsProtocols.
func (g *classicGroup) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.in(Empty) {
		return protocolType != "" && len(ps) != 0
	}
	if g.protocolType == nil || *g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportedProtocols[p.name] == g.members.len() {
			return true
		}
	}
	return false
}

// validateMember is ClassicGroup.validateMember.
func (g *classicGroup) validateMember(memberID string, instanceID *string) error {
	if instanceID != nil {
		existing, ok := g.staticMembers[*instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if existing != memberID {
			return kerr.FencedInstanceID
		}
	}
	if !g.members.has(memberID) {
		return kerr.UnknownMemberID
	}
	return nil
}

// maybeElectNewJoinedLeader is ClassicGroup.maybeElectNewJoinedLeader.
func (g *classicGroup) maybeElectNewJoinedLeader() bool {
	if g.leader == nil {
		return false
	}
	if cur := g.member(*g.leader); cur != nil && cur.awaitingJoin.waiting() {
		return true
	}
	for _, m := range g.allMembers() {
		if m.awaitingJoin.waiting() {
			id := m.id
			g.leader = &id
			return true
		}
	}
	return false
}

// initNextGeneration is ClassicGroup.initNextGeneration.
func (g *classicGroup) initNextGeneration(now int64) {
	g.generation++
	if g.members.len() > 0 {
		p := g.selectProtocol()
		g.protocolName = &p
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transitionTo(CompletingRebalance, now)
	} else {
		g.protocolName = nil
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transitionTo(Empty, now)
	}
	clear(g.pendingSync)
	clear(g.replaced)
}

// replaceStaticMember is ClassicGroup.replaceStaticMember; the fenced
// member's parked join and sync are answered FENCED_INSTANCE_ID by the
// caller, which receives the old member.
func (g *classicGroup) replaceStaticMember(instanceID, oldID, newID string) (oldMember, newMember *classicMember) {
	old, ok := g.members.remove(oldID)
	if !ok {
		panic(fmt.Sprintf("coordinator: cannot replace unknown member %q of group %q", oldID, g.id))
	}
	nm := &classicMember{
		id:                 newID,
		instanceID:         old.instanceID,
		clientID:           old.clientID,
		clientHost:         old.clientHost,
		rebalanceTimeoutMs: old.rebalanceTimeoutMs,
		sessionTimeoutMs:   old.sessionTimeoutMs,
		protocolType:       old.protocolType,
		protocols:          old.protocols,
		assignment:         old.assignment,
	}
	g.members.put(newID, nm)
	if g.isLeader(oldID) {
		g.leader = &newID
	}
	g.staticMembers[instanceID] = newID
	if g.pendingSync[oldID] {
		if g.replaced == nil {
			g.replaced = map[string]bool{}
		}
		g.replaced[oldID] = true
	}
	// The fenced member's join, if one was parked, no longer counts.
	if old.awaitingJoin.waiting() {
		g.numAwaitingJoin--
	}
	return old, nm
}

// usesConsumerProtocol reports whether the protocol type is "consumer".
func (g *classicGroup) usesConsumerProtocol() bool {
	return g.protocolType != nil && *g.protocolType == "consumer"
}

// isSubscribedToTopic is ClassicGroup.isSubscribedToTopic.
func (g *classicGroup) isSubscribedToTopic(topic string) bool {
	if g.subscribedTopics == nil {
		return g.usesConsumerProtocol()
	}
	return g.subscribedTopics[topic]
}

// computeSubscribedTopics is ClassicGroup.computeSubscribedTopics: the
// union of the members' subscriptions, read as ConsumerProtocolSubscription
// v0 (the prefix of every version); nil when unknown.
func (g *classicGroup) computeSubscribedTopics() map[string]bool {
	if !g.usesConsumerProtocol() {
		return nil
	}
	out := map[string]bool{}
	if g.members.len() == 0 {
		return out
	}
	if g.protocolName == nil {
		return nil
	}
	for _, m := range g.members.vals {
		topics, ok := parseSubscriptionTopics(m.metadata(*g.protocolName))
		if !ok {
			return nil
		}
		for _, t := range topics {
			out[t] = true
		}
	}
	return out
}

// parseSubscriptionTopics reads the version and the topics of a
// ConsumerProtocolSubscription at version 0, as
// ConsumerProtocol.deserializeConsumerProtocolSubscription(buf, 0) does.
func parseSubscriptionTopics(b []byte) ([]string, bool) {
	if len(b) < 6 {
		return nil, false
	}
	b = b[2:]
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 {
		return nil, false
	}
	var out []string
	for i := int32(0); i < n; i++ {
		if len(b) < 2 {
			return nil, false
		}
		l := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if l < 0 || len(b) < int(l) {
			return nil, false
		}
		out = append(out, string(b[:l]))
		b = b[l:]
	}
	return out, true
}

// validateOffsetCommit is ClassicGroup.validateOffsetCommit for a
// non-transactional commit.
func (g *classicGroup) validateOffsetCommit(memberID string, instanceID *string, generation int32) error {
	if g.in(Dead) {
		return kerr.CoordinatorNotAvailable
	}
	if generation < 0 && g.in(Empty) {
		return nil
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if err := g.validateMember(memberID, instanceID); err != nil {
			return err
		}
		if generation != g.generation {
			return kerr.IllegalGeneration
		}
	} else if !g.in(Empty) {
		return kerr.UnknownMemberID
	}
	if g.in(CompletingRebalance) {
		return kerr.RebalanceInProgress
	}
	return nil
}

// groupAssignment is ClassicGroup.groupAssignment.
func (g *classicGroup) groupAssignment() map[string][]byte {
	out := map[string][]byte{}
	for id, m := range g.members.vals {
		out[id] = m.assignment
	}
	return out
}
