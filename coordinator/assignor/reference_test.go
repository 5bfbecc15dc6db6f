package assignor

// The assignors as they were before they were made as fast as Kafka's own
// (coordinator/assignor at groupquake's first side-by-side measurement):
// plain maps and sets, every member's target copied into fresh sets. They
// are kept here, in a test file, as the reference the fast builders must
// match exactly (TestSameAsReference, FuzzSameAsReference), on inputs Kafka's
// vectors do not reach: overlapping and stale previous assignments, unsorted
// partitions, invalid specs (whose error must be the very same message).

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/groupquake/groupquake/coordinator/internal/partset"
)

// refMemberAssignment and refGroupAssignment are the output types as they
// were: topic id → partitions, ascending.
type refMemberAssignment map[TopicID][]int32

type refGroupAssignment struct {
	Members map[string]refMemberAssignment
}

// refAssignedChecker answers isPartitionAssigned in O(1) for the builders.
type refAssignedChecker struct {
	explicit map[TopicID]map[int32]string
	derived  map[TopicID][]bool
}

func refNewAssignedChecker(g *GroupSpec, numPartitions func(TopicID) int) refAssignedChecker {
	if g.InvertedTargetAssignment != nil {
		return refAssignedChecker{explicit: g.InvertedTargetAssignment}
	}
	derived := map[TopicID][]bool{}
	for i := range g.Members {
		for _, tp := range g.Members[i].Assignment {
			bits, ok := derived[tp.Topic]
			if !ok {
				n := numPartitions(tp.Topic)
				if n < 0 {
					n = 0
				}
				bits = make([]bool, n)
				derived[tp.Topic] = bits
			}
			for _, p := range tp.Partitions {
				if p >= 0 && int(p) < len(bits) {
					bits[p] = true
				}
			}
		}
	}
	return refAssignedChecker{derived: derived}
}

func (a refAssignedChecker) assigned(topic TopicID, partition int32) bool {
	if a.explicit != nil {
		_, ok := a.explicit[topic][partition]
		return ok
	}
	bits := a.derived[topic]
	return int(partition) < len(bits) && bits[partition]
}

// refValidate is the validation the assignors had before they were made
// fast. It was the very code of validateExactly, which the assignors still
// run whenever their quick check (quickValid) refuses a spec, so the
// reference calls it: what the comparison proves about validation is that
// the quick check refuses what validateExactly refuses, with the same
// message (TestSameAsReference's invalid specs).
func refValidate(spec *GroupSpec) error { return validateExactly(spec) }

// refTorefMemberAssignment turns a working set into the sorted output form.
func refTorefMemberAssignment(sets map[TopicID]map[int32]struct{}) refMemberAssignment {
	return partset.Sorted(sets)
}

// refUniformAssign is Uniform.Assign (UniformAssignor.assign).
func refUniformAssign(u *Uniform, spec GroupSpec, topics SubscribedTopicDescriber) (refGroupAssignment, error) {
	if err := refValidate(&spec); err != nil {
		return refGroupAssignment{}, err
	}
	if len(spec.Members) == 0 {
		return refGroupAssignment{Members: map[string]refMemberAssignment{}}, nil
	}
	if spec.Subscription == Homogeneous {
		return refAssignUniformHomogeneous(&spec, topics, u.cfg)
	}
	return refAssignUniformHeterogeneous(&spec, topics)
}

type refTopicPartition struct {
	topic     TopicID
	partition int32
}

// refAssignUniformHomogeneous is UniformHomogeneousAssignmentBuilder.build.
//
// Invariants it keeps (for a consistent spec, where no partition is held by
// two members):
//  1. Every partition of every subscribed topic ends up with exactly one
//     member, or the call fails with "partitions were left unassigned".
//  2. Member sizes differ by at most one: every member gets minQuota = P/M,
//     and exactly P%M members get one more.
//  3. A member keeps min(quota, what it held) of its previous partitions of
//     subscribed topics, the first ones in its iteration order; only the excess
//     and partitions of unsubscribed topics move.
//  4. From 4.0.1 (KAFKA-18688) a member that already holds the extra partition
//     keeps it: the extra quota slot is given back by members that do not need
//     it, unless they are among the last members that must take it. Before,
//     the first P%M members in iteration order always got the extra slot, so a
//     balanced assignment could still move.
func refAssignUniformHomogeneous(spec *GroupSpec, topics SubscribedTopicDescriber, cfg config) (refGroupAssignment, error) {
	// Kafka copies the first member's subscription into a HashSet: its
	// iteration order decides the order of never-assigned partitions.
	subscribed := javaUUIDSetCopyOrder(spec.Members[0].Topics, cfg.javaVersion)
	out := refGroupAssignment{Members: make(map[string]refMemberAssignment, len(spec.Members))}
	if len(subscribed) == 0 {
		return out, nil
	}
	isSubscribed := make(map[TopicID]bool, len(subscribed))
	for _, t := range subscribed {
		isSubscribed[t] = true
	}
	checker := refNewAssignedChecker(spec, topics.NumPartitions)

	var unassigned []refTopicPartition
	total := 0
	for _, t := range subscribed {
		n := topics.NumPartitions(t)
		if n == -1 {
			return refGroupAssignment{}, fmt.Errorf("%w: members are subscribed to topic %s which doesn't exist in the topic metadata", ErrPartitionAssignor, t)
		}
		for p := range int32(n) {
			if !checker.assigned(t, p) {
				unassigned = append(unassigned, refTopicPartition{t, p})
			}
		}
		total += n
	}

	numMembers := len(spec.Members)
	// The quotas (KAFKA-18688's extra slot included) were the very code
	// revokePass still runs, so the reference runs it too: the comparison
	// proves what the fast builder keeps and fills, and the quotas are
	// checked against Kafka's results (TestUniformHomogeneousKAFKA18688,
	// TestKafkaVectors), not here.
	quotas := newMemberQuotas(total, numMembers, cfg)
	var unfilledMembers []unfilled
	targets := make([]map[TopicID]map[int32]struct{}, numMembers)

	// Revoke pass: over memberIds() order.
	for i := range spec.Members {
		m := &spec.Members[i]
		quota, hasExtra := quotas.next()
		target := make(map[TopicID]map[int32]struct{}, len(m.Assignment))
		for _, tp := range m.Assignment {
			if !isSubscribed[tp.Topic] {
				continue // the whole topic is dropped
			}
			kept := make(map[int32]struct{}, min(len(tp.Partitions), max(quota, 0)))
			if len(tp.Partitions) <= quota {
				quota -= len(tp.Partitions)
				for _, p := range tp.Partitions {
					kept[p] = struct{}{}
				}
			} else {
				for _, p := range tp.Partitions {
					if quota > 0 {
						quota--
						kept[p] = struct{}{}
					} else {
						unassigned = append(unassigned, refTopicPartition{tp.Topic, p})
					}
				}
			}
			if len(kept) > 0 {
				target[tp.Topic] = kept
			}
		}
		if quota = quotas.settle(i, quota, hasExtra); quota > 0 {
			unfilledMembers = append(unfilledMembers, unfilled{i, quota})
		}
		targets[i] = target
	}

	// Fill pass: unfilled members in order take the next partitions in line.
	next := 0
	for _, u := range unfilledMembers {
		target := targets[u.member]
		for k := 0; k < u.remaining && next < len(unassigned); k++ {
			tp := unassigned[next]
			next++
			set, ok := target[tp.topic]
			if !ok {
				set = map[int32]struct{}{}
				target[tp.topic] = set
			}
			set[tp.partition] = struct{}{}
		}
	}
	if next < len(unassigned) {
		return refGroupAssignment{}, fmt.Errorf("%w: partitions were left unassigned (%d of %d); the spec's previous assignments overlap or the inverted target assignment is inconsistent", ErrPartitionAssignor, len(unassigned)-next, len(unassigned))
	}
	for i := range spec.Members {
		out.Members[spec.Members[i].ID] = refTorefMemberAssignment(targets[i])
	}
	return out, nil
}

// refHeteroBuilder is UniformHeterogeneousAssignmentBuilder (reworked for speed in
// KAFKA-17710). Members are numbered by their position in GroupSpec.Members;
// that index breaks every tie, so member order is the only order that matters.
//
// Invariants it keeps:
//  1. A member only ever holds partitions of topics it subscribes to; previous
//     partitions of other topics are dropped first.
//  2. Every partition of every subscribed topic is assigned exactly once.
//  3. Previously held partitions stay unless balancing moves them; balancing
//     moves a topic's partitions only between that topic's subscribers, from
//     the most loaded to the least loaded, and stops when their total sizes
//     differ by at most one (or after 16 passes over the topics).
//  4. owners[topic][p] is the index of p's member, or -1, and sizes[i] is the
//     number of partitions member i holds, at every step.
type refHeteroBuilder struct {
	spec        *GroupSpec
	topics      SubscribedTopicDescriber
	numParts    map[TopicID]int
	subscribers map[TopicID][]int // ascending member indices
	subscribed  []TopicID         // every subscribed topic, first-seen order
	targets     []map[TopicID]map[int32]struct{}
	sizes       []int
	owners      map[TopicID][]int32
}

func refAssignUniformHeterogeneous(spec *GroupSpec, topics SubscribedTopicDescriber) (refGroupAssignment, error) {
	b := &refHeteroBuilder{
		spec:        spec,
		topics:      topics,
		numParts:    map[TopicID]int{},
		subscribers: map[TopicID][]int{},
		targets:     make([]map[TopicID]map[int32]struct{}, len(spec.Members)),
		sizes:       make([]int, len(spec.Members)),
		owners:      map[TopicID][]int32{},
	}
	for i := range spec.Members {
		for _, t := range spec.Members[i].Topics {
			n := topics.NumPartitions(t)
			if n == -1 {
				return refGroupAssignment{}, fmt.Errorf("%w: members are subscribed to topic %s which doesn't exist in the topic metadata", ErrPartitionAssignor, t)
			}
			if _, ok := b.subscribers[t]; !ok {
				b.subscribed = append(b.subscribed, t)
				b.numParts[t] = n
				owners := make([]int32, n)
				for p := range owners {
					owners[p] = -1
				}
				b.owners[t] = owners
			}
			b.subscribers[t] = append(b.subscribers[t], i)
		}
	}
	out := refGroupAssignment{Members: make(map[string]refMemberAssignment, len(spec.Members))}
	if len(b.subscribed) == 0 {
		return out, nil
	}
	if err := b.revoke(); err != nil {
		return refGroupAssignment{}, err
	}
	b.assignRemaining()
	b.balance()
	for i := range spec.Members {
		out.Members[spec.Members[i].ID] = refTorefMemberAssignment(b.targets[i])
	}
	return out, nil
}

// compareTopics is the builder's topicComparator: partitions per subscriber
// descending (as doubles), then subscriber count ascending, then Uuid.compareTo.
func (b *refHeteroBuilder) compareTopics(t1, t2 TopicID) int {
	p1, p2 := b.numParts[t1], b.numParts[t2]
	s1, s2 := len(b.subscribers[t1]), len(b.subscribers[t2])
	if c := cmp.Compare(float64(p2)/float64(s2), float64(p1)/float64(s1)); c != 0 {
		return c
	}
	if c := cmp.Compare(s1, s2); c != 0 {
		return c
	}
	return compareTopicIDs(t1, t2)
}

func (b *refHeteroBuilder) sortTopics(ts []TopicID) []TopicID {
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, b.compareTopics)
	return sorted
}

// revoke is maybeRevokePartitions: keep previous partitions of subscribed
// topics, drop the rest, and record owners and sizes.
func (b *refHeteroBuilder) revoke() error {
	for i := range b.spec.Members {
		m := &b.spec.Members[i]
		target := make(map[TopicID]map[int32]struct{}, len(m.Assignment))
		for _, tp := range m.Assignment {
			if !slices.Contains(m.Topics, tp.Topic) {
				continue
			}
			owners := b.owners[tp.Topic]
			set := make(map[int32]struct{}, len(tp.Partitions))
			for _, p := range tp.Partitions {
				if int(p) >= len(owners) {
					// Java fails here with ArrayIndexOutOfBoundsException.
					return fmt.Errorf("%w: member %q holds partition %d of topic %s, which has %d partitions", ErrInvalidSpec, m.ID, p, tp.Topic, len(owners))
				}
				owners[p] = int32(i)
				set[p] = struct{}{}
			}
			b.sizes[i] += len(tp.Partitions)
			if len(set) > 0 {
				target[tp.Topic] = set
			}
		}
		b.targets[i] = target
	}
	return nil
}

// assignRemaining is assignRemainingPartitions: topics in sorted order, each
// free partition ascending to the next least loaded subscriber.
func (b *refHeteroBuilder) assignRemaining() {
	var withFree []TopicID
	free := map[TopicID][]int32{}
	for _, t := range b.subscribed {
		for p, o := range b.owners[t] {
			if o == -1 {
				free[t] = append(free[t], int32(p))
			}
		}
		if len(free[t]) > 0 {
			withFree = append(withFree, t)
		}
	}
	bal := refNewBalancer(b.sizes)
	for _, t := range b.sortTopics(withFree) {
		bal.initialize(b.subscribers[t])
		for _, p := range free[t] {
			b.assign(t, p, int(bal.nextLeastLoaded()))
		}
	}
}

func (b *refHeteroBuilder) assign(t TopicID, p int32, member int) {
	old := b.owners[t][p]
	moveTarget(b.targets, t, p, old, int32(member))
	if old != -1 {
		b.sizes[old]--
	}
	b.owners[t][p] = int32(member)
	b.sizes[member]++
}

// balance is balance + balanceTopics: topics with two or more subscribers, in
// sorted order, over and over until a full pass moves nothing, at most
// maxBalanceIterations passes.
func (b *refHeteroBuilder) balance() {
	var ts []TopicID
	for _, t := range b.subscribed {
		if len(b.subscribers[t]) >= 2 {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return
	}
	sorted := b.sortTopics(ts)
	bal := refNewBalancer(b.sizes)
	var scratch refTopicScratch
	// The passes' loop and when it stops (balancePasses) were the very code
	// the fast builder still runs, so the reference runs it too.
	balancePasses(len(sorted), func(i int) int { return b.balanceTopic(sorted[i], bal, &scratch) })
}

// refTopicScratch is reused across balanceTopic calls, as Kafka reuses its list
// and index maps.
type refTopicScratch struct {
	partitions []int32
	start, end map[int]int
}

// balanceTopic moves partitions of t from its most loaded subscribers to its
// least loaded ones. Partitions are grouped by owner index (ascending), then
// partition; a member gives up its highest-numbered partition of the topic first.
func (b *refHeteroBuilder) balanceTopic(t TopicID, bal *refBalancer, s *refTopicScratch) int {
	owners := b.owners[t]
	if bal.initialize(b.subscribers[t]) <= 1 {
		return 0
	}
	s.partitions = s.partitions[:0]
	for p := range int32(len(owners)) {
		s.partitions = append(s.partitions, p)
	}
	slices.SortFunc(s.partitions, func(x, y int32) int {
		if c := cmp.Compare(owners[x], owners[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	if s.start == nil {
		s.start, s.end = map[int]int{}, map[int]int{}
	}
	clear(s.start)
	clear(s.end)
	for i, p := range s.partitions {
		o := int(owners[p])
		if _, ok := s.start[o]; !ok {
			s.start[o] = i
		}
		s.end[o] = i + 1
	}
	// The loop that moves them (balancer.moveUntilBalanced) was the very
	// code the fast builder still runs, so the reference runs it too; what
	// it holds and moves are the reference's own maps.
	return bal.moveUntilBalanced(
		func(m int32) bool {
			end, ok := s.end[int(m)]
			return ok && end-s.start[int(m)] > 0
		},
		func(from, to int32) {
			s.end[int(from)]--
			b.assign(t, s.partitions[s.end[int(from)]], int(to))
		})
}

// refBalancer is MemberAssignmentBalancer as it was: the members sorted by
// a comparison of (size, index), where the fast balancer sorts packed keys.
// The bands over the sorted members (nextLeastLoaded, nextMostLoaded,
// excludeMostLoaded, isBalanced) were the very code the fast balancer still
// runs, so the reference runs it too (balancer.startBands and after): the
// comparison proves the key sort gives the comparator's order, and the bands
// themselves are checked against Kafka's results
// (TestUniformHeterogeneousKafkaScenarios, TestKafkaVectors), not here.
type refBalancer struct {
	*balancer
	compareMember func(a, b int32) int
}

func refNewBalancer(sizes []int) *refBalancer {
	return &refBalancer{balancer: newBalancer(sizes), compareMember: func(a, b int32) int {
		if c := cmp.Compare(sizes[a], sizes[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}}
}

// initialize resets the bands for members (non-empty) and returns the spread
// between the most and least loaded.
func (bal *refBalancer) initialize(members []int) int {
	bal.sorted = bal.sorted[:0]
	for _, m := range members {
		bal.sorted = append(bal.sorted, int32(m))
	}
	slices.SortFunc(bal.sorted, bal.compareMember)
	return bal.startBands()
}

// refTake hands the next member its range of t into out, as
// RangeAssignor.addPartitionsToAssignment. The cursor (rangeTopic.take, the
// quota arithmetic) and the homogeneous group's cursors
// (homogeneousRangeTopics) were the very code the fast assignor still runs,
// so the reference runs them too: the comparison proves the fast output
// building and member order, and the ranges themselves are checked against
// Kafka's results (TestRangeKafkaScenarios, TestKafkaVectors), not here.
func refTake(t *rangeTopic, out refMemberAssignment) {
	start, end := t.take()
	if start < end {
		ps := make([]int32, 0, end-start)
		for p := start; p < end; p++ {
			ps = append(ps, int32(p))
		}
		out[t.id] = ps
	}
}

// refRangeAssign is Range.Assign (RangeAssignor.assign).
//
// Invariants it keeps:
//  1. Every member of the spec is in the output, with an empty assignment if
//     it gets nothing.
//  2. Per topic, its subscribers in range order hold consecutive ranges that
//     cover the topic: the first P%N get P/N+1 partitions, the rest P/N.
//  3. Homogeneous: the first member in range order speaks for all, and every
//     member counts as a subscriber of its topics, whatever it subscribed to.
//  4. The previous target assignment is never read.
func refRangeAssign(spec GroupSpec, topics SubscribedTopicDescriber) (refGroupAssignment, error) {
	if err := refValidate(&spec); err != nil {
		return refGroupAssignment{}, err
	}
	out := refGroupAssignment{Members: make(map[string]refMemberAssignment, len(spec.Members))}
	if len(spec.Members) == 0 {
		return out, nil
	}
	order := refRangeMemberOrder(spec.Members)

	if spec.Subscription == Homogeneous {
		// Homogeneous: the first member in range order speaks for everyone, and
		// every member counts as a subscriber, as in assignHomogeneousGroup.
		ts, err := homogeneousRangeTopics(&spec.Members[order[0]], len(spec.Members), topics)
		if err != nil {
			return refGroupAssignment{}, err
		}
		for _, i := range order {
			a := make(refMemberAssignment, len(ts))
			for _, t := range ts {
				refTake(t, a)
			}
			out.Members[spec.Members[i].ID] = a
		}
		return out, nil
	}

	// Heterogeneous: a topic's subscriber count is the members that list it;
	// members that subscribe to nothing still get an (empty) entry.
	byID := map[TopicID]*rangeTopic{}
	for _, i := range order {
		m := &spec.Members[i]
		for _, id := range m.Topics {
			t, ok := byID[id]
			if !ok {
				n := topics.NumPartitions(id)
				if n == -1 {
					return refGroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, m.ID, id)
				}
				t = &rangeTopic{id: id, numPartitions: n, minQuota: -1}
				byID[id] = t
			}
			t.numMembers++
		}
	}
	for _, i := range order {
		m := &spec.Members[i]
		a := make(refMemberAssignment, len(m.Topics))
		for _, id := range m.Topics {
			refTake(byID[id], a)
		}
		out.Members[m.ID] = a
	}
	return out, nil
}

// refRangeMemberOrder is RangeAssignor.sortMemberIds: static members first by
// instance id, then the rest by member id, both by Java String.compareTo. The
// sort is stable like List.sort, so equal keys keep memberIds() order.
func refRangeMemberOrder(members []MemberSpec) []int {
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ma, mb := &members[a], &members[b]
		switch {
		case ma.InstanceID != "" && mb.InstanceID != "":
			return javaStringCompare(ma.InstanceID, mb.InstanceID)
		case ma.InstanceID != "":
			return -1
		case mb.InstanceID != "":
			return 1
		}
		return javaStringCompare(ma.ID, mb.ID)
	})
	return order
}
