package assignor

import (
	"cmp"
	"fmt"
	"slices"
)

// maxBalanceIterations is UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT:
// with overlapping, non-identical subscriptions the balancing loop may not
// converge quickly; Kafka assumes each pass roughly halves the imbalance.
const maxBalanceIterations = 16

// heteroBuilder is UniformHeterogeneousAssignmentBuilder (reworked for speed in
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
type heteroBuilder struct {
	spec        *GroupSpec
	topics      SubscribedTopicDescriber
	numParts    map[TopicID]int
	subscribers map[TopicID][]int // ascending member indices
	subscribed  []TopicID         // every subscribed topic, first-seen order
	targets     []map[TopicID]map[int32]struct{}
	sizes       []int
	owners      map[TopicID][]int32
}

func assignUniformHeterogeneous(spec *GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error) {
	b := &heteroBuilder{
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
				return GroupAssignment{}, fmt.Errorf("%w: members are subscribed to topic %s which doesn't exist in the topic metadata", ErrPartitionAssignor, t)
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
	out := GroupAssignment{Members: make(map[string]MemberAssignment, len(spec.Members))}
	if len(b.subscribed) == 0 {
		return out, nil
	}
	if err := b.revoke(); err != nil {
		return GroupAssignment{}, err
	}
	b.assignRemaining()
	b.balance()
	for i := range spec.Members {
		out.Members[spec.Members[i].ID] = toMemberAssignment(b.targets[i])
	}
	return out, nil
}

// compareTopics is the builder's topicComparator: partitions per subscriber
// descending (as doubles), then subscriber count ascending, then Uuid.compareTo.
func (b *heteroBuilder) compareTopics(t1, t2 TopicID) int {
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

func (b *heteroBuilder) sortTopics(ts []TopicID) []TopicID {
	sorted := slices.Clone(ts)
	slices.SortFunc(sorted, b.compareTopics)
	return sorted
}

// revoke is maybeRevokePartitions: keep previous partitions of subscribed
// topics, drop the rest, and record owners and sizes.
func (b *heteroBuilder) revoke() error {
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
func (b *heteroBuilder) assignRemaining() {
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
	bal := newBalancer(b.sizes)
	for _, t := range b.sortTopics(withFree) {
		bal.initialize(b.subscribers[t])
		for _, p := range free[t] {
			b.assign(t, p, bal.nextLeastLoaded())
		}
	}
}

func (b *heteroBuilder) assign(t TopicID, p int32, member int) {
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
// maxBalanceIterations passes.
func (b *heteroBuilder) balance() {
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
	bal := newBalancer(b.sizes)
	var scratch topicScratch
	for range maxBalanceIterations {
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

// topicScratch is reused across balanceTopic calls, as Kafka reuses its list
// and index maps.
type topicScratch struct {
	partitions []int32
	start, end map[int]int
}

// balanceTopic moves partitions of t from its most loaded subscribers to its
// least loaded ones. Partitions are grouped by owner index (ascending), then
// partition; a member gives up its highest-numbered partition of the topic first.
func (b *heteroBuilder) balanceTopic(t TopicID, bal *balancer, s *topicScratch) int {
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

// balancer is MemberAssignmentBalancer: two bands over the members sorted by
// size (then index), the least loaded band grown upwards as it fills and the
// most loaded band grown downwards as it empties, handed out round-robin.
type balancer struct {
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

func newBalancer(sizes []int) *balancer {
	bal := &balancer{sizes: sizes, sorted: make([]int, 0, len(sizes))}
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
func (bal *balancer) initialize(members []int) int {
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
func (bal *balancer) nextLeastLoaded() int {
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
func (bal *balancer) nextMostLoaded() int {
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
func (bal *balancer) excludeMostLoaded() {
	i := bal.nextMost + 1
	bal.sorted[i], bal.sorted[bal.mostEnd-1] = bal.sorted[bal.mostEnd-1], bal.sorted[i]
	bal.mostEnd--
}

func (bal *balancer) isBalanced() bool { return bal.mostCount-bal.leastCount <= 1 }
