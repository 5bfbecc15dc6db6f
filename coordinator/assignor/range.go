package assignor

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/coordinator/internal/same"
)

// Range is Kafka's server-side RangeAssignor (rewritten in KAFKA-16944):
// for each topic, its subscribers in a fixed member order take contiguous
// ranges, the first P%N of them one partition more. With equal partition counts
// the topics are co-partitioned.
//
// It is not sticky by design: the previous target assignment is not read. The
// only stability is the member order, which puts static members first, sorted
// by instance id, then dynamic members sorted by member id, so a static member
// that rejoins under a new member id gets the same ranges back.
type Range struct{ cfg config }

// NewRange returns the range assignor. Its behaviour is the same in every
// served version; the options are checked all the same.
func NewRange(opts ...Opt) (*Range, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Range{cfg: cfg}, nil
}

// Name implements Assignor.
func (*Range) Name() string { return RangeName }

// rangeTopic is RangeAssignor.TopicMetadata: a per-topic cursor.
type rangeTopic struct {
	id            TopicID
	numPartitions int
	numMembers    int
	minQuota      int // -1 until computed
	extra         int
	nextRange     int
}

// take hands the next member its range [start, end), as
// RangeAssignor.addPartitionsToAssignment; start == end means none.
func (t *rangeTopic) take() (start, end int) {
	if t.minQuota == -1 {
		t.minQuota = t.numPartitions / t.numMembers
		t.extra = t.numPartitions % t.numMembers
	}
	start, quota := t.nextRange, t.minQuota
	if t.extra > 0 {
		quota++
		t.extra--
	}
	end = min(start+quota, t.numPartitions)
	t.nextRange = end
	return start, end
}

// homogeneousRangeTopics are the cursors of a homogeneous group: first's
// topics, each with every one of the numMembers members as a subscriber.
func homogeneousRangeTopics(first *MemberSpec, numMembers int, topics SubscribedTopicDescriber) ([]*rangeTopic, error) {
	ts := make([]*rangeTopic, 0, len(first.Topics))
	for _, id := range first.Topics {
		n := topics.NumPartitions(id)
		if n == -1 {
			return nil, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, first.ID, id)
		}
		ts = append(ts, &rangeTopic{id: id, numPartitions: n, numMembers: numMembers, minQuota: -1})
	}
	return ts, nil
}

// rangeOut builds the members' assignments. A range is a slice of one array
// 0, 1, 2, … shared by all (capped, so appending to one copies it), as
// Kafka's RangeSet is a view of its bounds, and the members' topics are
// stretches of one array.
type rangeOut struct {
	iota   []int32
	all    []TopicPartitions
	bounds []int // member k's topics are all[bounds[k]:bounds[k+1]]
}

// newRangeOut prepares w's output of members members over topics, who are
// handed at most ranges ranges in all.
func newRangeOut(w *assignWork, topics []*rangeTopic, members, ranges int) *rangeOut {
	n, total := 0, 0
	for _, t := range topics {
		n = max(n, t.numPartitions)
		total += t.numPartitions
	}
	r := &w.ranges
	if len(r.iota) < n {
		r.iota = make([]int32, n)
		for i := range r.iota {
			r.iota[i] = int32(i)
		}
	}
	r.all = resized(r.all, min(ranges, total))[:0]
	r.bounds = append(resized(r.bounds, members+1)[:0], 0)
	return r
}

// member hands the next member its ranges of ts.
func (r *rangeOut) member(ts []*rangeTopic) {
	for _, t := range ts {
		if start, end := t.take(); start < end {
			r.all = append(r.all, TopicPartitions{Topic: t.id, Partitions: r.iota[start:end:end]})
		}
	}
	r.bounds = append(r.bounds, len(r.all))
}

// assignment is the k-th member's assignment.
func (r *rangeOut) assignment(k int) MemberAssignment {
	return r.all[r.bounds[k]:r.bounds[k+1]:r.bounds[k+1]]
}

// Assign implements Assignor (RangeAssignor.assign).
//
// Invariants it keeps:
//  1. Every member of the spec is in the output, with an empty assignment if
//     it gets nothing.
//  2. Per topic, its subscribers in range order hold consecutive ranges that
//     cover the topic: the first P%N get P/N+1 partitions, the rest P/N.
//  3. Homogeneous: the first member in range order speaks for all, and every
//     member counts as a subscriber of its topics, whatever it subscribed to.
//  4. The previous target assignment is never read.
func (r *Range) Assign(spec GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error) {
	w := &assignWork{}
	return validated(&spec, r.cfg.javaVersion, func() (GroupAssignment, error) { return assignRange(&spec, topics, w) })
}

// AssignInto implements IntoAssignor.
func (r *Range) AssignInto(spec GroupSpec, topics SubscribedTopicDescriber, into *GroupAssignment) error {
	if into.work == nil {
		into.work = &assignWork{}
	}
	res, err := validated(&spec, r.cfg.javaVersion, func() (GroupAssignment, error) { return assignRange(&spec, topics, into.work) })
	into.Members = res.Members
	return err
}

func assignRange(specp *GroupSpec, topics SubscribedTopicDescriber, w *assignWork) (GroupAssignment, error) {
	spec := *specp
	out := GroupAssignment{Members: w.output(len(spec.Members))}
	if len(spec.Members) == 0 {
		return out, nil
	}
	order := rangeMemberOrderIn(spec.Members, w)

	if spec.Subscription == Homogeneous {
		// Homogeneous: the first member in range order speaks for everyone, and
		// every member counts as a subscriber, as in assignHomogeneousGroup.
		ts, err := homogeneousRangeTopics(&spec.Members[order[0]], len(spec.Members), topics)
		if err != nil {
			return GroupAssignment{}, err
		}
		ro := newRangeOut(w, ts, len(order), len(order)*len(ts))
		for range order {
			ro.member(ts)
		}
		for k, i := range order {
			out.Members[spec.Members[i].ID] = ro.assignment(k)
		}
		return out, nil
	}

	// Heterogeneous: a topic's subscriber count is the members that list it;
	// members that subscribe to nothing still get an (empty) entry. A member
	// whose subscription is the one of the member before it (most often the
	// same slice) shares its resolved topics.
	index := newTopicIndex(8)
	resolved := make([][]*rangeTopic, len(spec.Members))
	var all []*rangeTopic
	prev := -1
	for _, i := range order {
		m := &spec.Members[i]
		if prev >= 0 && same.Slice(m.Topics, spec.Members[prev].Topics) {
			resolved[i] = resolved[prev]
		} else {
			ts := make([]*rangeTopic, 0, len(m.Topics))
			for _, id := range m.Topics {
				ti, ok := index.get(id)
				var t *rangeTopic
				if ok {
					t = all[ti]
				} else {
					n := topics.NumPartitions(id)
					if n == -1 {
						return GroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, m.ID, id)
					}
					t = &rangeTopic{id: id, numPartitions: n, minQuota: -1}
					index.add(id)
					all = append(all, t)
				}
				ts = append(ts, t)
			}
			resolved[i] = ts
		}
		prev = i
		for _, t := range resolved[i] {
			t.numMembers++
		}
	}
	ranges := 0
	for _, ts := range resolved {
		ranges += len(ts)
	}
	ro := newRangeOut(w, all, len(order), ranges)
	for _, i := range order {
		ro.member(resolved[i])
	}
	for k, i := range order {
		out.Members[spec.Members[i].ID] = ro.assignment(k)
	}
	return out, nil
}

// rangeMemberOrder is RangeAssignor.sortMemberIds: static members first by
// instance id, then the rest by member id, both by Java String.compareTo. The
// sort is stable like List.sort, so equal keys keep memberIds() order.
func rangeMemberOrder(members []MemberSpec) []int {
	return rangeMemberOrderIn(members, &assignWork{})
}

// rangeMemberOrderIn is rangeMemberOrder in w's memory.
func rangeMemberOrderIn(members []MemberSpec, w *assignWork) []int {
	// Static members' keys first, the others' after them.
	keys := resized(w.keys, len(members))
	static, ascii := 0, true
	for i := range members {
		if id := members[i].InstanceID; id != "" {
			keys[static] = rangeKey{id: id, index: int32(i)}
			static++
			ascii = ascii && isASCII(id)
		}
	}
	dynamic := static
	for i := range members {
		if members[i].InstanceID == "" {
			keys[dynamic] = rangeKey{id: members[i].ID, index: int32(i)}
			dynamic++
			ascii = ascii && isASCII(members[i].ID)
		}
	}
	w.keys = keys
	// The index breaks ties last, so the order is the stable one whatever
	// the sort; keys in order already are left as they are. With ASCII
	// keys only, Go's string order is Java's.
	compare := func(a, b rangeKey) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return int(a.index - b.index)
	}
	if !ascii {
		compare = func(a, b rangeKey) int {
			if c := javaStringCompare(a.id, b.id); c != 0 {
				return c
			}
			return int(a.index - b.index)
		}
	}
	order := resized(w.order, len(members))[:0]
	for _, part := range [][]rangeKey{keys[:static], keys[static:]} {
		if !slices.IsSortedFunc(part, compare) {
			if ascii {
				sortByPrefix(part)
			} else {
				slices.SortFunc(part, compare)
			}
		}
		for _, k := range part {
			order = append(order, int(k.index))
		}
	}
	w.order = order
	return order
}

type rangeKey struct {
	id    string // the instance id of a static member, else the member id
	index int32
	// head is the 8 bytes of id after the prefix all keys share, big
	// endian, zero-padded (sortByPrefix).
	head uint64
}

// sortByPrefix sorts keys by id (Go's string order), then index: by the 8
// bytes after the prefix all ids share first, a number compare, and by the
// whole ids only where those are equal. Member ids often share a prefix
// ("member-17", a client id and a UUID), which string compares would read
// again and again.
func sortByPrefix(keys []rangeKey) {
	if len(keys) == 0 {
		return
	}
	prefix := len(keys[0].id)
	for _, k := range keys[1:] {
		n := min(prefix, len(k.id))
		i := 0
		for i < n && k.id[i] == keys[0].id[i] {
			i++
		}
		prefix = i
	}
	short := len(keys) < 1<<31
	for i := range keys {
		var b [8]byte
		copy(b[:], keys[i].id[prefix:])
		keys[i].head = binary.BigEndian.Uint64(b[:])
		short = short && uint32(keys[i].head) == 0
	}
	if short {
		// The ids differ within 4 bytes after the prefix ("member-0" to
		// "member-9999"): sort numbers, each head with its key's place in
		// its low half, then put keys whose heads are equal (ids equal in
		// those bytes, which may still differ after them) in order.
		packed := make([]uint64, len(keys))
		for i, k := range keys {
			packed[i] = k.head | uint64(i)
		}
		slices.Sort(packed)
		sorted := make([]rangeKey, len(keys))
		for i, p := range packed {
			sorted[i] = keys[uint32(p)]
		}
		copy(keys, sorted)
		for i := 0; i < len(keys); {
			j := i + 1
			for j < len(keys) && keys[j].head == keys[i].head {
				j++
			}
			if j-i > 1 {
				slices.SortFunc(keys[i:j], compareRangeKeys)
			}
			i = j
		}
		return
	}
	slices.SortFunc(keys, func(a, b rangeKey) int {
		switch {
		case a.head < b.head:
			return -1
		case a.head > b.head:
			return 1
		}
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return int(a.index - b.index)
	})
}

// compareRangeKeys orders keys by id (Go's string order), then index.
func compareRangeKeys(a, b rangeKey) int {
	if c := strings.Compare(a.id, b.id); c != 0 {
		return c
	}
	return int(a.index - b.index)
}
