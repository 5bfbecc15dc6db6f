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
	"maps"
	"slices"
)

// refMemberAssignment and refGroupAssignment are the output types as they
// were: topic id → partitions, ascending.
type refMemberAssignment map[TopicID][]int32

type refGroupAssignment struct {
	Members map[string]refMemberAssignment
}

// refMaxBalanceIterations is maxBalanceIterations.
const refMaxBalanceIterations = 16

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

// validate refuses specs that cannot come from a coordinator. It does not
// check partitions against topic sizes: the homogeneous builder, like Kafka,
// tolerates stale ones.
func refValidate(spec *GroupSpec) error {
	if spec.Subscription != Homogeneous && spec.Subscription != Heterogeneous {
		return fmt.Errorf("%w: subscription type %d is neither Homogeneous (0) nor Heterogeneous (1)", ErrInvalidSpec, spec.Subscription)
	}
	// One set of each kind, cleared per member: validation is on every assignment's path, so it
	// allocates per group, not per member (a group of 1,000 members made 12,000 maps here).
	seen := make(map[string]struct{}, len(spec.Members))
	topics := map[TopicID]struct{}{}
	assigned := map[TopicID]struct{}{}
	parts := map[int32]struct{}{}
	for i := range spec.Members {
		m := &spec.Members[i]
		if _, dup := seen[m.ID]; dup {
			return fmt.Errorf("%w: member id %q appears twice", ErrInvalidSpec, m.ID)
		}
		seen[m.ID] = struct{}{}
		clear(topics)
		for _, t := range m.Topics {
			if _, dup := topics[t]; dup {
				return fmt.Errorf("%w: member %q subscribes to topic %s twice", ErrInvalidSpec, m.ID, t)
			}
			topics[t] = struct{}{}
		}
		clear(assigned)
		for _, tp := range m.Assignment {
			if _, dup := assigned[tp.Topic]; dup {
				return fmt.Errorf("%w: member %q lists topic %s twice in its assignment", ErrInvalidSpec, m.ID, tp.Topic)
			}
			assigned[tp.Topic] = struct{}{}
			clear(parts)
			for _, p := range tp.Partitions {
				if p < 0 {
					return fmt.Errorf("%w: member %q holds partition %d of topic %s: partitions are ≥ 0", ErrInvalidSpec, m.ID, p, tp.Topic)
				}
				if _, dup := parts[p]; dup {
					return fmt.Errorf("%w: member %q holds partition %d of topic %s twice", ErrInvalidSpec, m.ID, p, tp.Topic)
				}
				parts[p] = struct{}{}
			}
		}
	}
	return nil
}

// refTorefMemberAssignment turns a working set into the sorted output form.
func refTorefMemberAssignment(sets map[TopicID]map[int32]struct{}) refMemberAssignment {
	out := make(refMemberAssignment, len(sets))
	for t, ps := range sets {
		if len(ps) == 0 {
			continue
		}
		s := slices.Sorted(maps.Keys(ps))
		out[t] = s
	}
	return out
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
	minQuota := total / numMembers
	remainingExtra := total % numMembers
	legacy := !cfg.profile.UniformHomogeneousStable // before KAFKA-18688

	type unfilled struct {
		member    int
		remaining int
	}
	var unfilledMembers []unfilled
	targets := make([]map[TopicID]map[int32]struct{}, numMembers)

	// Revoke pass: over memberIds() order.
	for i := range spec.Members {
		m := &spec.Members[i]
		quota := minQuota
		hasExtra := false
		if remainingExtra > 0 {
			quota++
			if legacy {
				remainingExtra--
			} else {
				hasExtra = true
			}
		}
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
		if !legacy && quota > 0 && hasExtra && numMembers-i > remainingExtra {
			// Give the extra slot back for a later member to claim, unless this
			// member is one of the last remainingExtra members and must take it.
			quota--
			hasExtra = false
		}
		if quota > 0 {
			unfilledMembers = append(unfilledMembers, unfilled{i, quota})
		}
		if hasExtra {
			remainingExtra--
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
			b.assign(t, p, bal.nextLeastLoaded())
		}
	}
}

func (b *refHeteroBuilder) assign(t TopicID, p int32, member int) {
	owners := b.owners[t]
	if old := owners[p]; old != -1 {
		if set := b.targets[old][t]; set != nil {
			delete(set, p)
			if len(set) == 0 {
				delete(b.targets[old], t)
			}
		}
		owners[p] = -1
		b.sizes[old]--
	}
	set := b.targets[member][t]
	if set == nil {
		set = map[int32]struct{}{}
		b.targets[member][t] = set
	}
	set[p] = struct{}{}
	owners[p] = int32(member)
	b.sizes[member]++
}

// balance is balance + balanceTopics: topics with two or more subscribers, in
// sorted order, over and over until a full pass moves nothing, at most
// refMaxBalanceIterations passes.
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
	last := -1
	bal := refNewBalancer(b.sizes)
	var scratch refTopicScratch
	for range refMaxBalanceIterations {
		for i, t := range sorted {
			if i == last {
				return
			}
			if b.balanceTopic(t, bal, &scratch) > 0 || last == -1 {
				last = i
			}
		}
	}
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
	moved := 0
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
	for !bal.isBalanced() {
		most := -1
		for {
			most = bal.nextMostLoaded()
			if most == -1 {
				break
			}
			end, ok := s.end[most]
			if !ok || end-s.start[most] <= 0 {
				bal.excludeMostLoaded()
				continue
			}
			break
		}
		if most == -1 {
			break
		}
		p := s.partitions[s.end[most]-1]
		s.end[most]--
		least := bal.nextLeastLoaded()
		if bal.isBalanced() {
			break
		}
		b.assign(t, p, least)
		moved++
	}
	return moved
}

// balancer is refMemberAssignmentBalancer: two bands over the members sorted by
// size (then index), the least loaded band grown upwards as it fills and the
// most loaded band grown downwards as it empties, handed out round-robin.
type refBalancer struct {
	sizes  []int // shared with the builder
	sorted []int

	leastEnd      int // [0, leastEnd) is the least loaded band
	leastCount    int // its size before anything was added
	nextLeast     int
	mostStart     int // [mostStart, mostEnd) is the most loaded band
	mostEnd       int
	mostCount     int // its size before anything was taken
	nextMost      int
	compareMember func(a, b int) int
}

func refNewBalancer(sizes []int) *refBalancer {
	bal := &refBalancer{sizes: sizes, sorted: make([]int, 0, len(sizes))}
	bal.compareMember = func(a, b int) int {
		if c := cmp.Compare(sizes[a], sizes[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	return bal
}

// initialize resets the bands for members (non-empty) and returns the spread
// between the most and least loaded.
func (bal *refBalancer) initialize(members []int) int {
	bal.sorted = append(bal.sorted[:0], members...)
	slices.SortFunc(bal.sorted, bal.compareMember)
	n := len(bal.sorted)
	bal.leastEnd = 0
	bal.leastCount = bal.sizes[bal.sorted[0]] - 1
	bal.nextLeast = 0
	bal.mostStart = n
	bal.mostEnd = n
	bal.mostCount = bal.sizes[bal.sorted[n-1]] + 1
	bal.nextMost = n - 1
	return bal.sizes[bal.sorted[n-1]] - bal.sizes[bal.sorted[0]]
}

// nextLeastLoaded returns the member to give the next partition to, assuming
// it gets it.
func (bal *refBalancer) nextLeastLoaded() int {
	if bal.nextLeast >= bal.leastEnd {
		bal.leastCount++
		for bal.leastEnd < len(bal.sorted) && bal.sizes[bal.sorted[bal.leastEnd]] == bal.leastCount {
			bal.leastEnd++
		}
		bal.nextLeast = 0
	}
	m := bal.sorted[bal.nextLeast]
	bal.nextLeast++
	return m
}

// nextMostLoaded returns the member to take the next partition from, or -1.
func (bal *refBalancer) nextMostLoaded() int {
	if bal.nextMost < bal.mostStart {
		if bal.mostEnd <= bal.mostStart && bal.mostStart > 0 {
			// The band was emptied by excludeMostLoaded: restart from the size
			// just below it so that it always grows.
			bal.mostCount = bal.sizes[bal.sorted[bal.mostStart-1]]
		} else {
			bal.mostCount--
		}
		for bal.mostStart > 0 && bal.sizes[bal.sorted[bal.mostStart-1]] == bal.mostCount {
			bal.mostStart--
		}
		bal.nextMost = bal.mostEnd - 1
	}
	if bal.nextMost < 0 {
		return -1
	}
	m := bal.sorted[bal.nextMost]
	bal.nextMost--
	return m
}

// excludeMostLoaded drops the member last returned by nextMostLoaded from the
// most loaded band, because it has nothing of this topic to give.
func (bal *refBalancer) excludeMostLoaded() {
	i := bal.nextMost + 1
	bal.sorted[i], bal.sorted[bal.mostEnd-1] = bal.sorted[bal.mostEnd-1], bal.sorted[i]
	bal.mostEnd--
}

func (bal *refBalancer) isBalanced() bool { return bal.mostCount-bal.leastCount <= 1 }

// refRangeTopic is RangeAssignor.TopicMetadata: a per-topic cursor.
type refRangeTopic struct {
	id            TopicID
	numPartitions int
	numMembers    int
	minQuota      int // -1 until computed
	extra         int
	nextRange     int
}

// take hands the next member its range, as RangeAssignor.addPartitionsToAssignment.
func (t *refRangeTopic) take(out refMemberAssignment) {
	if t.minQuota == -1 {
		t.minQuota = t.numPartitions / t.numMembers
		t.extra = t.numPartitions % t.numMembers
	}
	start, quota := t.nextRange, t.minQuota
	if t.extra > 0 {
		quota++
		t.extra--
	}
	end := min(start+quota, t.numPartitions)
	t.nextRange = end
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
		first := &spec.Members[order[0]]
		ts := make([]*refRangeTopic, 0, len(first.Topics))
		for _, id := range first.Topics {
			n := topics.NumPartitions(id)
			if n == -1 {
				return refGroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, first.ID, id)
			}
			ts = append(ts, &refRangeTopic{id: id, numPartitions: n, numMembers: len(spec.Members), minQuota: -1})
		}
		for _, i := range order {
			a := make(refMemberAssignment, len(ts))
			for _, t := range ts {
				t.take(a)
			}
			out.Members[spec.Members[i].ID] = a
		}
		return out, nil
	}

	// Heterogeneous: a topic's subscriber count is the members that list it;
	// members that subscribe to nothing still get an (empty) entry.
	byID := map[TopicID]*refRangeTopic{}
	for _, i := range order {
		m := &spec.Members[i]
		for _, id := range m.Topics {
			t, ok := byID[id]
			if !ok {
				n := topics.NumPartitions(id)
				if n == -1 {
					return refGroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, m.ID, id)
				}
				t = &refRangeTopic{id: id, numPartitions: n, minQuota: -1}
				byID[id] = t
			}
			t.numMembers++
		}
	}
	for _, i := range order {
		m := &spec.Members[i]
		a := make(refMemberAssignment, len(m.Topics))
		for _, id := range m.Topics {
			byID[id].take(a)
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
