// Package assign holds the classic consumer protocol's client-side assignors:
// range, roundrobin, sticky and cooperative-sticky. Our classic group member
// runs one of them when the coordinator makes it the group leader.
//
// Each assignor reproduces what the Java client's assignor of the same name
// computes for the same input (Kafka 4.x, clients/src/main/java/org/apache/
// kafka/clients/consumer/{RangeAssignor,RoundRobinAssignor,StickyAssignor,
// CooperativeStickyAssignor}.java and internals/AbstractStickyAssignor.java),
// because in a mixed group our leader, a Java leader and a kgo leader take
// turns, and a member that disagrees with the previous leader's plan moves
// partitions for nothing or, with cooperative rebalancing, consumes a
// partition that another member has not revoked yet.
//
// Exactness includes the parts of the Java algorithms that depend on
// java.util.HashMap iteration order (which member keeps the extra partition
// in the sticky assignors, which previous owner wins a tie): the input slice
// order stands for the JoinGroup response order, and javaorder.go computes
// the order a HashMap filled in that order iterates.
//
// The package is pure: no IO, no clock, no randomness, no package-level
// mutable state.
package assign

import (
	"fmt"
	"slices"
	"strings"
)

// Member is one group member's subscription as the leader sees it in the
// JoinGroup response: its ids plus the decoded ConsumerProtocolSubscription.
type Member struct {
	// ID is the member id the coordinator gave the member.
	ID string
	// InstanceID is the static group.instance.id, nil for dynamic members.
	// Java orders members with an instance id first (MemberInfo.compareTo);
	// an empty but present instance id counts as present, as in Java's
	// Optional.ofNullable.
	InstanceID *string
	// Topics is the subscription. Duplicates are ignored.
	Topics []string
	// Owned is ownedPartitions (subscription v1+): topic → partitions.
	// cooperative-sticky reads it; sticky reads ownership from UserData.
	Owned map[string][]int32
	// Generation is the subscription's generationId (v2+); negative means
	// absent, as Java's Subscription treats it.
	Generation int32
	// Rack is the rack id (v3+); "" means none. Racks matter to Java only
	// when partition replica racks are known, which this package's input
	// does not carry (see Assignor).
	Rack string
	// UserData is the assignor's opaque user data: StickyAssignor's
	// previous assignment and generation for sticky, the generation for
	// cooperative-sticky with a pre-v2 subscription.
	UserData []byte
}

// Assignment is the leader's plan: member id → topic → partitions. Every
// member of the input has an entry (possibly empty); partitions are sorted
// ascending.
type Assignment map[string]map[string][]int32

// String renders the plan sorted by member and topic, one member a line,
// so that test failures and logs are stable.
func (a Assignment) String() string {
	var b strings.Builder
	for _, m := range sortedKeys(a) {
		fmt.Fprintf(&b, "%s:", m)
		for _, t := range sortedKeys(a[m]) {
			fmt.Fprintf(&b, " %s%v", t, a[m][t])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Count is the number of partitions assigned to member.
func (a Assignment) Count(member string) int {
	n := 0
	for _, ps := range a[member] {
		n += len(ps)
	}
	return n
}

// Protocol is a classic rebalance protocol, ordered like Java's
// ConsumerPartitionAssignor.RebalanceProtocol ids: higher is more advanced.
type Protocol int8

const (
	// Eager members revoke everything before they rejoin.
	Eager Protocol = 0
	// Cooperative members keep what they still own across a rebalance and
	// revoke only what the new assignment takes away (KIP-429).
	Cooperative Protocol = 1
)

func (p Protocol) String() string {
	switch p {
	case Eager:
		return "EAGER"
	case Cooperative:
		return "COOPERATIVE"
	}
	return fmt.Sprintf("Protocol(%d)", int8(p))
}

// Assignor is one client-side assignment strategy.
//
// Assign takes the members in JoinGroup response order and the partition
// count of every topic the leader has metadata for. Topics that no member
// subscribes to, or that are missing or have no partitions, are skipped, as
// in Java's AbstractPartitionAssignor.assign. Partition replica racks are not
// part of the input, so Java's rack-aware paths (taken only when both member
// and replica racks are known) never apply.
type Assignor interface {
	// Name is the protocol name sent in JoinGroup.
	Name() string
	// Protocols lists the rebalance protocols the assignor supports.
	Protocols() []Protocol
	// Assign computes the plan. It fails on malformed input (duplicate
	// member ids, negative partition counts).
	Assign(members []Member, topics map[string]int32) (Assignment, error)
}

// Names of the built-in assignors, as sent in JoinGroup protocols.
const (
	RangeName             = "range"
	RoundRobinName        = "roundrobin"
	StickyName            = "sticky"
	CooperativeStickyName = "cooperative-sticky"
)

// ByName returns the built-in assignor with that protocol name.
func ByName(name string) (Assignor, error) {
	switch name {
	case RangeName:
		return Range(), nil
	case RoundRobinName:
		return RoundRobin(), nil
	case StickyName:
		return Sticky(), nil
	case CooperativeStickyName:
		return CooperativeSticky(), nil
	}
	return nil, fmt.Errorf("unknown assignor %q: built-in assignors are %s, %s, %s, %s",
		name, RangeName, RoundRobinName, StickyName, CooperativeStickyName)
}

// ChooseProtocol picks the rebalance protocol a member configured with
// these assignors uses: the highest protocol every assignor supports, as in
// the Java ConsumerCoordinator constructor. So [range, cooperative-sticky]
// is EAGER and [cooperative-sticky] alone is COOPERATIVE. It fails when the
// list is empty or the assignors have no protocol in common.
func ChooseProtocol(assignors []Assignor) (Protocol, error) {
	if len(assignors) == 0 {
		return 0, fmt.Errorf("no assignors configured: a classic member needs at least one (for example %q)", RangeName)
	}
	common := slices.Clone(assignors[0].Protocols())
	for _, a := range assignors[1:] {
		supported := a.Protocols()
		common = slices.DeleteFunc(common, func(p Protocol) bool { return !slices.Contains(supported, p) })
	}
	if len(common) == 0 {
		names := make([]string, len(assignors))
		for i, a := range assignors {
			names[i] = a.Name()
		}
		return 0, fmt.Errorf("assignors %v have no rebalance protocol in common", names)
	}
	return slices.Max(common), nil
}

// tp is one topic partition.
type tp struct {
	topic     string
	partition int32
}

// group is the validated input every assignor starts from.
type group struct {
	members []Member
	// topics is the per-member deduplicated subscription, in first-seen order.
	topics [][]string
	// subscribed is topics[i] as a set.
	subscribed []map[string]bool
	// partitionsPerTopic holds the topics at least one member subscribes to
	// and that have at least one partition: Java's partitionsPerTopic.
	partitionsPerTopic map[string]int32
}

// newGroup validates the input. Duplicate member ids are rejected: Java's
// leader would silently keep the last subscription of a duplicated id (a
// HashMap put) and kgo keeps the first, so there is no answer both agree on.
func newGroup(members []Member, topics map[string]int32) (*group, error) {
	g := &group{
		members:            members,
		topics:             make([][]string, len(members)),
		subscribed:         make([]map[string]bool, len(members)),
		partitionsPerTopic: make(map[string]int32),
	}
	seen := make(map[string]int, len(members))
	for i, m := range members {
		if j, dup := seen[m.ID]; dup {
			return nil, fmt.Errorf("member id %q appears twice (positions %d and %d): a JoinGroup response lists each member once", m.ID, j, i)
		}
		seen[m.ID] = i
		set := make(map[string]bool, len(m.Topics))
		for _, t := range m.Topics {
			if !set[t] {
				set[t] = true
				g.topics[i] = append(g.topics[i], t)
			}
		}
		g.subscribed[i] = set
	}
	for t, n := range topics {
		if n < 0 {
			return nil, fmt.Errorf("topic %q has partition count %d: counts must be zero or more", t, n)
		}
	}
	for i := range members {
		for _, t := range g.topics[i] {
			if n := topics[t]; n > 0 {
				g.partitionsPerTopic[t] = n
			}
		}
	}
	return g, nil
}

// emptyAssignment has an empty entry for every member.
func (g *group) emptyAssignment() Assignment {
	a := make(Assignment, len(g.members))
	for _, m := range g.members {
		a[m.ID] = map[string][]int32{}
	}
	return a
}

// add appends partitions; finish sorts them.
func (a Assignment) add(member string, p tp) {
	a[member][p.topic] = append(a[member][p.topic], p.partition)
}

func (a Assignment) finish() Assignment {
	for _, ts := range a {
		for _, ps := range ts {
			slices.Sort(ps)
		}
	}
	return a
}

// memberInfoLess is Java's AbstractPartitionAssignor.MemberInfo.compareTo:
// members with a group instance id first, by instance id; then by member id.
func memberInfoLess(a, b *Member) bool {
	switch {
	case a.InstanceID != nil && b.InstanceID != nil:
		return javaCompare(*a.InstanceID, *b.InstanceID) < 0
	case a.InstanceID != nil:
		return true
	case b.InstanceID != nil:
		return false
	}
	return javaCompare(a.ID, b.ID) < 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, javaCompare)
	return keys
}
