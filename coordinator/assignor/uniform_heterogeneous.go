package assignor

import (
	"fmt"
	"slices"

	"github.com/groupquake/groupquake/coordinator/internal/same"
)

// maxBalanceIterations is UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT:
// with overlapping, non-identical subscriptions the balancing loop may not
// converge quickly; Kafka assumes each pass roughly halves the imbalance.
const maxBalanceIterations = 16

// heteroBuilder is UniformHeterogeneousAssignmentBuilder (reworked for speed in
// KAFKA-17710). Members are numbered by their position in GroupSpec.Members;
// that index breaks every tie, so member order is the only order that matters.
// Topics are numbered in the order they are first subscribed to, and every
// per-topic and per-member table is an array over those numbers, as Kafka's
// are arrays over member indices.
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
//
// The target assignment is the owners table: when no partition is held by
// two members in the previous assignments (what any coordinator hands the
// assignor), each member's output is read off it at the end. When some are
// (a spec only a test writes), the owners table cannot say that both keep
// it, and the builder keeps every member's target as sets besides, as
// Kafka keeps its maps (targets non-nil).
type heteroBuilder struct {
	spec        *GroupSpec
	ids         []TopicID // topic number → id
	numParts    []int
	subscribers [][]int32 // ascending member indices
	owners      [][]int32
	sizes       []int
	// memberTopics[i] are member i's subscribed topic numbers.
	memberTopics [][]int32
	// targets, when non-nil, are every member's target as sets (overlapping
	// previous assignments).
	targets []map[TopicID]map[int32]struct{}
	// javaVersion orders assignments given in record order (an error's).
	javaVersion int
}

func assignUniformHeterogeneous(spec *GroupSpec, topics SubscribedTopicDescriber, cfg config) (GroupAssignment, error) {
	numMembers := len(spec.Members)
	b := &heteroBuilder{
		spec:         spec,
		javaVersion:  cfg.javaVersion,
		sizes:        make([]int, numMembers),
		memberTopics: make([][]int32, numMembers),
	}
	index := newTopicIndex(8)
	var prev []TopicID
	for i := range spec.Members {
		m := &spec.Members[i]
		if i > 0 && same.Slice(m.Topics, prev) {
			// The same subscription as the member before: same topic numbers.
			b.memberTopics[i] = b.memberTopics[i-1]
		} else {
			nums := make([]int32, len(m.Topics))
			for k, t := range m.Topics {
				ti, ok := index.get(t)
				if !ok {
					n := topics.NumPartitions(t)
					if n == -1 {
						return GroupAssignment{}, fmt.Errorf("%w: members are subscribed to topic %s which doesn't exist in the topic metadata", ErrPartitionAssignor, t)
					}
					ti = index.add(t)
					b.ids = append(b.ids, t)
					b.numParts = append(b.numParts, n)
					b.subscribers = append(b.subscribers, nil)
				}
				nums[k] = ti
			}
			b.memberTopics[i] = nums
		}
		prev = m.Topics
		for _, ti := range b.memberTopics[i] {
			b.subscribers[ti] = append(b.subscribers[ti], int32(i))
		}
	}
	out := GroupAssignment{Members: make(map[string]MemberAssignment, numMembers)}
	if len(b.ids) == 0 {
		return out, nil
	}
	b.owners = make([][]int32, len(b.ids))
	total := 0
	for _, n := range b.numParts {
		total += n
	}
	owners := make([]int32, total)
	for i := range owners {
		owners[i] = -1
	}
	for ti, n := range b.numParts {
		b.owners[ti], owners = owners[:n:n], owners[n:]
	}
	overlap, err := b.revoke(index)
	if err != nil {
		return GroupAssignment{}, err
	}
	if overlap {
		b.trackTargets(index)
	}
	b.assignRemaining()
	b.balance()
	if b.targets != nil {
		for i := range spec.Members {
			out.Members[spec.Members[i].ID] = toMemberAssignment(b.targets[i])
		}
		return out, nil
	}
	for i, a := range b.fromOwners(total) {
		out.Members[spec.Members[i].ID] = a
	}
	return out, nil
}

// compareTopics is the builder's topicComparator: partitions per subscriber
// descending (as doubles), then subscriber count ascending, then Uuid.compareTo.
func (b *heteroBuilder) compareTopics(t1, t2 int32) int {
	p1, p2 := b.numParts[t1], b.numParts[t2]
	s1, s2 := len(b.subscribers[t1]), len(b.subscribers[t2])
	r1, r2 := float64(p1)/float64(s1), float64(p2)/float64(s2)
	switch {
	case r2 < r1:
		return -1
	case r2 > r1:
		return 1
	case s1 != s2:
		return s1 - s2
	}
	return compareTopicIDs(b.ids[t1], b.ids[t2])
}

// stampMember marks member i's topics in stamp: afterwards member i
// subscribes to topic number t exactly when stamp[t] == i+1.
func (b *heteroBuilder) stampMember(stamp []int32, i int) {
	for _, ti := range b.memberTopics[i] {
		stamp[ti] = int32(i + 1)
	}
}

// revoke is maybeRevokePartitions: keep previous partitions of subscribed
// topics, drop the rest, and record owners and sizes. It reports whether a
// partition is held by two members.
func (b *heteroBuilder) revoke(index *topicIndex) (bool, error) {
	overlap := false
	stamp := make([]int32, len(b.ids))
	for i := range b.spec.Members {
		m := &b.spec.Members[i]
		b.stampMember(stamp, i)
		for _, tp := range m.Assignment {
			ti, ok := index.get(tp.Topic)
			if !ok || stamp[ti] != int32(i+1) {
				continue
			}
			owners := b.owners[ti]
			for _, p := range tp.Partitions {
				if int(p) >= len(owners) {
					// Java fails here with ArrayIndexOutOfBoundsException.
					return false, b.beyondTopic(i, index, stamp)
				}
				if owners[p] != -1 {
					overlap = true
				}
				owners[p] = int32(i)
			}
			b.sizes[i] += len(tp.Partitions)
		}
	}
	return overlap, nil
}

// beyondTopic is the error for member i, which holds a partition beyond
// its topic's size: the first such partition in Kafka's iteration order of
// its assignment.
func (b *heteroBuilder) beyondTopic(i int, index *topicIndex, stamp []int32) error {
	m := &b.spec.Members[i]
	assignment := m.Assignment
	if b.spec.RecordOrder {
		assignment = JavaAssignmentOrder(assignment, b.javaVersion)
	}
	for _, tp := range assignment {
		ti, ok := index.get(tp.Topic)
		if !ok || stamp[ti] != int32(i+1) {
			continue
		}
		for _, p := range tp.Partitions {
			if n := len(b.owners[ti]); int(p) >= n {
				return fmt.Errorf("%w: member %q holds partition %d of topic %s, which has %d partitions", ErrInvalidSpec, m.ID, p, tp.Topic, n)
			}
		}
	}
	panic("assignor: beyondTopic called for a member holding no partition beyond its topic")
}

// trackTargets builds every member's target as sets, as revoke left them
// (Kafka's maps after maybeRevokePartitions), for a spec whose previous
// assignments overlap.
func (b *heteroBuilder) trackTargets(index *topicIndex) {
	b.targets = make([]map[TopicID]map[int32]struct{}, len(b.spec.Members))
	stamp := make([]int32, len(b.ids))
	for i := range b.spec.Members {
		m := &b.spec.Members[i]
		b.stampMember(stamp, i)
		target := make(map[TopicID]map[int32]struct{}, len(m.Assignment))
		for _, tp := range m.Assignment {
			if ti, ok := index.get(tp.Topic); !ok || stamp[ti] != int32(i+1) || len(tp.Partitions) == 0 {
				continue
			}
			set := make(map[int32]struct{}, len(tp.Partitions))
			for _, p := range tp.Partitions {
				set[p] = struct{}{}
			}
			target[tp.Topic] = set
		}
		b.targets[i] = target
	}
}

// assignRemaining is assignRemainingPartitions: topics in sorted order, each
// free partition ascending to the next least loaded subscriber.
func (b *heteroBuilder) assignRemaining() {
	var withFree []int32
	for ti, owners := range b.owners {
		if slices.Contains(owners, -1) {
			withFree = append(withFree, int32(ti))
		}
	}
	slices.SortFunc(withFree, b.compareTopics)
	bal := newBalancer(b.sizes)
	for _, ti := range withFree {
		bal.initialize(b.subscribers[ti])
		for p, o := range b.owners[ti] {
			if o == -1 {
				b.assign(ti, int32(p), bal.nextLeastLoaded())
			}
		}
	}
}

func (b *heteroBuilder) assign(ti int32, p int32, member int32) {
	owners := b.owners[ti]
	old := owners[p]
	if b.targets != nil {
		moveTarget(b.targets, b.ids[ti], p, old, member)
	}
	if old != -1 {
		b.sizes[old]--
	}
	owners[p] = member
	b.sizes[member]++
}

// moveTarget moves partition p of topic t into member's set of targets, out
// of member old's (-1: it had no owner); a topic left without partitions
// leaves old's sets.
func moveTarget(targets []map[TopicID]map[int32]struct{}, t TopicID, p, old, member int32) {
	if old != -1 {
		if set := targets[old][t]; set != nil {
			delete(set, p)
			if len(set) == 0 {
				delete(targets[old], t)
			}
		}
	}
	set := targets[member][t]
	if set == nil {
		set = map[int32]struct{}{}
		targets[member][t] = set
	}
	set[p] = struct{}{}
}

// balance is balance + balanceTopics: topics with two or more subscribers, in
// sorted order, over and over until a full pass moves nothing, at most
// maxBalanceIterations passes.
func (b *heteroBuilder) balance() {
	var ts []int32
	for ti, subs := range b.subscribers {
		if len(subs) >= 2 {
			ts = append(ts, int32(ti))
		}
	}
	if len(ts) == 0 {
		return
	}
	slices.SortFunc(ts, b.compareTopics)
	bal := newBalancer(b.sizes)
	scratch := topicScratch{start: make([]int32, len(b.sizes)), end: make([]int32, len(b.sizes))}
	balancePasses(len(ts), func(i int) int { return b.balanceTopic(ts[i], bal, &scratch) })
}

// balancePasses is balance's loop over n topics in their sorted order:
// balanceTopic(i) moves topic i's partitions and says how many moved. The
// passes go on until a whole pass moves nothing (they stop at the topic
// that last moved something), at most maxBalanceIterations times.
func balancePasses(n int, balanceTopic func(i int) int) {
	last := -1
	for range maxBalanceIterations {
		for i := range n {
			if i == last {
				return
			}
			if balanceTopic(i) > 0 || last == -1 {
				last = i
			}
		}
	}
}

// topicScratch is reused across balanceTopic calls, as Kafka reuses its list
// and index maps. start and end are indexed by member: the member's stretch
// of partitions, [start, end), or an empty one when it holds none of the
// topic.
type topicScratch struct {
	partitions []int32
	keys       []uint64
	start, end []int32
}

// balanceTopic moves partitions of t from its most loaded subscribers to its
// least loaded ones. Partitions are grouped by owner index (ascending), then
// partition; a member gives up its highest-numbered partition of the topic first.
func (b *heteroBuilder) balanceTopic(ti int32, bal *balancer, s *topicScratch) int {
	owners := b.owners[ti]
	subs := b.subscribers[ti]
	if bal.initialize(subs) <= 1 {
		return 0
	}
	// The partitions sorted by (owner, partition): keys are unique, so any
	// sort gives Kafka's order. Every partition of a subscribed topic has an
	// owner by now, and owners are subscribers.
	s.keys = s.keys[:0]
	for p, o := range owners {
		s.keys = append(s.keys, uint64(uint32(o))<<32|uint64(uint32(p)))
	}
	slices.Sort(s.keys)
	s.partitions = s.partitions[:0]
	for _, k := range s.keys {
		s.partitions = append(s.partitions, int32(uint32(k)))
	}
	for _, m := range subs {
		s.start[m], s.end[m] = 0, 0
	}
	for i, p := range s.partitions {
		o := owners[p]
		if i == 0 || owners[s.partitions[i-1]] != o {
			s.start[o] = int32(i)
		}
		s.end[o] = int32(i + 1)
	}
	return bal.moveUntilBalanced(
		func(m int32) bool { return s.end[m]-s.start[m] > 0 },
		func(from, to int32) {
			s.end[from]--
			b.assign(ti, s.partitions[s.end[from]], to)
		})
}

// fromOwners reads every member's target off the owners table: per topic,
// each member's partitions ascending, all in one array, and every member's
// topics in another.
func (b *heteroBuilder) fromOwners(total int) []MemberAssignment {
	numMembers := len(b.sizes)
	// topicsHeld[i]: how many topics member i holds partitions of.
	topicsHeld := make([]int, numMembers)
	count := make([]int32, numMembers)
	var held []int32 // the members holding some of the current topic
	for _, owners := range b.owners {
		held = held[:0]
		for _, o := range owners {
			if count[o] == 0 {
				held = append(held, o)
			}
			count[o]++
		}
		for _, o := range held {
			topicsHeld[o]++
			count[o] = 0
		}
	}
	out := make([]MemberAssignment, numMembers)
	entries := 0
	for i := range numMembers {
		entries += topicsHeld[i]
	}
	topics := make([]TopicPartitions, entries)
	for i := range numMembers {
		out[i], topics = topics[:0:topicsHeld[i]], topics[topicsHeld[i]:]
	}
	all := make([]int32, total)
	next := make([]int32, numMembers) // where member o's next partition goes
	for ti, owners := range b.owners {
		if len(owners) == 0 {
			continue
		}
		held = held[:0]
		for _, o := range owners {
			if count[o] == 0 {
				held = append(held, o)
			}
			count[o]++
		}
		part := all[:len(owners):len(owners)]
		all = all[len(owners):]
		at := int32(0)
		for _, o := range held {
			next[o] = at
			at += count[o]
		}
		for p, o := range owners {
			part[next[o]] = int32(p)
			next[o]++
		}
		for _, o := range held {
			from := next[o] - count[o]
			out[o] = append(out[o], TopicPartitions{Topic: b.ids[ti], Partitions: part[from:next[o]:next[o]]})
			count[o] = 0
		}
	}
	return out
}

// balancer is MemberAssignmentBalancer: two bands over the members sorted by
// size (then index), the least loaded band grown upwards as it fills and the
// most loaded band grown downwards as it empties, handed out round-robin.
type balancer struct {
	sizes  []int // shared with the builder
	sorted []int32
	keys   []uint64

	leastEnd   int // [0, leastEnd) is the least loaded band
	leastCount int // its size before anything was added
	nextLeast  int
	mostStart  int // [mostStart, mostEnd) is the most loaded band
	mostEnd    int
	mostCount  int // its size before anything was taken
	nextMost   int
}

func newBalancer(sizes []int) *balancer {
	return &balancer{sizes: sizes, sorted: make([]int32, 0, len(sizes))}
}

// initialize resets the bands for members (non-empty) and returns the spread
// between the most and least loaded.
func (bal *balancer) initialize(members []int32) int {
	// Sorted by (size, index): the keys are unique, so any sort gives
	// Kafka's order. Sizes are partition counts, below 2^31.
	bal.keys = bal.keys[:0]
	for _, m := range members {
		bal.keys = append(bal.keys, uint64(bal.sizes[m])<<32|uint64(uint32(m)))
	}
	slices.Sort(bal.keys)
	bal.sorted = bal.sorted[:0]
	for _, k := range bal.keys {
		bal.sorted = append(bal.sorted, int32(uint32(k)))
	}
	return bal.startBands()
}

// startBands starts the bands over bal.sorted (non-empty, sorted by size
// then index) and returns the spread between the most and least loaded.
func (bal *balancer) startBands() int {
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
func (bal *balancer) nextLeastLoaded() int32 {
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
func (bal *balancer) nextMostLoaded() int32 {
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

// moveUntilBalanced is balanceTopic's loop: until the bands are balanced,
// the next most loaded member that holds a partition of the topic (holds)
// gives one to the next least loaded member (move: its highest-numbered
// one). Members that hold none are dropped from the most loaded band. It
// returns how many partitions moved.
func (bal *balancer) moveUntilBalanced(holds func(member int32) bool, move func(from, to int32)) int {
	moved := 0
	for !bal.isBalanced() {
		most := int32(-1)
		for {
			most = bal.nextMostLoaded()
			if most == -1 {
				break
			}
			if !holds(most) {
				bal.excludeMostLoaded()
				continue
			}
			break
		}
		if most == -1 {
			break
		}
		least := bal.nextLeastLoaded()
		if bal.isBalanced() {
			break
		}
		move(most, least)
		moved++
	}
	return moved
}
