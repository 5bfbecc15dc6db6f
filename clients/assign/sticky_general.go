package assign

import (
	"errors"
	"fmt"
	"slices"
)

// ErrJavaThrows marks input on which the Java assignor throws instead of
// assigning, so a Java leader would fail the rebalance. The sticky
// assignors return it (wrapped, with the detail) rather than invent a plan
// Java would never produce; a caller that prefers a plan anyway can treat
// it as it likes.
var ErrJavaThrows = errors.New("the Java assignor throws on this input")

// generalBuilder is AbstractStickyAssignor.GeneralAssignmentBuilder, used
// when subscriptions differ. Steps, as in Java:
//  1. keep every owned partition the member still subscribes to;
//  2. assign the rest one by one to the least loaded subscribed member
//     (sortedCurrentSubscriptions: by partition count, then member id);
//  3. move partitions from members that have two or more than another
//     member that could take them, preferring to move a partition back to
//     its owner in an older generation (prevAssignment) and undoing a move
//     between the same two members (PartitionMovements);
//  4. keep the result of step 3 only if it lowers the balance score (the
//     sum over member pairs of the difference of their counts), unless the
//     group started with nothing assigned.
//
// Members are int indices into group.members; the member id only breaks
// ties, with Java's String.compareTo.
type generalBuilder struct {
	r *stickyRun
	g *group

	topicConsumers  map[string][]int // topic2AllPotentialConsumers
	consumerTopics  [][]string       // consumer2AllPotentialTopics
	current         map[int][]tp     // currentAssignment (members present)
	partitionOwner  map[tp]int       // currentPartitionConsumer
	sortedPartition []tp             // sortedAllPartitions
	sortedMembers   []int            // sortedCurrentSubscriptions
	totalPartitions int
	revocation      bool // revocationRequired
	moves           *partitionMovements
}

func (r *stickyRun) general() ([][]tp, error) {
	g := r.g
	b := &generalBuilder{
		r:              r,
		g:              g,
		topicConsumers: make(map[string][]int, len(g.partitionsPerTopic)),
		consumerTopics: make([][]string, len(g.members)),
		current:        make(map[int][]tp, len(g.members)),
		partitionOwner: map[tp]int{},
		moves:          newPartitionMovements(),
	}
	for t, n := range g.partitionsPerTopic {
		b.topicConsumers[t] = nil
		b.totalPartitions += int(n)
	}
	for _, i := range r.order {
		for _, t := range g.topics[i] {
			if _, ok := g.partitionsPerTopic[t]; ok {
				b.consumerTopics[i] = append(b.consumerTopics[i], t)
				b.topicConsumers[t] = append(b.topicConsumers[t], i)
			}
		}
	}
	for i := range g.members {
		b.current[i] = slices.Clone(r.owned[i])
		for _, p := range b.current[i] {
			b.partitionOwner[p] = i
		}
	}
	topicsSorted := make([]string, 0, len(b.topicConsumers))
	for t := range b.topicConsumers {
		topicsSorted = append(topicsSorted, t)
	}
	slices.SortFunc(topicsSorted, b.topicCompare)
	for _, t := range topicsSorted {
		for p := range g.partitionsPerTopic[t] {
			b.sortedPartition = append(b.sortedPartition, tp{t, p})
		}
	}
	return b.build()
}

// topicCompare is TopicComparator: fewer potential consumers first, then
// by name.
func (b *generalBuilder) topicCompare(x, y string) int {
	if d := len(b.topicConsumers[x]) - len(b.topicConsumers[y]); d != 0 {
		return d
	}
	return javaCompare(x, y)
}

// memberCompare is SubscriptionComparator: fewer partitions first, then id.
func (b *generalBuilder) memberCompare(x, y int) int {
	if d := len(b.current[x]) - len(b.current[y]); d != 0 {
		return d
	}
	return javaCompare(b.g.members[x].ID, b.g.members[y].ID)
}

// The sorted set keeps the invariant of Java's TreeSet use: a member's
// count never changes while it is in the set (callers remove, change,
// re-add).
func (b *generalBuilder) sortedAdd(i int) {
	k, found := slices.BinarySearchFunc(b.sortedMembers, i, b.memberCompare)
	if !found {
		b.sortedMembers = slices.Insert(b.sortedMembers, k, i)
	}
}

func (b *generalBuilder) sortedRemove(i int) {
	if k, found := slices.BinarySearchFunc(b.sortedMembers, i, b.memberCompare); found {
		b.sortedMembers = slices.Delete(b.sortedMembers, k, k+1)
	}
}

type generationOwner struct {
	member     int
	generation int32
}

func (b *generalBuilder) build() ([][]tp, error) {
	prev := b.prepopulate()
	assigned := b.assignOwned()
	isAssigned := make(map[tp]bool, len(assigned))
	for _, p := range assigned {
		isAssigned[p] = true
	}
	var unassigned []tp
	for _, p := range b.sortedPartition {
		if !isAssigned[p] {
			unassigned = append(unassigned, p)
		}
	}
	for i := range b.current {
		b.sortedAdd(i)
	}
	if err := b.balance(prev, unassigned); err != nil {
		return nil, err
	}
	out := make([][]tp, len(b.g.members))
	for i, ps := range b.current {
		out[i] = ps
	}
	return out, nil
}

// prepopulate is prepopulateCurrentAssignments: for every partition, the
// most recent owner among members whose generation is below the newest
// one. Ties keep the first member in map order.
func (b *generalBuilder) prepopulate() map[tp]generationOwner {
	maxGen := int32(defaultGeneration)
	for _, d := range b.r.data {
		maxGen = max(maxGen, d.gen())
	}
	prev := map[tp]generationOwner{}
	update := func(ps []tp, member int, gen int32) {
		for _, p := range ps {
			if old, ok := prev[p]; !ok || gen > old.generation {
				prev[p] = generationOwner{member, gen}
			}
		}
	}
	for _, i := range b.r.order {
		d := b.r.data[i]
		switch {
		case d.hasGen && d.generation < maxGen:
			update(d.partitions, i, d.generation)
		case !d.hasGen && maxGen > defaultGeneration:
			update(d.partitions, i, defaultGeneration)
		}
	}
	return prev
}

// assignOwned is the general builder's assignOwnedPartitions: keep owned
// partitions of topics the member still subscribes to. Dropping one means
// a revocation is needed.
func (b *generalBuilder) assignOwned() []tp {
	var assigned []tp
	for _, i := range b.r.order {
		kept := b.current[i][:0]
		for _, p := range b.current[i] {
			if !b.g.subscribed[i][p.topic] {
				b.revocation = true
				// Java leaves currentPartitionConsumer pointing at
				// the old member; the partition is unassigned and is
				// assigned afresh before anyone reads it.
				continue
			}
			kept = append(kept, p)
			assigned = append(assigned, p)
		}
		b.current[i] = kept
	}
	return assigned
}

// maxAssignmentSize is getMaxAssignmentSize.
func (b *generalBuilder) maxAssignmentSize(i int) int {
	if len(b.consumerTopics[i]) == len(b.g.partitionsPerTopic) {
		return b.totalPartitions
	}
	n := 0
	for _, t := range b.consumerTopics[i] {
		n += int(b.g.partitionsPerTopic[t])
	}
	return n
}

// isBalanced: the counts differ by at most one, or no member could take a
// partition from a member with two or more than it.
func (b *generalBuilder) isBalanced() bool {
	if len(b.sortedMembers) == 0 {
		return true
	}
	lo := len(b.current[b.sortedMembers[0]])
	hi := len(b.current[b.sortedMembers[len(b.sortedMembers)-1]])
	if lo >= hi-1 {
		return true
	}
	owner := make(map[tp]int, b.totalPartitions)
	for i, ps := range b.current {
		for _, p := range ps {
			owner[p] = i
		}
	}
	for _, i := range b.sortedMembers {
		count := len(b.current[i])
		if count == b.maxAssignmentSize(i) {
			continue
		}
		for _, t := range b.consumerTopics[i] {
			for p := range b.g.partitionsPerTopic[t] {
				other, ok := owner[tp{t, p}]
				if !ok || other == i {
					continue
				}
				if count+1 < len(b.current[other]) {
					return false
				}
			}
		}
	}
	return true
}

// balanceScore is getBalanceScore.
func balanceScore(a map[int][]tp) int {
	counts := make([]int, 0, len(a))
	for _, ps := range a {
		counts = append(counts, len(ps))
	}
	score := 0
	for x := range counts {
		for y := x + 1; y < len(counts); y++ {
			d := counts[x] - counts[y]
			if d < 0 {
				d = -d
			}
			score += d
		}
	}
	return score
}

func (b *generalBuilder) subscribedTo(i int, topic string) bool {
	return slices.Contains(b.consumerTopics[i], topic)
}

// assignPartition is maybeAssignPartition without racks: the least loaded
// member that subscribes to the topic takes it.
func (b *generalBuilder) assignPartition(p tp) {
	for _, i := range b.sortedMembers {
		if b.subscribedTo(i, p.topic) {
			b.sortedRemove(i)
			b.current[i] = append(b.current[i], p)
			b.partitionOwner[p] = i
			b.sortedAdd(i)
			return
		}
	}
}

func (b *generalBuilder) topicCanMove(t string) bool { return len(b.topicConsumers[t]) >= 2 }

func (b *generalBuilder) memberCanMove(i int) bool {
	if len(b.current[i]) < b.maxAssignmentSize(i) {
		return true
	}
	for _, p := range b.current[i] {
		if b.topicCanMove(p.topic) {
			return true
		}
	}
	return false
}

func (b *generalBuilder) balance(prev map[tp]generationOwner, unassigned []tp) error {
	initializing := len(b.current[b.sortedMembers[len(b.sortedMembers)-1]]) == 0

	for _, p := range unassigned {
		if len(b.topicConsumers[p.topic]) > 0 {
			b.assignPartition(p)
		}
	}

	// Narrow the search to partitions and members that can move.
	fixedTopic := func(p tp) bool { return !b.topicCanMove(p.topic) }
	b.sortedPartition = slices.DeleteFunc(b.sortedPartition, fixedTopic)
	unassigned = slices.DeleteFunc(unassigned, fixedTopic)
	fixed := map[int][]tp{}
	for i := range b.g.members {
		if !b.memberCanMove(i) {
			b.sortedRemove(i)
			fixed[i] = b.current[i]
			delete(b.current, i)
		}
	}

	preBalance := make(map[int][]tp, len(b.current))
	for i, ps := range b.current {
		preBalance[i] = slices.Clone(ps)
	}
	preOwner := make(map[tp]int, len(b.partitionOwner))
	for p, i := range b.partitionOwner {
		preOwner[p] = i
	}

	if !b.revocation {
		if _, err := b.performReassignments(unassigned, prev); err != nil {
			return err
		}
	}
	performed, err := b.performReassignments(b.sortedPartition, prev)
	if err != nil {
		return err
	}

	if !initializing && performed && balanceScore(b.current) >= balanceScore(preBalance) {
		b.current = preBalance
		b.partitionOwner = preOwner
	}
	for i, ps := range fixed {
		b.current[i] = ps
	}
	return nil
}

// performReassignments repeats passes over the partitions until a pass
// moves nothing or the assignment is balanced.
func (b *generalBuilder) performReassignments(partitions []tp, prev map[tp]generationOwner) (bool, error) {
	performed := false
	for modified := true; modified; {
		modified = false
		for _, p := range partitions {
			if b.isBalanced() {
				break
			}
			owner := b.partitionOwner[p]
			if old, ok := prev[p]; ok {
				if _, present := b.current[old.member]; !present {
					// Java reads the old owner's assignment without a
					// check; that member was set aside as fixed (it no
					// longer subscribes to anything that can move), so
					// Java throws NullPointerException.
					return false, fmt.Errorf("%w: %s-%d was last owned in generation %d by %q, which no longer subscribes to any partition that can move (AbstractStickyAssignor.performReassignments throws NullPointerException)",
						ErrJavaThrows, p.topic, p.partition, old.generation, b.g.members[old.member].ID)
				}
				if len(b.current[owner]) > len(b.current[old.member])+1 {
					b.reassignTo(p, old.member)
					performed, modified = true, true
					continue
				}
			}
			for _, other := range b.topicConsumers[p.topic] {
				if len(b.current[owner]) > len(b.current[other])+1 {
					b.reassign(p)
					performed, modified = true, true
					break
				}
			}
		}
	}
	return performed, nil
}

// reassign moves p to the least loaded member subscribed to its topic.
func (b *generalBuilder) reassign(p tp) {
	for _, i := range b.sortedMembers {
		if b.subscribedTo(i, p.topic) {
			b.reassignTo(p, i)
			return
		}
	}
}

func (b *generalBuilder) reassignTo(p tp, to int) {
	from := b.partitionOwner[p]
	moved, choices := b.moves.actualPartitionToMove(p, from, to)
	if choices > 0 {
		b.r.reversedMoves++
	}
	if choices > 1 {
		b.r.reversedChoices++
	}
	b.processMovement(moved, to)
}

func (b *generalBuilder) processMovement(p tp, to int) {
	from := b.partitionOwner[p]
	b.sortedRemove(from)
	b.sortedRemove(to)
	b.moves.move(p, from, to)
	b.current[from] = removeFirst(b.current[from], p)
	b.current[to] = append(b.current[to], p)
	b.partitionOwner[p] = to
	b.sortedAdd(to)
	b.sortedAdd(from)
}

// memberPair is ConsumerPair: a partition moved from src to dst.
type memberPair struct{ src, dst int }

// partitionMovements is AbstractStickyAssignor.PartitionMovements: where
// each moved partition came from, so that a later move in the opposite
// direction between the same two members moves the same partition back
// instead of a different one of the same topic.
type partitionMovements struct {
	byTopic     map[string]map[memberPair]*javaHashSet
	byPartition map[tp]memberPair
}

func newPartitionMovements() *partitionMovements {
	return &partitionMovements{byTopic: map[string]map[memberPair]*javaHashSet{}, byPartition: map[tp]memberPair{}}
}

func (m *partitionMovements) removeRecord(p tp) memberPair {
	pair := m.byPartition[p]
	delete(m.byPartition, p)
	forTopic := m.byTopic[p.topic]
	forTopic[pair].remove(p)
	if forTopic[pair].empty() {
		delete(forTopic, pair)
	}
	if len(forTopic) == 0 {
		delete(m.byTopic, p.topic)
	}
	return pair
}

func (m *partitionMovements) addRecord(p tp, pair memberPair) {
	m.byPartition[p] = pair
	forTopic := m.byTopic[p.topic]
	if forTopic == nil {
		forTopic = map[memberPair]*javaHashSet{}
		m.byTopic[p.topic] = forTopic
	}
	set := forTopic[pair]
	if set == nil {
		set = newJavaHashSet()
		forTopic[pair] = set
	}
	set.add(p)
}

func (m *partitionMovements) move(p tp, from, to int) {
	if existing, ok := m.byPartition[p]; ok {
		m.removeRecord(p)
		if existing.src != to {
			m.addRecord(p, memberPair{existing.src, to})
		}
		return
	}
	m.addRecord(p, memberPair{from, to})
}

// actualPartitionToMove is getTheActualPartitionToBeMoved: if some
// partition of the same topic earlier moved from `to` to p's original
// owner, move that one back instead. Java takes the first element of a
// HashSet; javaHashSet reproduces which one that is. choices is the size
// of that set (0 when no earlier move is undone).
func (m *partitionMovements) actualPartitionToMove(p tp, from, to int) (moved tp, choices int) {
	forTopic, ok := m.byTopic[p.topic]
	if !ok {
		return p, 0
	}
	if pair, moved := m.byPartition[p]; moved {
		from = pair.src
	}
	set, ok := forTopic[memberPair{to, from}]
	if !ok {
		return p, 0
	}
	return set.first(), len(set.seq)
}
