package coordinator

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/coordinator/records"
)

// State is the coordinator's durable state: what a coordinator that loads
// the log written so far would hold. Live and replayed coordinators must
// agree on it at every step (the "kill at any point and restart"
// property), so it leaves out what Kafka does not persist: timers, parked
// requests, pending members, and a classic rebalance in flight. For a
// classic group in PreparingRebalance or CompletingRebalance it reports the
// group as its last GroupMetadata record left it, which is where a restart
// would take it back to; for Empty and Stable groups it is computed from
// the live group, so the check compares live state with the log.
// currentStateTimestamp is left out: the record of a sync carries the
// CompletingRebalance time while the live group moves on to Stable.
//
// All slices are sorted; compare with Equal, print with String.
type State struct {
	Classic []ClassicGroupState
	Offsets []OffsetState
	// Consumer is ConsumerGroups.State().
	Consumer string
	// Share renders the share groups (records 10–15) canonically.
	Share string
}

// ClassicGroupState is a classic group as its GroupMetadata record holds it.
type ClassicGroupState struct {
	Group        string
	State        string // Empty or Stable
	Generation   int32
	ProtocolType string
	Protocol     string // "" for none
	Leader       string // "" for none
	Members      []ClassicMemberState
}

// ClassicMemberState is a member as GroupMetadataValue.MemberMetadata holds it.
type ClassicMemberState struct {
	MemberID           string
	InstanceID         string // "" for a dynamic member
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	SessionTimeoutMs   int32
	Subscription       string // raw bytes
	Assignment         string // raw bytes
}

// OffsetState is one committed offset.
type OffsetState struct {
	Group           string
	Topic           string
	Partition       int32
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64
	ExpireTimestamp int64
	TopicID         [16]byte
}

// Equal reports whether two states are the same.
func (s State) Equal(o State) bool { return reflect.DeepEqual(s.normalized(), o.normalized()) }

func (s State) normalized() State {
	if len(s.Classic) == 0 {
		s.Classic = nil
	}
	if len(s.Offsets) == 0 {
		s.Offsets = nil
	}
	return s
}

// String renders the state one line per group, member and offset.
func (s State) String() string {
	var b strings.Builder
	for _, g := range s.Classic {
		fmt.Fprintf(&b, "group %s classic state=%s generation=%d protocol-type=%q protocol=%q leader=%q\n",
			g.Group, g.State, g.Generation, g.ProtocolType, g.Protocol, g.Leader)
		for _, m := range g.Members {
			fmt.Fprintf(&b, "  member %s instance=%q client=%q host=%q rebalance-timeout=%d session-timeout=%d subscription=%q assignment=%q\n",
				m.MemberID, m.InstanceID, m.ClientID, m.ClientHost, m.RebalanceTimeoutMs, m.SessionTimeoutMs, m.Subscription, m.Assignment)
		}
	}
	for _, o := range s.Offsets {
		fmt.Fprintf(&b, "offset %s %s/%d offset=%d leader-epoch=%d metadata=%q commit-ts=%d expire-ts=%d",
			o.Group, o.Topic, o.Partition, o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp, o.ExpireTimestamp)
		if o.TopicID != [16]byte{} {
			fmt.Fprintf(&b, " topic-id=%x", o.TopicID)
		}
		b.WriteByte('\n')
	}
	if s.Consumer != "" {
		b.WriteString(s.Consumer)
		if !strings.HasSuffix(s.Consumer, "\n") {
			b.WriteByte('\n')
		}
	}
	b.WriteString(s.Share)
	return b.String()
}

// State returns the durable state (see State).
func (c *Coordinator) State() State {
	var s State
	for _, id := range sortedKeys(c.classic) {
		g := c.classic[id]
		switch g.state {
		case Empty, Stable:
			s.Classic = append(s.Classic, liveClassicState(g))
		default:
			if g.persisted != nil {
				s.Classic = append(s.Classic, *g.persisted)
			}
		}
	}
	for _, group := range sortedKeys(c.offsets.byGroup) {
		for _, k := range c.offsets.keys(group) {
			o, _ := c.offsets.get(group, k.topic, k.partition)
			s.Offsets = append(s.Offsets, OffsetState{
				Group: group, Topic: k.topic, Partition: k.partition,
				Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: o.metadata,
				CommitTimestamp: o.commitTimestamp, ExpireTimestamp: o.expireTimestamp, TopicID: o.topicID,
			})
		}
	}
	s.Consumer = c.consumer.State()
	s.Share = c.share.String()
	return s
}

func liveClassicState(g *classicGroup) ClassicGroupState {
	out := ClassicGroupState{
		Group:      g.id,
		State:      g.state.String(),
		Generation: g.generation,
	}
	if g.protocolType != nil {
		out.ProtocolType = *g.protocolType
	}
	if g.protocolName != nil {
		out.Protocol = *g.protocolName
	}
	if g.leader != nil && g.members.len() > 0 {
		out.Leader = *g.leader
	}
	for _, m := range g.allMembers() {
		ms := ClassicMemberState{
			MemberID:           m.id,
			ClientID:           m.clientID,
			ClientHost:         m.clientHost,
			RebalanceTimeoutMs: m.rebalanceTimeoutMs,
			SessionTimeoutMs:   m.sessionTimeoutMs,
			Assignment:         string(m.assignment),
		}
		if m.instanceID != nil {
			ms.InstanceID = *m.instanceID
		}
		if g.protocolName != nil {
			ms.Subscription = string(m.metadata(*g.protocolName))
		}
		out.Members = append(out.Members, ms)
	}
	sortMembers(out.Members)
	return out
}

// persistedFromRecord is the state a GroupMetadata record describes, as
// replayGroupMetadata would rebuild it.
func persistedFromRecord(id string, v *records.GroupMetadataValue) *ClassicGroupState {
	out := &ClassicGroupState{
		Group:        id,
		State:        Empty.String(),
		Generation:   v.Generation,
		ProtocolType: v.ProtocolType,
	}
	if len(v.Members) > 0 {
		out.State = Stable.String()
	}
	if v.Protocol != nil {
		out.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		out.Leader = *v.Leader
	} else if len(v.Members) > 0 {
		out.Leader = v.Members[0].MemberID
	}
	if len(v.Members) == 0 {
		out.Leader = ""
	}
	for _, vm := range v.Members {
		rt := vm.RebalanceTimeoutMillis
		if rt == -1 {
			rt = vm.SessionTimeoutMillis
		}
		ms := ClassicMemberState{
			MemberID:           vm.MemberID,
			ClientID:           vm.ClientID,
			ClientHost:         vm.ClientHost,
			RebalanceTimeoutMs: rt,
			SessionTimeoutMs:   vm.SessionTimeoutMillis,
			Subscription:       string(vm.Subscription),
			Assignment:         string(vm.Assignment),
		}
		if vm.InstanceID != nil {
			ms.InstanceID = *vm.InstanceID
		}
		out.Members = append(out.Members, ms)
	}
	sortMembers(out.Members)
	return out
}

func sortMembers(ms []ClassicMemberState) {
	slices.SortFunc(ms, func(a, b ClassicMemberState) int { return strings.Compare(a.MemberID, b.MemberID) })
}
