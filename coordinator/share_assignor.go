package coordinator

import (
	"maps"
	"slices"

	"github.com/groupquake/groupquake/coordinator/assignor"
)

// shareAssignor is Kafka's share assignor, SimpleAssignor ("simple", the
// only one of 4.2–4.4; its builders are alike in those branches): every
// member gets partitions of the topics it subscribes to, a partition is
// shared by ceil(members/partitions) members when there are more members
// than partitions, and what a member had stays with it where the counts
// allow (no revocation protocol: a share group's member drops a partition
// as soon as its assignment says so).
//
// The builders iterate Java hash maps and sets, so which member keeps
// which partition follows their iteration orders; they are reproduced
// here (package assignor's Java order helpers): members in
// GroupSpec.memberIds() order (a HashMap of the member ids), partitions of
// the homogeneous builder in the order of its HashMap of TopicIdPartition
// (a record: hashCode 31·Uuid.hashCode + partition), and Integer sets
// (member indices, partitions) ascending, which is their order while
// every value is below the table size (member indices always are;
// partitions are below 16 in every vector).
type shareAssignor struct {
	// memberIDs in GroupSpec.memberIds() order.
	memberIDs []string
	// subscribed is each member's subscribed topic ids, in Java HashSet
	// order.
	subscribed map[string][][16]byte
	// partitions is each topic's partition count in the metadata image.
	partitions map[[16]byte]int
	// assignable are the initialized share-partitions
	// (GroupSpec.isPartitionAssignable).
	assignable map[[16]byte][]int32
	// old is each member's target assignment so far.
	old map[string]tpSet
}

// tpSet is an assignment: partitions by topic id, each list ascending.
type tpSet map[[16]byte][]int32

func (a tpSet) clone() tpSet {
	out := make(tpSet, len(a))
	for k, v := range a {
		out[k] = slices.Clone(v)
	}
	return out
}

func (a tpSet) equal(b tpSet) bool {
	if len(a.nonEmpty()) != len(b.nonEmpty()) {
		return false
	}
	for k, v := range a {
		if len(v) == 0 {
			continue
		}
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func (a tpSet) nonEmpty() tpSet {
	out := tpSet{}
	for k, v := range a {
		if len(v) > 0 {
			out[k] = v
		}
	}
	return out
}

func (a tpSet) add(id [16]byte, p int32) {
	if !slices.Contains(a[id], p) {
		a[id] = append(a[id], p)
		slices.Sort(a[id])
	}
}

func (a tpSet) remove(id [16]byte, p int32) bool {
	i := slices.Index(a[id], p)
	if i < 0 {
		return false
	}
	a[id] = slices.Delete(a[id], i, i+1)
	return true
}

func (a tpSet) count() int {
	n := 0
	for _, v := range a {
		n += len(v)
	}
	return n
}

// javaNewHashMapCapacity is AssignorHelpers.newHashMap's capacity.
func javaNewHashMapCapacity(n int) int { return int(float32(n+1)/0.75) + 1 }

type topicPartition struct {
	id [16]byte
	p  int32
}

func (tp topicPartition) javaHash() int32 { return 31*assignor.JavaUUIDHash(tp.id) + tp.p }

// tpMap is a java.util.HashMap keyed by TopicIdPartition, kept in
// insertion order and iterated in Java's.
type tpMap[V any] struct {
	capacity int // 0: new HashMap<>()
	keys     []topicPartition
	vals     map[topicPartition]V
}

func newTPMap[V any](capacity int) *tpMap[V] {
	return &tpMap[V]{capacity: capacity, vals: map[topicPartition]V{}}
}

func (m *tpMap[V]) get(k topicPartition) (V, bool) { v, ok := m.vals[k]; return v, ok }

func (m *tpMap[V]) put(k topicPartition, v V) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *tpMap[V]) delete(k topicPartition) {
	if _, ok := m.vals[k]; !ok {
		return
	}
	delete(m.vals, k)
	m.keys = slices.DeleteFunc(m.keys, func(x topicPartition) bool { return x == k })
}

func (m *tpMap[V]) len() int { return len(m.keys) }

// order is the keys in Java's iteration order. The table only grows, so
// its size is the one reached by the most keys the map held; the keys
// held now suffice for the maps here, which never shrink below that in a
// way that changes the table (they only lose keys after growing).
func (m *tpMap[V]) order() []topicPartition {
	hashes := make([]int32, len(m.keys))
	for i, k := range m.keys {
		hashes[i] = k.javaHash()
	}
	table := assignor.JavaDefaultTable(len(m.keys))
	if m.capacity > 0 {
		table = assignor.JavaPresizedTable(m.capacity, len(m.keys))
	}
	out := make([]topicPartition, len(m.keys))
	for i, j := range assignor.JavaHashOrder(hashes, table) {
		out[i] = m.keys[j]
	}
	return out
}

// intSet is a HashSet<Integer> of small non-negative values: ascending.
type intSet map[int]bool

func (s intSet) sorted() []int { return slices.Sorted(maps.Keys(s)) }

// assign runs SimpleAssignor.assign.
func (a *shareAssignor) assign() map[string]tpSet {
	if len(a.memberIDs) == 0 {
		return map[string]tpSet{}
	}
	homogeneous := true
	first := a.subscribed[a.memberIDs[0]]
	for _, m := range a.memberIDs[1:] {
		if !sameIDs(a.subscribed[m], first) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		return a.homogeneous()
	}
	return a.heterogeneous()
}

func sameIDs(x, y [][16]byte) bool {
	if len(x) != len(y) {
		return false
	}
	for _, id := range x {
		if !slices.Contains(y, id) {
			return false
		}
	}
	return true
}

func (a *shareAssignor) targetPartitions(id [16]byte) []int32 {
	var out []int32
	for p := range a.partitions[id] {
		if slices.Contains(a.assignable[id], int32(p)) {
			out = append(out, int32(p))
		}
	}
	return out
}

func desiredCounts(sharing, partitions, members int) []int {
	out := make([]int, members)
	if members == 0 {
		return out
	}
	precise := float64(sharing*partitions) / float64(members)
	for i := range members {
		out[i] = ceilF(precise*float64(i+1)) - ceilF(precise*float64(i))
	}
	return out
}

func ceilF(x float64) int {
	n := int(x)
	if float64(n) < x {
		n++
	}
	return n
}

// unfilledIter is a HashSet<Integer> iterator that may remove the element
// it returned, and starts over from the smallest remaining element.
type unfilledIter struct {
	vals []int
	cur  int
}

func (it *unfilledIter) hasNext() bool { return it.cur < len(it.vals) }
func (it *unfilledIter) next() int     { it.cur++; return it.vals[it.cur-1] }
func (it *unfilledIter) remove() {
	it.cur--
	it.vals = slices.Delete(it.vals, it.cur, it.cur+1)
}
func (it *unfilledIter) restart()    { it.cur = 0 }
func (it *unfilledIter) empty() bool { return len(it.vals) == 0 }

// homBuilder is SimpleHomogeneousAssignmentBuilder's state: members by
// index, the old and new assignments, and the final assignment by
// partition and by member.
type homBuilder struct {
	subscribed           [][16]byte
	targets              []topicPartition
	sharing              int
	desired              []int
	old                  []tpSet
	newA                 map[int]tpSet
	byPartition          *tpMap[intSet]
	byMember             map[int]*tpMap[bool]
	unfilled, overfilled intSet
}

// homogeneous is SimpleHomogeneousAssignmentBuilder.build.
func (a *shareAssignor) homogeneous() map[string]tpSet {
	b := &homBuilder{subscribed: a.subscribed[a.memberIDs[0]], newA: map[int]tpSet{}, byMember: map[int]*tpMap[bool]{},
		unfilled: intSet{}, overfilled: intSet{}}
	n := len(a.memberIDs)
	for _, id := range b.subscribed {
		for _, p := range a.targetPartitions(id) {
			b.targets = append(b.targets, topicPartition{id, p})
		}
	}
	if len(b.targets) > 0 {
		b.sharing = (n + len(b.targets) - 1) / len(b.targets)
	}
	b.desired = desiredCounts(b.sharing, len(b.targets), n)
	b.old = make([]tpSet, n)
	for i, m := range a.memberIDs {
		b.old[i] = a.old[m]
		if b.old[i] == nil {
			b.old[i] = tpSet{}
		}
	}
	b.byPartition = newTPMap[intSet](javaNewHashMapCapacity(len(b.targets)))
	if len(b.subscribed) == 0 {
		return a.result(b.old, b.newA)
	}
	b.revokeUnassignable()
	b.revokeOverfilled()
	b.revokeOvershared()
	for _, tp := range b.targets {
		if _, ok := b.byPartition.get(tp); !ok {
			b.byPartition.put(tp, intSet{})
		}
	}
	b.assignRemaining()
	return a.result(b.old, b.newA)
}

func (b *homBuilder) member(i int) *tpMap[bool] {
	if b.byMember[i] == nil {
		b.byMember[i] = newTPMap[bool](0)
	}
	return b.byMember[i]
}

func (b *homBuilder) copyOf(i int) tpSet {
	na := b.newA[i]
	if na == nil {
		na = b.old[i].clone()
		b.newA[i] = na
	}
	return na
}

// revokeUnassignable is revokeUnassignablePartitions: the old assignment
// of subscribed topics counts, other topics are dropped.
func (b *homBuilder) revokeUnassignable() {
	for i := range b.old {
		var copied tpSet
		assigned := 0
		for _, id := range javaUUIDOrder(b.old[i]) {
			if !slices.Contains(b.subscribed, id) {
				if copied == nil {
					copied = b.old[i].clone()
				}
				delete(copied, id)
				continue
			}
			for _, p := range b.old[i][id] {
				tp := topicPartition{id, p}
				assigned++
				s, ok := b.byPartition.get(tp)
				if !ok {
					s = intSet{}
					b.byPartition.put(tp, s)
				}
				s[i] = true
				b.member(i).put(tp, true)
				if assigned >= b.desired[i] && copied == nil {
					copied = b.old[i].clone()
				}
			}
		}
		if copied != nil {
			b.newA[i] = copied
		}
		if assigned < b.desired[i] {
			b.unfilled[i] = true
		} else if assigned > b.desired[i] {
			b.overfilled[i] = true
		}
	}
}

// revokeOverfilled is revokeOverfilledMembers.
func (b *homBuilder) revokeOverfilled() {
	for _, i := range b.overfilled.sorted() {
		fm := b.byMember[i]
		if fm.len() <= b.desired[i] {
			continue
		}
		for _, tp := range fm.order() {
			b.newA[i].remove(tp.id, tp.p)
			s, _ := b.byPartition.get(tp)
			delete(s, i)
			fm.delete(tp)
			if fm.len() == b.desired[i] {
				break
			}
		}
	}
}

// revokeOvershared is revokeOversharedPartitions.
func (b *homBuilder) revokeOvershared() {
	for _, tp := range b.byPartition.order() {
		members, _ := b.byPartition.get(tp)
		count := len(members)
		if count <= b.sharing {
			continue
		}
		for _, i := range members.sorted() {
			na := b.copyOf(i)
			if _, ok := na[tp.id]; ok && na.remove(tp.id, tp.p) {
				count--
				delete(members, i)
				b.byMember[i].delete(tp)
				b.unfilled[i] = true
			}
			if count <= b.sharing {
				break
			}
		}
	}
}

// assignRemaining is assignRemainingPartitions: one pass over the
// partitions, cycling through the unfilled members.
func (b *homBuilder) assignRemaining() {
	if len(b.unfilled) == 0 {
		return
	}
	it := &unfilledIter{vals: b.unfilled.sorted()}
	fillPartitions(it, b.byPartition.order(), b.sharing, func(tp topicPartition) intSet {
		members, _ := b.byPartition.get(tp)
		return members
	}, func(i int, tp topicPartition) bool {
		b.copyOf(i).add(tp.id, tp.p)
		b.member(i).put(tp, true)
		return b.byMember[i].len() >= b.desired[i]
	})
}

// fillPartitions is the loop of Java's assignRemainingPartitions, for both
// builders: each partition of order, held by the members that members
// gives, gets copies for the unfilled members it cycles through (skipping
// those that hold it) until sharing members hold it; a round through the
// members that assigns nothing ends the partition, and no unfilled member
// left ends the loop. assign gives partition p to member i and says whether
// i now has its desired count.
func fillPartitions[P any](it *unfilledIter, order []P, sharing int, members func(P) intSet, assign func(i int, p P) bool) {
	assignedThisRound := false
	for _, p := range order {
		held := members(p)
		for toMake := sharing - len(held); toMake > 0; {
			if !it.hasNext() {
				if !assignedThisRound {
					break
				}
				it.restart()
				assignedThisRound = false
			}
			i := it.next()
			if held[i] {
				continue
			}
			toMake--
			assignedThisRound = true
			if assign(i, p) {
				it.remove()
			}
		}
		if it.empty() {
			break
		}
	}
}

func (a *shareAssignor) result(old []tpSet, newA map[int]tpSet) map[string]tpSet {
	out := make(map[string]tpSet, len(a.memberIDs))
	for i, m := range a.memberIDs {
		if na, ok := newA[i]; ok {
			out[m] = na.nonEmpty()
		} else {
			out[m] = old[i].nonEmpty()
		}
	}
	return out
}

// javaUUIDOrder is the topic ids of an assignment in the order of a
// HashMap<Uuid, …> holding them.
func javaUUIDOrder(a tpSet) [][16]byte {
	ids := slices.SortedFunc(maps.Keys(a), func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	hashes := make([]int32, len(ids))
	for i, id := range ids {
		hashes[i] = assignor.JavaUUIDHash(id)
	}
	out := make([][16]byte, len(ids))
	for i, j := range assignor.JavaHashOrder(hashes, assignor.JavaDefaultTable(len(ids))) {
		out[i] = ids[j]
	}
	return out
}

// heterogeneous is SimpleHeterogeneousAssignmentBuilder.build: each topic
// on its own among the members subscribed to it.
func (a *shareAssignor) heterogeneous() map[string]tpSet {
	n := len(a.memberIDs)
	old := make([]tpSet, n)
	for i, m := range a.memberIDs {
		old[i] = a.old[m]
		if old[i] == nil {
			old[i] = tpSet{}
		}
	}
	topics := map[[16]byte]bool{}
	subscribers := map[[16]byte][]int{}
	for i, m := range a.memberIDs {
		for _, id := range a.subscribed[m] {
			topics[id] = true
			subscribers[id] = append(subscribers[id], i)
		}
	}
	newA := map[int]tpSet{}
	if len(topics) == 0 {
		return a.result(old, newA)
	}
	for _, id := range javaUUIDOrder(tpSetOf(topics)) {
		a.heterogeneousTopic(id, old, newA, subscribers[id])
	}
	return a.result(old, newA)
}

func tpSetOf(ids map[[16]byte]bool) tpSet {
	out := tpSet{}
	for id := range ids {
		out[id] = nil
	}
	return out
}

func (a *shareAssignor) heterogeneousTopic(id [16]byte, old []tpSet, newA map[int]tpSet, subscribers []int) {
	targets := a.targetPartitions(id)
	sharing := 0
	if len(targets) > 0 {
		sharing = (len(subscribers) + len(targets) - 1) / len(targets)
	}
	desired := make([]int, len(old))
	for k, c := range desiredCounts(sharing, len(targets), len(subscribers)) {
		desired[subscribers[k]] = c
	}
	byPartition := map[int32]intSet{}
	byMember := map[int]map[int32]bool{}
	// revokeUnassignablePartitions: every topic here is subscribed by
	// someone, so nothing is dropped.
	for i := range old {
		for _, p := range old[i][id] {
			if byPartition[p] == nil {
				byPartition[p] = intSet{}
			}
			byPartition[p][i] = true
			if byMember[i] == nil {
				byMember[i] = map[int32]bool{}
			}
			byMember[i][p] = true
		}
	}
	copyOf := func(i int) tpSet {
		na := newA[i]
		if na == nil {
			na = old[i].clone()
			newA[i] = na
		}
		return na
	}
	// revokeOverfilledMembers
	for _, i := range slices.Sorted(maps.Keys(byMember)) {
		ps := byMember[i]
		for _, p := range slices.Sorted(maps.Keys(ps)) {
			if len(ps) <= desired[i] {
				break
			}
			delete(byPartition[p], i)
			delete(ps, p)
			copyOf(i).remove(id, p)
		}
	}
	// revokeOversharedPartitions
	for _, p := range slices.Sorted(maps.Keys(byPartition)) {
		members := byPartition[p]
		count := len(members)
		if count <= sharing {
			continue
		}
		for _, i := range members.sorted() {
			na := copyOf(i)
			if _, ok := na[id]; ok && na.remove(id, p) {
				count--
				delete(members, i)
				delete(byMember[i], p)
			}
			if count <= sharing {
				break
			}
		}
	}
	for _, p := range targets {
		if byPartition[p] == nil {
			byPartition[p] = intSet{}
		}
	}
	// assignRemainingPartitions
	unfilled := intSet{}
	for _, i := range subscribers {
		if len(byMember[i]) < desired[i] {
			unfilled[i] = true
		}
	}
	it := &unfilledIter{vals: unfilled.sorted()}
	fillPartitions(it, slices.Sorted(maps.Keys(byPartition)), sharing, func(p int32) intSet {
		return byPartition[p]
	}, func(i int, p int32) bool {
		copyOf(i).add(id, p)
		if byMember[i] == nil {
			byMember[i] = map[int32]bool{}
		}
		byMember[i][p] = true
		return len(byMember[i]) >= desired[i]
	})
}
