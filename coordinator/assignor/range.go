package assignor

import (
	"fmt"
	"slices"
	"strings"
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

// rangeOut builds the members' assignments. A range is a slice of one array
// 0, 1, 2, … shared by all (capped, so appending to one copies it), as
// Kafka's RangeSet is a view of its bounds, and the members' topics are
// stretches of one array.
type rangeOut struct {
	iota   []int32
	all    []TopicPartitions
	bounds []int // member k's topics are all[bounds[k]:bounds[k+1]]
}

// newRangeOut prepares the output of members members over topics, who are
// handed at most ranges ranges in all.
func newRangeOut(topics []*rangeTopic, members, ranges int) *rangeOut {
	n, total := 0, 0
	for _, t := range topics {
		n = max(n, t.numPartitions)
		total += t.numPartitions
	}
	iota := make([]int32, n)
	for i := range iota {
		iota[i] = int32(i)
	}
	return &rangeOut{
		iota:   iota,
		all:    make([]TopicPartitions, 0, min(ranges, total)),
		bounds: append(make([]int, 0, members+1), 0),
	}
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
	return validated(&spec, r.cfg.javaVersion, func() (GroupAssignment, error) { return assignRange(&spec, topics) })
}

// AssignInto implements IntoAssignor: Assign, the result in *into (range
// builds a new one: it is not the coordinator's default).
func (r *Range) AssignInto(spec GroupSpec, topics SubscribedTopicDescriber, into *GroupAssignment) error {
	res, err := r.Assign(spec, topics)
	into.Members = res.Members
	return err
}

func assignRange(specp *GroupSpec, topics SubscribedTopicDescriber) (GroupAssignment, error) {
	spec := *specp
	out := GroupAssignment{Members: make(map[string]MemberAssignment, len(spec.Members))}
	if len(spec.Members) == 0 {
		return out, nil
	}
	order := rangeMemberOrder(spec.Members)

	if spec.Subscription == Homogeneous {
		// Homogeneous: the first member in range order speaks for everyone, and
		// every member counts as a subscriber, as in assignHomogeneousGroup.
		first := &spec.Members[order[0]]
		ts := make([]*rangeTopic, 0, len(first.Topics))
		for _, id := range first.Topics {
			n := topics.NumPartitions(id)
			if n == -1 {
				return GroupAssignment{}, fmt.Errorf("%w: member %q is subscribed to topic %s, which does not exist", ErrPartitionAssignor, first.ID, id)
			}
			ts = append(ts, &rangeTopic{id: id, numPartitions: n, numMembers: len(spec.Members), minQuota: -1})
		}
		ro := newRangeOut(ts, len(order), len(order)*len(ts))
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
		if prev >= 0 && sameTopics(m.Topics, spec.Members[prev].Topics) {
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
	ro := newRangeOut(all, len(order), ranges)
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
	var static, dynamic []rangeKey
	ascii := true
	for i := range members {
		m := &members[i]
		if m.InstanceID != "" {
			static = append(static, rangeKey{m.InstanceID, int32(i)})
			ascii = ascii && isASCII(m.InstanceID)
		} else {
			if dynamic == nil {
				dynamic = make([]rangeKey, 0, len(members)-i)
			}
			dynamic = append(dynamic, rangeKey{m.ID, int32(i)})
			ascii = ascii && isASCII(m.ID)
		}
	}
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
	order := make([]int, 0, len(members))
	for _, keys := range [][]rangeKey{static, dynamic} {
		if !slices.IsSortedFunc(keys, compare) {
			slices.SortFunc(keys, compare)
		}
		for _, k := range keys {
			order = append(order, int(k.index))
		}
	}
	return order
}

type rangeKey struct {
	id    string // the instance id of a static member, else the member id
	index int32
}
